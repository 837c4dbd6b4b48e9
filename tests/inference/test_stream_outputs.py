"""Streams the decoder and the scorer write: through the descriptor the shell gave, so what the
shell writes next follows every byte; to the last byte however few a pipe takes at once; never
into their own input; and a closed stdout is one line.

The CLI cases run the real tools through bash on the session's tiny model; the units at the end
call resume.open_output on descriptors, pipes and FIFOs of this process.
"""
import os
import re
import shlex
import signal
import subprocess
import sys
import threading

import pytest

from t2t_lite import exit_status
from t2t_lite.errors import UserError
from t2t_lite.inference import resume

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
LINES = b"the house is small .\na cat sat on the mat\n\nwe read books\nthe dog ran away\n" * 2


def _tool(tool, model_dir, *args):
    """The shell words that run t2t-lite-<tool> on `model_dir`."""
    return shlex.join([sys.executable, "-m", f"t2t_lite.bin.{tool}", f"--model_dir={model_dir}",
                       *map(str, args)])


def _bash(script, tmp_path):
    return subprocess.run(["bash", "-c", script], capture_output=True, env=ENV, cwd=tmp_path,
                          timeout=300)


def _ok(result):
    assert result.returncode == 0, result.stderr.decode()[-3000:]


def _error_line(result):
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR and "Traceback" not in stderr, stderr[-3000:]
    return stderr.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("streams") / "in.txt"
    path.write_bytes(LINES)
    return path


@pytest.fixture(scope="module")
def expected(model_dir, source):
    """The decoder's and the scorer's outputs for `source`, each written to a regular file."""
    folder = source.parent
    _ok(_bash(f"{_tool('decoder', model_dir, f'--decode_from_file={source}')} > decoded.txt && "
              f"{_tool('score', model_dir, f'--source_file={source}', f'--target_file={source}')}"
              " > scored.txt", folder))
    return {"decoder": (folder / "decoded.txt").read_bytes(),
            "score": (folder / "scored.txt").read_bytes()}


# (the output flag's value or None for stdout, the shell around "{tool}"): each is followed by
# more output to the same descriptor, pipe or FIFO.
SHELLS = {
    "stdout to a file": (None, "({tool}; echo DONE) > out.txt"),
    "/dev/fd/3 to a file": ("/dev/fd/3", "({tool}; echo DONE >&3) 3> out.txt"),
    "a link to /dev/stdout": ("link", "ln -s /dev/stdout link && ({tool}; echo DONE) > out.txt"),
    "/dev/stdout to a pipe": ("/dev/stdout", "({tool}; echo DONE) | cat > out.txt"),
    "stdout to a FIFO": (None, "mkfifo f && { cat f > out.txt & ({tool}; echo DONE) > f; wait; }"),
    "/dev/stdout to a FIFO": ("/dev/stdout",
                              "mkfifo f && { cat f > out.txt & ({tool}; echo DONE) > f; wait; }"),
}


@pytest.mark.slow
@pytest.mark.parametrize("shell", sorted(SHELLS))
def test_the_shell_output_that_follows_the_decoder_follows_it(model_dir, source, expected,
                                                               tmp_path, shell):
    output, script = SHELLS[shell]
    args = [f"--decode_from_file={source}"] + ([f"--decode_to_file={output}"] if output else [])
    _ok(_bash(script.replace("{tool}", _tool("decoder", model_dir, *args)), tmp_path))
    assert (tmp_path / "out.txt").read_bytes() == expected["decoder"] + b"DONE\n"


@pytest.mark.slow
def test_the_scorer_writes_dev_stdout_through_the_shells_descriptor(model_dir, source, expected,
                                                                    tmp_path):
    scorer = _tool("score", model_dir, f"--source_file={source}", f"--target_file={source}",
                   "--output_file=/dev/stdout")
    _ok(_bash(f"({scorer}; echo DONE) > out.txt", tmp_path))
    assert (tmp_path / "out.txt").read_bytes() == expected["score"] + b"DONE\n"


