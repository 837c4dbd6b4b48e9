"""One exit status per kind of failure (exit_status.py), the same table in
docs/troubleshooting.md, and every tool ending with it: the decoder's failed output write exits
120 as every failed write does, a closed pipe 141, a flag the tool lacks 2 in one line. The code
names statuses by their constants, never by a bare number."""
import ast
import os
import pathlib
import re
import subprocess
import sys

import pytest

from t2t_lite import exit_status, process_end
from t2t_lite.training import preemption

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The tool's own quiet start-up (cli.py): TensorFlow's lines would read as extra messages.
ENV = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
ENV["PYTHONPATH"] = str(ROOT)


def _page_table():
    text = (ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8")
    section = text.split("\n## Exit statuses\n", 1)[1].split("\n## ", 1)[0]
    return [int(match) for match in re.findall(r"^\| (\d+) \|", section, re.MULTILINE)]


def test_the_page_lists_every_status_once_in_the_tables_order():
    statuses = [status for status, _ in exit_status.TABLE]
    assert _page_table() == statuses
    assert len(set(statuses)) == len(statuses)
    assert process_end.WRITE_FAILED == exit_status.WRITE_FAILED
    assert sorted(preemption.EXIT_STATUS.values()) == [exit_status.INTERRUPTED,
                                                       exit_status.TERMINATED]


# The calls that end a process with a status, and where t2t_lite's code may spell one.
_ENDING = {"exit", "_exit", "end_now", "leave_now", "SystemExit"}


def _literal_statuses(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "attr", getattr(node.func, "id", None))
            if name in _ENDING and node.args:
                value = node.args[0]
                if (isinstance(value, ast.Constant) and isinstance(value.value, int)
                        and value.value != 0):
                    yield node.lineno, value.value


def test_the_code_ends_with_named_statuses_only():
    found = []
    for path in sorted((ROOT / "t2t_lite").rglob("*.py")):
        if path.name == "exit_status.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{path.relative_to(ROOT)}:{line}: {value}"
                  for line, value in _literal_statuses(tree)]
    assert not found, found


def _decoder(model_dir, tmp_path, *args, stdout=subprocess.PIPE):
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\na cat sat on the mat\n")
    return subprocess.run([sys.executable, "-m", "t2t_lite.bin.decoder", f"--model_dir={model_dir}",
                           f"--decode_from_file={source}", *args], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=ENV, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize("how", ["--decode_to_file", "stdout"])
def test_the_decoder_into_dev_full_exits_120_in_one_line(model_dir, tmp_path, how):
    if how == "stdout":
        with open("/dev/full", "w") as full:
            result = _decoder(model_dir, tmp_path, stdout=full)
    else:
        result = _decoder(model_dir, tmp_path, "--decode_to_file=/dev/full")
    assert result.returncode == exit_status.WRITE_FAILED, result.stderr[-2000:]
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "No space left on device" in errors[0], result.stderr
    assert "Traceback" not in result.stderr


def test_the_decoder_into_a_closed_pipe_exits_141_quietly(model_dir, tmp_path):
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = _decoder(model_dir, tmp_path, "--chunk_lines=1", stdout=write_end)
    finally:
        os.close(write_end)
    assert result.returncode == exit_status.PIPE_CLOSED, result.stderr[-2000:]
    assert "error:" not in result.stderr and "Traceback" not in result.stderr, result.stderr


@pytest.mark.parametrize("flag, message", [
    ("--no_such_flag=1", "error: Unknown command line flag 'no_such_flag' (see --helpshort)"),
    ("--beam_size=four", "error: flag --beam_size=four: invalid literal for int() with base 10: "
                         "'four' (see --helpshort)"),
])
def test_a_flag_the_tool_lacks_or_cannot_parse_exits_2_in_one_line(tmp_path, flag, message):
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.decoder", "--model_dir=M", flag],
                            capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=120)
    assert result.returncode == exit_status.USAGE
    assert result.stderr.strip().splitlines() == [message]


# Statuses that are not a t2t_lite tool's: lint-imports' own, the file-lock tests' helper
# scripts, a status a test tool returns to see it kept.
_NOT_OURS = {"test_layers_contract.py", "test_file_lock.py", "test_process_end.py:3"}
_BARE = re.compile(r"(?:\.returncode|\.finish\([^()]*\)|\.code|\.end\([^()]*\)) == ([1-9]\d*)\b"
                   r"(?![.\d])")


def test_the_tests_name_the_statuses_they_expect():
    found = []
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for status in _BARE.findall(line):
                if path.name not in _NOT_OURS and f"{path.name}:{status}" not in _NOT_OURS:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert not found, found
