"""t2t-lite-decoder --engine=ctranslate2: the CTranslate2 engine behind the decoder gives the
TensorFlow decoder's lines (on the trained model of tests/reverse_model.py),
converts a model_dir itself, runs int8, and refuses what is no CTranslate2 folder in one line."""
import sys

import numpy as np
import pytest

pytest.importorskip("ctranslate2")

from t2t_lite import exit_status  # noqa: E402
from t2t_lite.errors import UserError  # noqa: E402
from tests.export.test_ctranslate2_export import _sources, _text  # noqa: E402


def _decode(cli, tmp_path, name, *args):
    """Runs the decoder CLI on DECODER_LINES; returns its output lines."""
    source, output = tmp_path / f"{name}.in", tmp_path / f"{name}.out"
    source.write_bytes(b"".join(line + b"\n" for line in DECODER_LINES))
    result = cli("decoder", f"--decode_from_file={source}", f"--decode_to_file={output}", *args)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert "decoded 12 lines" in result.stderr.decode()
    return output.read_text(encoding="utf-8").split("\n")[:-1]


# Ten sources, an empty line and a line of bytes that are not UTF-8: one output line each.
DECODER_LINES = [_text(s).encode() for s in _sources(10, seed=5)] + [b"", b"s3 \xff s4"]


@pytest.mark.slow
def test_decoder_engine_ctranslate2_equals_the_tensorflow_decoder(trained_model_dir, ct2_dir,
                                                                  tmp_path, cli):
    expected = _decode(cli, tmp_path, "tf", f"--model_dir={trained_model_dir}", "--nbest=2",
                       "--print_scores")
    got = _decode(cli, tmp_path, "ct2", "--engine=ctranslate2", f"--export_dir={ct2_dir}",
                  "--nbest=2", "--print_scores")
    assert len(got) == len(DECODER_LINES) and got[10] == "" and expected[10] == ""
    for want, have in zip(expected[:10] + expected[11:], got[:10] + got[11:]):
        want, have = want.split("\t"), have.split("\t")
        assert have[1] == want[1]  # the best hypothesis, as text
        np.testing.assert_allclose(float(have[0]), float(want[0]), rtol=1e-2, atol=5e-3)
    assert sum(w.split("\t")[1] != "" for w in expected[:10]) >= 9  # real translations


@pytest.mark.slow
def test_decoder_engine_ctranslate2_converts_a_model_dir_and_runs_int8(trained_model_dir,
                                                                       tmp_path, cli):
    expected = _decode(cli, tmp_path, "tf", f"--model_dir={trained_model_dir}")
    got = _decode(cli, tmp_path, "int8", "--engine=ctranslate2", f"--model_dir={trained_model_dir}",
                  "--compute_type=int8", "--beam_size=2")
    assert len(got) == len(DECODER_LINES) and got[10] == ""
    # int8 weights round differently; a trained model still agrees on most lines.
    assert sum(w == g for w, g in zip(expected, got)) >= 8


@pytest.mark.slow
def test_decoder_engine_ctranslate2_refuses_other_folders_and_settings(tmp_path, cli):
    (tmp_path / "in.txt").write_text("s3 s4\n")
    not_ct2 = tmp_path / "savedmodel"
    not_ct2.mkdir()
    result = cli("decoder", "--engine=ctranslate2", f"--export_dir={not_ct2}",
                 f"--decode_from_file={tmp_path / 'in.txt'}")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1] == (
        f"error: {not_ct2} is not a CTranslate2 folder written by t2t-lite-exporter "
        "--format=ctranslate2 (model.bin and t2t_lite.json missing)")
    result = cli("decoder", f"--export_dir={not_ct2}", "--compute_type=int8",
                 f"--decode_from_file={tmp_path / 'in.txt'}")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1] == (
        "error: --compute_type applies to --engine=ctranslate2 only")


def test_decoder_engine_without_the_package_says_how_to_install_it(monkeypatch):
    from t2t_lite.inference import ctranslate2_engine

    monkeypatch.setitem(sys.modules, "ctranslate2", None)  # import now fails
    with pytest.raises(UserError) as error:
        ctranslate2_engine.CTranslate2Translator("/nonexistent")
    assert str(error.value) == ("--engine=ctranslate2 needs the ctranslate2 package: "
                                "pip install 't2t_lite[ctranslate2]'")
