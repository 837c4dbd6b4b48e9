"""file_decoding.decode_file on the session's tiny model_dir, in this process: one line out per
line in, and the same translations as the model's own serve()."""
import pytest

from t2t_lite.errors import UserError
from t2t_lite.file_decoding import DecodeOptions, decode_file
from t2t_lite.inference import translation_module

LINES = ["the house is small .", "", "a cat sat on the mat", "we read books"]


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_each_line_is_translated_as_serve_translates_it(model_dir, tmp_path):
    source, output = tmp_path / "in.txt", tmp_path / "out.txt"
    source.write_text("".join(line + "\n" for line in LINES), encoding="utf-8")
    options = DecodeOptions(model_dir=model_dir, decode_from_file=str(source),
                            decode_to_file=str(output), parallel_searches=1)
    stats = decode_file(options, progress=open(tmp_path / "progress.txt", "w"))
    assert (stats.lines, stats.empty) == (4, 1)
    written = output.read_text(encoding="utf-8").split("\n")
    assert len(written) == len(LINES) + 1 and written[-1] == ""
    model = translation_module.from_model_dir(model_dir)
    served = [t.decode() for t in model.serve([l for l in LINES if l])["outputs"].numpy()]
    assert [w for w, line in zip(written, LINES) if line] == served
    assert written[LINES.index("")] == ""


def test_settings_that_do_not_fit_are_refused_before_anything_is_read(model_dir, tmp_path):
    with pytest.raises(UserError, match="beam_size"):
        decode_file(DecodeOptions(model_dir=model_dir, beam_size=0,
                                  decode_from_file=str(tmp_path / "missing.txt")))


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_jsonl_records_every_line_and_agrees_with_the_text_output(model_dir, tmp_path):
    """--output_format=jsonl: one JSON record per input line, its translation the text
    output's, its hypotheses scored; its shards join into the whole file's records."""
    import json

    source = tmp_path / "in.txt"
    lines = LINES + ["Open %s now", "x " * 300]  # a protected span; a line past the limit
    source.write_text("".join(line + "\n" for line in lines), encoding="utf-8")

    def decode(name, **settings):
        output = tmp_path / name
        options = DecodeOptions(model_dir=model_dir, decode_from_file=str(source),
                                decode_to_file=str(output), parallel_searches=1, nbest=2,
                                **settings)
        decode_file(options, progress=open(tmp_path / "progress.txt", "w"))
        return output.read_text(encoding="utf-8").splitlines()

    text = decode("out.txt")
    rows = [json.loads(line) for line in decode("out.jsonl", output_format="jsonl")]
    assert len(rows) == len(lines)
    assert [r["source"] for r in rows] == [" ".join(line.split(" ")) for line in lines]
    assert ["\t".join(h["text"] for h in r["hypotheses"]) for r in rows] == text
    assert all(r["translation"] == (r["hypotheses"][0]["text"] if r["hypotheses"] else "")
               for r in rows)
    assert rows[1]["hypotheses"] == [] and rows[1]["translation"] == ""
    assert rows[-1]["truncated"] and not rows[0]["truncated"]
    assert all(len(r["hypotheses"]) == 2 for r in rows if r["source"].strip())
    assert {r["constraints_met"] for r in rows} == {None}
    assert set(rows[0]) == {"source", "translation", "hypotheses", "truncated", "sentences",
                            "spans_repaired", "constraints_met"}
    shards = [decode(f"shard{k}.jsonl", output_format="jsonl", num_shards=2, shard_index=k)
              for k in range(2)]
    assert shards[0] and shards[1]

    def texts(row):  # scores move in their last digits with a batch's make-up
        return dict(row, hypotheses=[h["text"] for h in row["hypotheses"]])

    assert [texts(json.loads(line)) for line in shards[0] + shards[1]] == [texts(r) for r in rows]
    from t2t_lite.file_decoding import OUTPUT_SETTINGS

    assert "output_format" in OUTPUT_SETTINGS  # an unfinished run resumes in its own format
