"""The tools' shared plumbing: TensorFlow's start-up noise hidden, real errors kept."""
import logging
import os
import pathlib
import subprocess
import sys

import pytest

from t2t_lite import cli, exit_status

ROOT = pathlib.Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("line, noise", [
    (b"I0000 00:00:1796056312.341546    6118 port.cc:153] oneDNN custom operations are on.", True),
    (b"E0000 00:00:1796056313.665487    6118 cuda_platform.cc:52] failed call to cuInit: "
     b"INTERNAL: CUDA error", True),
    (b"W0000 00:00:1796056313.665487    6118 cpu_allocator_impl.cc:83] Allocation exceeds", True),
    (b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
     True),
    (b"E0000 00:00:1796056313.665487    6118 op_kernel.cc:1830] OP_REQUIRES failed: Not found",
     False),
    (b"I1130 16:32:28.500767 140673080900480 pipeline.py:74] dropping 23 of 35195 examples",
     False),
    (b"error: no checkpoint in runs/x", False),
    (b"Traceback (most recent call last):", False),
])
def test_noise_filter(line, noise):
    assert cli.is_noise(line) is noise


@pytest.mark.slow
def test_a_tool_prints_no_tensorflow_start_up_noise_unless_asked():
    env = {k: v for k, v in os.environ.items()
           if k not in ("TF_CPP_MIN_LOG_LEVEL", "TF_ENABLE_ONEDNN_OPTS")}
    # A tool that loads TensorFlow and then meets a user mistake: one line, nothing else.
    command = [sys.executable, "-m", "t2t_lite.bin.datagen", "--problem=algorithmic_copy",
               "--data_dir=/nonexistent/data", "--problem_param=no_such_param=1"]
    quiet = subprocess.run(command, env=env, capture_output=True, text=True, cwd=ROOT)
    assert quiet.returncode == exit_status.USER_ERROR
    lines = quiet.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), quiet.stderr
    loud = subprocess.run(command + ["--verbosity=0"], env=env, capture_output=True, text=True,
                          cwd=ROOT)
    assert (loud.returncode == exit_status.USER_ERROR
            and "oneDNN" in loud.stderr)  # TF_ENABLE_ONEDNN_OPTS=1 was set


