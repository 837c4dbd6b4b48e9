"""A failed write is a failed run: a tool whose output cannot be written (a full disk, /dev/full,
a pipe whose reader has gone) says so in one `error:` line (a closed pipe may stay quiet) and
never exits 0 (120, as Python does when its final flush fails)."""
import os
import pathlib
import subprocess
import sys

import pytest

from t2t_lite import exit_status, process_end
from tests import full_disk

ROOT = pathlib.Path(__file__).resolve().parent.parent

# A tool on cli.run: prints SIZE characters, then returns STATUS.
PRINTING_TOOL = '''
import sys
from t2t_lite import cli

SIZE, STATUS = int(sys.argv.pop(1)), int(sys.argv.pop(1))

def main(argv):
    print("x" * SIZE)
    return STATUS

cli.run(main)
'''


def run_tool(tmp_path, stdout, size=100, status=0, buffered=True):
    script = tmp_path / "printing_tool.py"
    script.write_text(PRINTING_TOOL)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    if not buffered:
        env["PYTHONUNBUFFERED"] = "1"
    return subprocess.run([sys.executable, str(script), str(size), str(status)], stdout=stdout,
                          stderr=subprocess.PIPE, text=True, env=env, timeout=120)


def one_error_line(stderr):
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "No space left on device" in lines[0], stderr
    return lines[0]


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
@pytest.mark.parametrize("size", [100, 100_000], ids=["final_flush", "during_the_run"])
def test_writing_to_dev_full_is_one_line_and_status_120(tmp_path, buffered, size):
    with open("/dev/full", "w") as full:
        result = run_tool(tmp_path, full, size=size, buffered=buffered)
    assert result.returncode == exit_status.WRITE_FAILED
    one_error_line(result.stderr)


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_full_disk_under_the_output_is_one_line_and_status_120(tmp_path, buffered):
    with full_disk.full() as folder:
        with open(os.path.join(folder, "out.txt"), "w") as out:
            result = run_tool(tmp_path, out, buffered=buffered)
        assert os.path.getsize(os.path.join(folder, "out.txt")) == 0
    assert result.returncode == exit_status.WRITE_FAILED
    one_error_line(result.stderr)


def test_a_tools_own_failure_status_is_kept_when_the_flush_fails_too(tmp_path):
    with open("/dev/full", "w") as full:
        result = run_tool(tmp_path, full, status=3)
    assert result.returncode == 3
    one_error_line(result.stderr)


@pytest.mark.parametrize("buffered", [True, False], ids=["buffered", "unbuffered"])
def test_a_pipe_whose_reader_has_gone_never_returns_0(tmp_path, buffered):
    read_end, write_end = os.pipe()
    os.close(read_end)  # before the tool writes anything
    try:
        result = run_tool(tmp_path, write_end, buffered=buffered)
    finally:
        os.close(write_end)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


def test_the_output_written_is_still_exit_0(tmp_path):
    result = run_tool(tmp_path, subprocess.PIPE)
    assert result.returncode == 0 and result.stdout == "x" * 100 + "\n", result.stderr


def test_an_oserror_that_is_not_a_failed_write_keeps_its_traceback():
    assert not process_end.is_write_failure(FileNotFoundError(2, "No such file", "x"))
    assert process_end.is_write_failure(OSError(28, "No space left on device"))
    assert process_end.describe(OSError(28, "No space left on device", "a/b")) == (
        "cannot write a/b: No space left on device")


def test_tensorflows_failed_writes_are_said_in_one_line_naming_the_file():
    import tensorflow as tf

    save = tf.errors.ResourceExhaustedError(None, None, (
        "{{function_node __wrapped__SaveV2_dtypes_187_device_/job:localhost/replica:0/task:0/"
        "device:CPU:0}} /m/best/ckpt-4_temp/part-00000-of-00001.data-00000-of-00001.tempstate41"
        "16130784474782247; No space left on device [Op:SaveV2]"))
    assert process_end.describe(save) == "cannot write /m/best/ckpt-4: No space left on device"
    events = tf.errors.ResourceExhaustedError(None, None, (
        "{{function_node __wrapped__WriteSummary_device_/job:localhost/replica:0/task:0/device:"
        "CPU:0}} /m/train/events.out.tfevents.1796461331.vm.13505.0.v2; No space left on device"))
    assert process_end.describe(events) == (
        "cannot write /m/train/events.out.tfevents.1796461331.vm.13505.0.v2: No space left on "
        "device")
    assert process_end.write_failure_reason(tf.errors.InvalidArgumentError(None, None, "x")) is None


@pytest.mark.slow
def test_bleu_to_dev_full_exits_120_with_one_line(tmp_path):
    """The issue's case: t2t-lite-bleu's report to a device that takes nothing."""
    text = tmp_path / "t.txt"
    text.write_text("a b c\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    env.pop("PYTHONUNBUFFERED", None)
    with open("/dev/full", "w") as full:
        result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.bleu", f"--translation={text}",
                                 f"--reference={text}"], stdout=full, stderr=subprocess.PIPE,
                                text=True, env=env, timeout=300)
    assert result.returncode == exit_status.WRITE_FAILED
    one_error_line(result.stderr)
