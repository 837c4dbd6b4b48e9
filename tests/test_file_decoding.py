"""file_decoding.decode_file on the session's tiny model_dir, in this process: one line out per
line in, and the same translations as the model's own serve()."""
import pytest

from t2t_lite.errors import UserError
from t2t_lite.file_decoding import DecodeOptions, decode_file
from t2t_lite.inference import translation_module

LINES = ["the house is small .", "", "a cat sat on the mat", "we read books"]


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