@pytest.mark.slow
@pytest.mark.parametrize("output", [None, "/dev/stdout"])
def test_progress_and_translations_share_one_log(model_dir, source, expected, tmp_path, output):
    args = [f"--decode_from_file={source}", "--chunk_lines=2"]
    args += [f"--decode_to_file={output}"] if output else []
    _ok(_bash(f"{_tool('decoder', model_dir, *args)} > log.txt 2>&1", tmp_path))
    log = (tmp_path / "log.txt").read_bytes().splitlines(keepends=True)
    translations = expected["decoder"].splitlines(keepends=True)
    rest, found = [], 0  # the translations, in order, and whatever else stderr wrote
    for line in log:
        if found < len(translations) and line == translations[found]:
            found += 1
        else:
            rest.append(line.decode())
    assert found == len(translations), log
    assert any(re.fullmatch(r"decoded 10/10 lines \(.*\)\n", line) for line in rest), rest
    assert all(line.endswith("\n") and "\0" not in line for line in rest), rest


# (what the shell does, the error line's start): each output is the input itself.
INPUT_AS_OUTPUT = {
    "/dev/stdout >> in": ("{decoder} --decode_from_file=in.txt --decode_to_file=/dev/stdout "
                          ">> in.txt", "--decode_to_file /dev/stdout is the input "
                                       "--decode_from_file in.txt"),
    "stdout >> in": ("{decoder} --decode_from_file=in.txt >> in.txt",
                     "stdout is the input --decode_from_file in.txt"),
    "stdin and stdout": ("{decoder} < in.txt >> in.txt", "stdout is the input stdin {folder}"),
    "scorer stdout >> target": ("{score} --source_file=src.txt --target_file=in.txt >> in.txt",
                                "stdout is the input --target_file in.txt"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(INPUT_AS_OUTPUT))
def test_a_stream_that_is_the_input_is_refused(model_dir, tmp_path, case):
    (tmp_path / "in.txt").write_bytes(LINES)
    (tmp_path / "src.txt").write_bytes(LINES)
    script, start = INPUT_AS_OUTPUT[case]
    line = _error_line(_bash(script.format(decoder=_tool("decoder", model_dir),
                                           score=_tool("score", model_dir)), tmp_path))
    start = start.format(folder=os.path.realpath(tmp_path))
    assert line.startswith(f"error: {start}"), line
    assert line.endswith("writing it would destroy what is being read; write the output to "
                         "another file")
    assert (tmp_path / "in.txt").read_bytes() == LINES
    assert sorted(os.listdir(tmp_path)) == ["in.txt", "src.txt"]


@pytest.mark.slow
@pytest.mark.parametrize("tool, output, line", [
    ("decoder", None, "error: stdout is closed; name an output file with --decode_to_file"),
    ("score", None, "error: stdout is closed; name an output file with --output_file"),
    ("decoder", "/dev/stdout", "error: --decode_to_file /dev/stdout: descriptor 1 is not open"),
    ("decoder", "/dev/fd/7", "error: --decode_to_file /dev/fd/7: descriptor 7 is not open"),
])
def test_a_closed_output_descriptor_is_one_line(model_dir, source, tmp_path, tool, output, line):
    if tool == "decoder":
        args = [f"--decode_from_file={source}"] + ([f"--decode_to_file={output}"] if output
                                                   else [])
    else:
        args = [f"--source_file={source}", f"--target_file={source}"]
    result = _bash(f"{_tool(tool, model_dir, *args)} >&- 7>&-", tmp_path)
    assert _error_line(result) == line
    assert os.listdir(tmp_path) == []


# Units: the descriptor itself, every byte of a chunk, whatever each write() takes.

@pytest.mark.parametrize("alias", ["/dev/fd/{}", "/proc/self/fd/{}", "/proc/thread-self/fd/{}",
                                   "/proc/{pid}/fd/{}", "link"])
def test_every_alias_writes_at_the_descriptors_own_offset(tmp_path, alias):
    out = tmp_path / "out.txt"
    descriptor = os.open(out, os.O_WRONLY | os.O_CREAT)  # not appending: the offset decides
    os.set_inheritable(descriptor, True)
    os.write(descriptor, b"before\n")
    path = alias.format(descriptor, pid=os.getpid())
    if alias == "link":
        path = tmp_path / "link"
        path.symlink_to(f"/dev/fd/{descriptor}")
    with resume.open_output(str(path)) as output:
        output.append(["one", "two"])
        output.finish()
    os.write(descriptor, b"after\n")
    os.close(descriptor)
    assert out.read_bytes() == b"before\none\ntwo\nafter\n"


def _given(descriptor):
    """`descriptor` as a shell would give it: inheritable, named by /dev/fd/N."""
    os.set_inheritable(descriptor, True)
    return f"/dev/fd/{descriptor}"


def _read_all(descriptor, received, block=1 << 16):
    with open(descriptor, "rb", buffering=0) as reader:
        while data := reader.read(block):
            received.append(data)


def _through_a_pipe(lines, path_of=_given, block=1 << 16):
    """Appends `lines` to open_output(/dev/fd/W) of a pipe read by a thread: the bytes read."""
    read, write = os.pipe()
    received = []
    reader = threading.Thread(target=_read_all, args=(read, received, block))
    reader.start()
    try:
        with resume.open_output(path_of(write)) as output:
            output.append(lines)
            output.finish()
    finally:
        os.close(write)
        reader.join(timeout=60)
    assert not reader.is_alive()
    return b"".join(received)


LONG = [f"line {i} " + "x" * (i % 97) for i in range(20000)]  # about 1.2 MB


def test_short_writes_are_continued(monkeypatch):
    real_write, takes = os.write, []

    def short_write(descriptor, data):  # a pipe that takes at most 1,000 bytes a call
        takes.append(real_write(descriptor, data[:1000]))
        return takes[-1]

    monkeypatch.setattr(os, "write", short_write)
    assert _through_a_pipe(LONG) == "".join(line + "\n" for line in LONG).encode()
    assert len(takes) > 1000


def test_writes_interrupted_by_a_signal_lose_nothing():
    """A slow reader and a signal handler that runs every millisecond: write() returns after
    part of what it was given, as it does for the issue's 8 MB."""
    data = [("y" * 999) for _ in range(8000)]
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        received = _through_a_pipe(data, block=4096)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert received == ("y" * 999 + "\n").encode() * 8000


def test_a_non_blocking_descriptor_waits_for_room():
    def non_blocking(descriptor):
        os.set_blocking(descriptor, False)
        return _given(descriptor)

    assert _through_a_pipe(LONG, non_blocking) == "".join(line + "\n" for line in LONG).encode()


def test_a_fifo_path_gets_every_byte(tmp_path, monkeypatch):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    real_write = os.write
    monkeypatch.setattr(os, "write", lambda descriptor, data: real_write(descriptor, data[:7]))
    with resume.open_output(str(fifo)) as output:
        output.append(LONG[:500])
    reader.join(timeout=60)
    assert received == ["".join(line + "\n" for line in LONG[:500]).encode()]


def test_a_closed_pipe_is_left_to_the_tool_and_unusable_descriptors_are_one_line(tmp_path):
    read, write = os.pipe()
    os.close(read)
    with resume.open_output(_given(write)) as output:
        with pytest.raises(BrokenPipeError):  # the tool ends quietly, exit_status.PIPE_CLOSED
            output.append(["a line"])
    os.close(write)

    own = os.open(tmp_path / "own.txt", os.O_WRONLY | os.O_CREAT)  # close-on-exec: not given
    with pytest.raises(UserError, match=rf"^--output_file /dev/fd/{own}: descriptor {own} is "
                                        "not open$"):
        resume.open_output(f"/dev/fd/{own}", flag="--output_file")
    os.close(own)

    reading = os.open(tmp_path / "own.txt", os.O_RDONLY)
    with pytest.raises(UserError, match=r"descriptor \d+ is open for reading only$"):
        resume.open_output(_given(reading))
    os.close(reading)


def test_a_descriptor_onto_the_input_is_refused_and_closed(tmp_path):
    text = tmp_path / "in.txt"
    text.write_bytes(b"keep me\n")
    appending = os.open(text, os.O_WRONLY | os.O_APPEND)
    before = set(os.listdir("/proc/self/fd"))
    with pytest.raises(UserError, match=rf"^--decode_to_file /dev/fd/{appending} is the input "
                                        rf"--decode_from_file {text}: "):
        resume.open_output(_given(appending),
                           inputs=[(f"--decode_from_file {text}", os.stat(text))])
    assert set(os.listdir("/proc/self/fd")) == before  # the duplicate is closed again
    os.close(appending)
    assert text.read_bytes() == b"keep me\n"
