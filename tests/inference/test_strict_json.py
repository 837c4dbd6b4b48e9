"""Every JSON the tools write parses with a strict reader (no Infinity, no NaN), and beam
slots no hypothesis reached are not written as hypotheses, in JSON or in text."""
import json
import math

from t2t_lite import atomic
from t2t_lite.inference import records


def _reject(constant):
    raise ValueError(f"not JSON: {constant}")


def _strict(text):
    return json.loads(text, parse_constant=_reject)


# A search cut to no steps: only the first beam slot ends, the others score -inf.
CUT_SHORT = ["--nbest=4", "--beam_size=4", "--extra_length=-1000"]


def test_jsonl_records_and_the_summary_are_strict_json(cli, model_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\n\nwe read books every day\n")
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    result = cli("decoder", f"--model_dir={model_dir}", f"--decode_from_file={source}",
                 f"--decode_to_file={out}", f"--summary_file={summary}", "--output_format=jsonl",
                 *CUT_SHORT)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    lines = out.read_text().splitlines()
    assert len(lines) == 3
    parsed = [_strict(line) for line in lines]
    assert parsed[1]["hypotheses"] == []  # the blank line
    for record in (parsed[0], parsed[2]):
        assert 1 <= len(record["hypotheses"]) < 4, record
        assert all(math.isfinite(hyp["score"]) for hyp in record["hypotheses"])
        assert record["translation"] == record["hypotheses"][0]["text"]
    _strict(summary.read_text())


def test_text_mode_prints_no_inf(cli, model_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\nwe read books every day\n")
    result = cli("decoder", f"--model_dir={model_dir}", f"--decode_from_file={source}",
                 "--print_scores", *CUT_SHORT)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 2
    for line in lines:
        fields = line.split("\t")
        assert "inf" not in fields and "-inf" not in fields, line
        scores = fields[0::2]
        assert 1 <= len(scores) < 4 and all(math.isfinite(float(s)) for s in scores), line


def test_a_record_keeps_only_hypotheses_that_exist():
    record = records.Translation("a", [("x", -1.5), ("", float("-inf")), ("y", float("nan"))])
    assert record.hypotheses == [("x", -1.5)]
    assert _strict(records.line_writer("jsonl")(record))["hypotheses"] == [
        {"text": "x", "score": -1.5}]
    assert records.line_writer("text", print_scores=True)(record) == "-1.5\tx"


def test_written_json_files_hold_no_infinity(tmp_path):
    path = tmp_path / "x.json"
    atomic.write_json(str(path), {"rate": float("inf"), "values": [1.0, float("nan")], "n": 2})
    assert _strict(path.read_text()) == {"rate": None, "values": [1.0, None], "n": 2}


def test_a_dev_evaluation_that_is_no_number_is_strict_json_and_reads_as_the_worst(tmp_path):
    from t2t_lite.model_dir import dev_history

    dev_history.append(str(tmp_path), 10, {"loss": 2.0, "bleu": 3.5})
    dev_history.append(str(tmp_path), 20, {"loss": float("nan"), "bleu": 1.0,
                                           "perplexity": float("inf")})
    lines = (tmp_path / dev_history.HISTORY).read_text().splitlines()
    assert [_strict(line) for line in lines][1] == {"step": 20, "loss": None, "bleu": 1.0,
                                                    "perplexity": None}
    history = dev_history.read(str(tmp_path))
    assert history[20]["loss"] == history[20]["perplexity"] == float("inf")
    assert dev_history.is_better(history[10], history[20])
