"""t2t-lite-bleu end to end, in a subprocess as a user runs it."""
import subprocess
import sys

import pytest

from t2t_lite import exit_status

pytestmark = pytest.mark.slow  # every test here runs end to end


def run_bleu(*args):
    return subprocess.run([sys.executable, "-m", "t2t_lite.bin.bleu", *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def files(tmp_path):
    def write(name, text, **kwargs):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8", **kwargs)
        return str(path)
    return write


def test_prints_sacrebleu_with_signature_and_labelled_paper_bleu(files):
    text = "Die E-Mail-Adresse ist gut.\nDas Haus ist klein.\n"
    result = run_bleu(f"--translation={files('out.de', text)}",
                      f"--reference={files('ref.de', text)}")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("sacreBLEU BLEU = 100.00")
    assert "tok:13a" in lines[1]
    assert lines[2] == "sacreBLEU chrF2 = 100.00"
    assert "NOT comparable to sacreBLEU" in lines[4]
    assert lines[5].strip().startswith("BLEU = 100.00")


def test_windows_line_ends_and_missing_final_newline_still_align(files):
    result = run_bleu(f"--translation={files('out', 'a b c d' + chr(13) + chr(10) + 'e f', newline='')}",
                      f"--reference={files('ref', 'a b c d' + chr(10) + 'e f' + chr(10))}",
                      "--tokenize=none")
    assert result.returncode == 0, result.stderr
    assert "BLEU = 100.00" in result.stdout


@pytest.mark.parametrize("translation, reference, message", [
    ("a\nb\n", "a\n", "error: translation has 2 lines but reference has 1"),
    (None, "a\n", "error: translation file not found"),
    ("", "", "error: nothing to score"),
])
def test_user_errors_are_one_line_and_exit_1(files, tmp_path, translation, reference, message):
    out = files("out", translation) if translation is not None else str(tmp_path / "missing")
    result = run_bleu(f"--translation={out}", f"--reference={files('ref', reference)}")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert result.stderr.startswith(message)
    assert result.stdout == ""


def test_invalid_utf8_is_a_user_error(files, tmp_path):
    bad = tmp_path / "bad"
    bad.write_bytes(b"caf\xe9\n")
    result = run_bleu(f"--translation={bad}", f"--reference={files('ref', 'x' + chr(10))}")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.startswith("error: translation file is not UTF-8 text")


def test_bad_flag_value_exits_non_zero(files):
    result = run_bleu(f"--translation={files('o', 'a')}", f"--reference={files('r', 'a')}",
                      "--tokenize=ja-mecab")
    assert result.returncode != 0
    assert "tokenize" in result.stderr