@pytest.mark.slow
def test_a_reader_that_goes_away_gets_no_traceback():
    """`t2t-lite-... | head` closes the pipe early: the tool stops without a traceback."""
    process = subprocess.Popen([sys.executable, "-m", "t2t_lite.bin.datagen", "--registry_help"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the tool writes anything
    stderr = process.stderr.read().decode()
    process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr, stderr


CRASHING_TOOL = '''
import logging
import os
from t2t_lite import cli

def main(argv):
    os.write(2, b"I0000 00:00:1796056312.341546    6118 port.cc:153] start-up noise\\n")
    os.write(2, b"F0000 00:00:1796056312.341546    6118 tensor.cc:1] Check failed: the cause\\n")
    os.abort()  # a native crash: no atexit, no flush

cli.run(main)
'''


@pytest.mark.slow
def test_a_native_crash_keeps_its_last_lines_and_the_filter_its_noise(tmp_path):
    script = tmp_path / "crashing_tool.py"
    script.write_text(CRASHING_TOOL)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                            cwd=ROOT, timeout=120)
    assert result.returncode != 0
    assert b"Check failed: the cause" in result.stderr
    assert b"start-up noise" not in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("tool, flag", [("avg_checkpoints", "--window"),
                                        ("trainer", "--problem")])
def test_an_installed_commands_help_describes_the_tool(tool, flag):
    """An installed command runs a wrapper script (as below); --help must still print the tool's
    docstring and its flags, the shared problem flags included, not just "USAGE: [flags]"."""
    wrapper = f"import sys; from t2t_lite.bin.{tool} import run; sys.exit(run())"
    out = subprocess.run([sys.executable, "-c", wrapper, "--help"], capture_output=True,
                         text=True, timeout=120, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    import ast
    import importlib.util

    # Read without importing: two tools' flags cannot live in one process.
    source = pathlib.Path(importlib.util.find_spec(f"t2t_lite.bin.{tool}").origin).read_text()
    first_line = ast.get_docstring(ast.parse(source)).splitlines()[0]
    assert first_line in out.stdout, out.stdout[:500]
    assert f"  {flag}:" in out.stdout, out.stdout[-2000:]


def test_info_lines_read_as_plain_messages_and_warnings_keep_their_prefix():
    from absl import logging as absl_logging

    formatter = cli.PlainInfoFormatter(absl_logging.PythonFormatter())

    def record(level, message):
        return logging.LogRecord("absl", level, "/x/pipeline.py", 81, message, ("23",), None)

    assert formatter.format(record(logging.INFO, "dropping %s examples")) == "dropping 23 examples"
    warning = formatter.format(record(logging.WARNING, "dropping %s examples"))
    assert warning.startswith("W") and warning.endswith("pipeline.py:81] dropping 23 examples")


EXITING_TOOL = '''
import atexit
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

from t2t_lite import cli

OUT = sys.argv.pop(1)
STATUS = sys.argv.pop(1)


def main(argv):
    started = threading.Event()

    def late_writer():  # a non-daemon thread still writing when main returns
        started.wait()
        with open(os.path.join(OUT, "thread.txt"), "w") as f:
            f.write("x" * 100000)

    threading.Thread(target=late_writer).start()
    ThreadPoolExecutor(1).submit(lambda: open(os.path.join(OUT, "pool.txt"), "w").write("pool"))
    atexit.register(lambda: open(os.path.join(OUT, "atexit.txt"), "w").write("ran"))
    print("printed without a newline", end="")
    started.set()
    if STATUS == "message":
        sys.exit("a message")
    return int(STATUS)


cli.run(main)
'''


@pytest.mark.parametrize("status, code", [("0", 0), ("3", 3), ("message", 1)])
def test_a_tool_ends_as_the_interpreter_would_without_its_teardown(tmp_path, status, code):
    """cli.run ends with os._exit once the work is done: threads and thread pools are still
    waited for, atexit functions run, stdout is flushed, and the exit status (or message) is
    the tool's."""
    script = tmp_path / "exiting_tool.py"
    script.write_text(EXITING_TOOL)
    result = subprocess.run([sys.executable, str(script), str(tmp_path), status],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == code, result.stderr
    assert result.stdout == "printed without a newline"
    assert (result.stderr.strip().splitlines() or [""])[-1] == (
        "a message" if status == "message" else "")
    assert (tmp_path / "thread.txt").read_text() == "x" * 100000
    assert (tmp_path / "pool.txt").read_text() == "pool"
    assert (tmp_path / "atexit.txt").read_text() == "ran"


# Runs a tool as its console script does, then writes whether TensorFlow was imported to the
# file in argv[1] at exit (cli.run's exit runs atexit functions before os._exit).
TOOL_WITH_IMPORTS_RECORDED = '''
import atexit, runpy, sys

record = sys.argv.pop(1)
atexit.register(lambda: open(record, "w").write(str("tensorflow" in sys.modules)))
module = sys.argv.pop(1)
sys.argv[0] = module
runpy.run_module(module, run_name="__main__")
'''


UNKNOWN_PROBLEM = "error: unknown problem 'nope'; known problems: algorithmic_copy, "
NOT_A_MODEL_DIR = "error: M is not a t2t_lite model_dir (no run.json); train into it"


@pytest.mark.parametrize("tool, args, message", [
    ("decoder", ["--model_dir=M", "--export_dir=E"], "give exactly one of --model_dir and"),
    ("decoder", ["--model_dir=M", "--beam_size=0"], "--beam_size must be >= 1"),
    ("decoder", ["--model_dir=M", "--decode_from_file=in.txt"], NOT_A_MODEL_DIR),
    ("decoder", ["--export_dir=E", "--decode_from_file=in.txt"], "error: no SavedModel in E "),
    ("decoder", ["--model_dir=M", "--decode_from_file=/no/such"],
     "error: --decode_from_file /no/such does not exist"),
    ("decoder", ["--model_dir=M", "--glossary=/no/such"], "error: --glossary /no/such does not"),
    ("score", ["--model_dir=M", "--source_file=/no/such/file", "--target_file=/no/such/file"],
     "--source_file /no/such/file does not exist"),
    ("score", ["--model_dir=M", "--pairs_file=in.txt"], NOT_A_MODEL_DIR),
    ("exporter", ["--model_dir=M", "--export_dir=E"], NOT_A_MODEL_DIR),
    ("exporter", ["--model_dir=M", "--export_dir=E", "--format=ctranslate2"], NOT_A_MODEL_DIR),
    ("avg_checkpoints", ["--model_dir=M", "--output_dir=O"], NOT_A_MODEL_DIR),
    ("attention_plot", ["--model_dir=M", "--source=x", "--output_dir=O"], NOT_A_MODEL_DIR),
    ("trainer", ["--problem=algorithmic_copy", "--data_dir=D", "--model_dir=M",
                 "--hparams_set=no_such_set"], "unknown hparams set"),
    ("trainer", ["--problem=algorithmic_copy", "--data_dir=D", "--model_dir=M",
                 "--gin_file=/no/such.gin"], "--gin_file /no/such.gin does not exist"),
    ("trainer", ["--problem=nope", "--data_dir=D", "--model_dir=M"], UNKNOWN_PROBLEM),
    ("datagen", ["--problem=nope", "--data_dir=D"], UNKNOWN_PROBLEM),
    ("trainer", ["--problem=algorithmic_copy", "--data_dir=D", "--model_dir=M",
                 "--problem_module=/missing.py"], "error: problem module file not found: /missing"),
    ("trainer", ["--problem=mine", "--data_dir=D", "--model_dir=M",
                 "--problem_module=no_such_package.problems"],
     "error: cannot import problem module 'no_such_package.problems': No module named"),
    ("trainer", ["--problem=algorithmic_copy", "--data_dir=D", "--model_dir=M",
                 "--problem_param=bogus"], "--problem_param must look like key=value, got 'bogus'"),
    ("datagen", ["--problem=algorithmic_copy", "--data_dir=D", "--problem_module=/missing.py"],
     "error: problem module file not found: /missing.py"),
    ("datagen", ["--problem=algorithmic_copy", "--data_dir=D", "--problem_param==x"],
     "--problem_param must look like key=value, got '=x'"),
    ("datagen", ["--problem=algorithmic_copy", "--data_dir=D", "--gin_file=/no/such.gin"],
     "error: --gin_file /no/such.gin does not exist"),
    ("table3", ["--problem=nope", "--data_dir=D", "--out_dir=O"], UNKNOWN_PROBLEM),
    ("demo", ["--problem=nope", "--run_dir=R"], UNKNOWN_PROBLEM),
    ("demo", ["--hparams_set=no_such_set", "--run_dir=R"], "error: unknown hparams set"),
    ("print_params", ["--vocab_size=0"], "error: --vocab_size: vocab_size = 0 is outside"),
])
def test_a_bad_flag_or_file_is_refused_before_tensorflow_loads(tmp_path, tool, args, message):
    """A user mistake the flags show costs the tool no TensorFlow start-up: one line, status 1,
    a fraction of a second, which keeps these checks (and their tests) cheap. Nothing is left
    behind (the demo's run folder, the outputs)."""
    (tmp_path / "in.txt").write_text("a line\n")
    record = tmp_path / "tensorflow_imported"
    result = subprocess.run([sys.executable, "-c", TOOL_WITH_IMPORTS_RECORDED, str(record),
                             f"t2t_lite.bin.{tool}", *args],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == exit_status.USER_ERROR, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], \
        result.stderr
    assert record.read_text() == "False"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "tensorflow_imported"]


@pytest.mark.parametrize("source", ["model_dir", "export_dir"])
def test_an_nbest_above_the_models_beam_is_refused_before_tensorflow_loads(
        tmp_path, model_dir, export_version_dir, source):
    """The beam an n-best must fit in is read from configs.json or the export's metadata."""
    from t2t_lite.model_dir import files

    beam_size = files.load_configs(model_dir)[2].beam_size
    flag = (f"--model_dir={model_dir}" if source == "model_dir"
            else f"--export_dir={os.path.dirname(export_version_dir)}")
    (tmp_path / "in.txt").write_text("a line\n")
    record = tmp_path / "tensorflow_imported"
    result = subprocess.run([sys.executable, "-c", TOOL_WITH_IMPORTS_RECORDED, str(record),
                             "t2t_lite.bin.decoder", flag, "--decode_from_file=in.txt",
                             f"--nbest={beam_size + 1}"],
                            capture_output=True, text=True, cwd=tmp_path, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == exit_status.USER_ERROR, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: --nbest must be between 1 and the beam size {beam_size}, got {beam_size + 1}"]
    assert record.read_text() == "False"
