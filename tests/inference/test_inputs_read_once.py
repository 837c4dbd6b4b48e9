"""The decoder reads its constraints file and its glossary once, at the start: from a FIFO or a
pipe they work as from a file (the run's digest for resuming is taken from the bytes read, not
by reading them again, which blocked on a FIFO whose writer had gone), and one that is the input
itself (stdin read twice) is refused in one line before anything is written."""
import os
import shlex
import subprocess
import sys

from t2t_lite import exit_status

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
ENV["PYTHONPATH"] = REPO
SOURCE = "the house is small .\n\nwe read books every day\n"
GLOSSARY = "house\tKatze\nbooks\tMatte\n"
CONSTRAINTS = "Hund\n\nweg\n"


def _decoder(model_dir, *args):
    return shlex.join([sys.executable, "-m", "t2t_lite.bin.decoder", f"--model_dir={model_dir}",
                       *args])


def _bash(script, folder, timeout=240):
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, env=ENV,
                          cwd=folder, timeout=timeout)


def _files(tmp_path):
    (tmp_path / "in.txt").write_text(SOURCE)
    (tmp_path / "terms.tsv").write_text(GLOSSARY)
    (tmp_path / "phrases.txt").write_text(CONSTRAINTS)


def test_a_glossary_and_constraints_on_fifos_give_what_files_give(model_dir, tmp_path):
    _files(tmp_path)
    from_files = _bash(_decoder(model_dir, "--decode_from_file=in.txt", "--glossary=terms.tsv",
                                "--constraints_file=phrases.txt", "--decode_to_file=files.out"),
                       tmp_path)
    assert from_files.returncode == 0, from_files.stderr[-2000:]
    fifos = _bash("mkfifo g c && { cat terms.tsv > g & cat phrases.txt > c & "
                  + _decoder(model_dir, "--decode_from_file=in.txt", "--glossary=g",
                             "--constraints_file=c", "--decode_to_file=fifos.out")
                  + "; }", tmp_path)
    assert fifos.returncode == 0, fifos.stderr[-2000:]
    assert (tmp_path / "fifos.out").read_bytes() == (tmp_path / "files.out").read_bytes()
    assert "1 glossary term applied" in fifos.stderr or "glossary terms applied" in fifos.stderr
    assert sorted(os.listdir(tmp_path)) == ["c", "fifos.out", "files.out", "g", "in.txt",
                                            "phrases.txt", "terms.tsv"]


def test_a_glossary_on_a_pipe_gives_what_a_file_gives(model_dir, tmp_path):
    _files(tmp_path)
    from_file = _bash(_decoder(model_dir, "--decode_from_file=in.txt", "--glossary=terms.tsv"),
                      tmp_path)
    piped = _bash(_decoder(model_dir, "--decode_from_file=in.txt", "--glossary=/dev/stdin")
                  + " < <(cat terms.tsv)", tmp_path)
    assert from_file.returncode == piped.returncode == 0, piped.stderr[-2000:]
    assert piped.stdout == from_file.stdout and "Katze" in piped.stdout


def test_a_glossary_that_is_the_input_on_stdin_is_refused_before_anything_is_written(
        model_dir, tmp_path):
    _files(tmp_path)
    result = _bash("cat in.txt | " + _decoder(model_dir, "--glossary=/dev/stdin",
                                             "--decode_to_file=out.txt"), tmp_path)
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        "error: --glossary /dev/stdin is also the input on stdin: one file cannot be read as "
        "both; give each its own file"]
    assert not (tmp_path / "out.txt").exists()
