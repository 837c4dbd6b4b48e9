"""What the decoder and the scorer write to: streams are never replaced, links are written
through, the input is never its own output, one writer per output, a resume only continues the
run it would write again, and a progress record never counts bytes that are not on disk.

Every case but the unit tests at the end runs the real CLI on the session's tiny model. A CLI
start costs a TensorFlow import and a model load, so a refusal is checked through the tool's own
library call (decode_file, score_file) in this process, whose one-line UserError is what the CLI
prints as `error: ...` with exit status 1, unless it needs a process of its own (stdin, a pipe);
a resume refused for its settings shows the decoder's line too (the scorer's: test_scoring.py).
"""
import json
import os
import shlex
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time

import pytest

from t2t_lite import exit_status, file_lock
from t2t_lite.errors import UserError
from t2t_lite.inference import resume

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
LINES = [b"the house is small .", b"a cat sat on the mat", b"", b"we read books",
         b"the dog ran away", b"she said : no .", b"the cat", b"a small house"] * 3


def _command(tool, model_dir, *args):
    return [sys.executable, "-m", f"t2t_lite.bin.{tool}", f"--model_dir={model_dir}", *args]


def _run(model_dir, *args, tool="decoder", stdin=None, **kwargs):
    return subprocess.run(_command(tool, model_dir, *args), input=stdin, capture_output=True,
                          env=ENV, cwd=REPO, timeout=300, **kwargs)


def _run_with_stdin_file(model_dir, stdin, *args):
    return subprocess.run(_command("decoder", model_dir, *args), stdin=stdin,
                          capture_output=True, env=ENV, cwd=REPO, timeout=300)


def _error_line(result):
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR and "Traceback" not in stderr, stderr[-3000:]
    return stderr.strip().splitlines()[-1]


def _refused(call, **options):
    """The one-line UserError message of a tool's library call (_decode_file, _score_file),
    which the CLI prints as `error: <message>` with exit status 1."""
    with pytest.raises(UserError) as refused:
        call(**options)
    message = str(refused.value)
    assert "\n" not in message, message
    return message


def _decode_file(**options):
    from t2t_lite.file_decoding import DecodeOptions, decode_file

    return decode_file(DecodeOptions(**options))


def _score_file(**options):
    from t2t_lite.file_scoring import ScoreOptions, score_file

    return score_file(ScoreOptions(**options))


def _wait_for(predicate, process, what, seconds=120):
    deadline = time.monotonic() + seconds
    while not predicate():
        assert process.poll() is None, f"exited ({process.returncode}) before {what}"
        assert time.monotonic() < deadline, f"no {what} after {seconds} s"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("outputs") / "in.txt"
    path.write_bytes(b"\n".join(LINES) + b"\n")
    return path


@pytest.fixture(scope="module")
def expected(model_dir, source, tmp_path_factory):
    """The whole file's translation, one uninterrupted run into a regular file."""
    out = tmp_path_factory.mktemp("expected") / "out.txt"
    result = _run(model_dir, f"--decode_from_file={source}", f"--decode_to_file={out}",
                  "--chunk_lines=4")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return out.read_bytes()


@pytest.mark.slow
def test_a_fifo_is_written_as_a_stream_to_its_reader(model_dir, source, expected, tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = _run(model_dir, f"--decode_from_file={source}", f"--decode_to_file={fifo}",
                  "--chunk_lines=4")
    reader.join(timeout=60)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert received == [expected]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(os.listdir(tmp_path)) == ["fifo"]  # no progress record, no lock beside it


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root")
def test_a_character_device_stays_a_device(model_dir, source, tmp_path):
    null = tmp_path / "null"  # a private copy of /dev/null, never the system's
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    result = _run(model_dir, f"--decode_from_file={source}", f"--decode_to_file={null}")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert stat.S_ISCHR(os.lstat(null).st_mode) and os.listdir(tmp_path) == ["null"]


@pytest.mark.slow
def test_dev_stdout_is_the_stream_behind_it(model_dir, source, expected, tmp_path):
    """/dev/stdout is written through fd 1 itself, at the offset the shell shares: what the
    shell writes to the same descriptor next follows the translations."""
    out = tmp_path / "out.txt"
    decoder = shlex.join(_command("decoder", model_dir, f"--decode_from_file={source}",
                                  "--decode_to_file=/dev/stdout"))
    result = subprocess.run(["bash", "-c", f"({decoder}; echo DONE) > {shlex.quote(str(out))}"],
                            stderr=subprocess.PIPE, env=ENV, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert out.read_bytes() == expected + b"DONE\n"
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.slow
def test_a_symlink_is_written_through(model_dir, source, expected, tmp_path):
    (tmp_path / "elsewhere").mkdir()
    target = tmp_path / "elsewhere" / "real.txt"
    target.write_bytes(b"old\n")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    result = _run(model_dir, f"--decode_from_file={source}", f"--decode_to_file={link}",
                  "--chunk_lines=4")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == expected
    assert os.listdir(tmp_path / "elsewhere") == ["real.txt"]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["same name", "hard link", "symlink", "stdin"])
def test_the_input_is_never_its_own_output(model_dir, tmp_path, how):
    text = tmp_path / "text.txt"
    text.write_bytes(b"the house is small .\n")
    output = {"same name": text, "hard link": tmp_path / "hard.txt",
              "symlink": tmp_path / "soft.txt", "stdin": text}[how]
    if how == "hard link":
        os.link(text, output)
    elif how == "symlink":
        output.symlink_to(text)
    refusal = f"--decode_to_file {os.path.realpath(output)} is the input"
    if how == "stdin":  # the CLI's error line (stdin redirected from the file itself)
        with open(text, "rb") as stdin:
            result = _run_with_stdin_file(model_dir, stdin, f"--decode_to_file={output}")
        assert _error_line(result).startswith(f"error: {refusal}")
    else:  # refused before the model loads: the decoder's library call, in this process
        message = _refused(_decode_file, model_dir=model_dir, decode_from_file=str(text),
                           decode_to_file=str(output))
        assert message.startswith(refusal), message
    assert text.read_bytes() == b"the house is small .\n"
    assert sorted(os.listdir(tmp_path)) == sorted({"text.txt", output.name})


def _killed_file_run(model_dir, source, out):
    """A --decode_from_file run stopped for good after it recorded progress: (record, OUT)."""
    record = out.with_name(out.name + resume.PROGRESS_SUFFIX)
    process = subprocess.Popen(
        _command("decoder", model_dir, f"--decode_from_file={source}", f"--decode_to_file={out}",
                 "--chunk_lines=1", "--parallel_searches=1"),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV, cwd=REPO)
    _wait_for(record.exists, process, "progress record")
    process.send_signal(signal.SIGSTOP)  # whatever it did last, OUT and the record agree
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert record.exists() and out.exists()
    return record, out.read_bytes()


@pytest.fixture(scope="module")
def killed_run(model_dir, source, tmp_path_factory):
    """One _killed_file_run over `source` (--chunk_lines=1 --parallel_searches=1), shared by the
    tests that resume or refuse to: (the model it ran with, a copy of model_dir of this module's
    own, so a test may edit its configs.json and put it back; the folder holding OUT, its
    progress record and its lock as the kill left them)."""
    folder = tmp_path_factory.mktemp("killed")
    model, run = folder / "model", folder / "run"
    shutil.copytree(model_dir, model)
    run.mkdir()
    _killed_file_run(model, source, run / "out.txt")
    return model, run


def _copy_killed_run(killed_run, folder):
    """The killed run's files copied byte for byte into `folder` (a progress record names no
    output path: the copy resumes like the original): (model, record, OUT's bytes)."""
    model, run = killed_run
    for name in os.listdir(run):
        shutil.copyfile(run / name, folder / name)
    out = folder / "out.txt"
    return model, out.with_name(out.name + resume.PROGRESS_SUFFIX), out.read_bytes()


@pytest.mark.slow
def test_a_pipe_rerun_over_a_file_runs_record_keeps_the_output(source, expected, killed_run,
                                                               tmp_path):
    out = tmp_path / "out.txt"
    model, record, partial = _copy_killed_run(killed_run, tmp_path)
    result = _run(model, f"--decode_to_file={out}", stdin=source.read_bytes())  # a pipe
    line = _error_line(result)
    assert line.startswith(f"error: {record} records an unfinished run over {source}")
    assert "--start_over" in line
    assert out.read_bytes() == partial and record.exists()

    # The same file on stdin is provably the same input: the run resumes.
    with open(source, "rb") as stdin:
        result = _run_with_stdin_file(model, stdin, f"--decode_to_file={out}",
                                      "--chunk_lines=1", "--parallel_searches=1")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert "resuming after" in result.stderr.decode()
    assert out.read_bytes() == expected and not record.exists()


# Each setting that changes what is written, changed alone ("" edits the model's configs.json).
# Each setting changed alone, as DecodeOptions fields; None: the model's own configs edited.
CHANGED_ALONE = [("beam_size", {"beam_size": 2}), ("alpha", {"alpha": 0.9}),
                 ("extra_length", {"extra_length": 7}), ("nbest", {"nbest": 2}),
                 ("print_scores", {"print_scores": True}),
                 ("split_sentences", {"split_sentences": "off"}),
                 ("batch_tokens", {"batch_tokens": 64}), ("chunk_lines", {"chunk_lines": 2}),
                 ("decode_precision", {"decode_precision": "bfloat16"}),
                 ("num_shards", {"num_shards": 2}), ("settings_sha256", None)]


@pytest.mark.slow
def test_each_output_changing_setting_is_refused_and_parallel_searches_resumes(
        source, expected, killed_run, tmp_path):
    from t2t_lite.file_decoding import DecodeOptions, decode_file

    out = tmp_path / "out.txt"
    own_model, record, partial = _copy_killed_run(killed_run, tmp_path)
    configs = own_model / "configs.json"  # the killed run's own copy: edited, then put back
    original = configs.read_bytes()
    base = [f"--decode_from_file={source}", f"--decode_to_file={out}", "--chunk_lines=1",
            "--parallel_searches=1"]
    # The tool's one error line, once; every setting through the decoder's own library call.
    line = _error_line(_run(own_model, *base, "--beam_size=2"))
    assert line.startswith(f"error: {record} is from another run (") and "beam_size" in line, line
    try:
        for name, changed in CHANGED_ALONE:
            if changed is None:  # an edited decode setting in the model's own configs
                edited = json.loads(original)
                edited["decode"]["alpha"] = 0.9
                configs.write_text(json.dumps(edited))
            options = dict(model_dir=str(own_model), decode_from_file=str(source),
                           decode_to_file=str(out), chunk_lines=1, parallel_searches=1)
            with pytest.raises(UserError) as refused:
                decode_file(DecodeOptions(**{**options, **(changed or {})}))
            message = str(refused.value)
            assert message.startswith(f"{record} is from another run (") and name in message, \
                message
            assert out.read_bytes() == partial
    finally:
        configs.write_bytes(original)
    result = _run(own_model, *base[:-1], "--parallel_searches=2")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert "resuming after" in result.stderr.decode() and out.read_bytes() == expected


@pytest.mark.slow
def test_a_second_writer_refuses_and_a_finished_run_leaves_no_lock(model_dir, source,
                                                                    expected, tmp_path):
    out = tmp_path / "out.txt"
    lock = out.with_name(out.name + file_lock.LOCK_SUFFIX)
    first = subprocess.Popen(_command("decoder", model_dir, f"--decode_to_file={out}",
                                      "--chunk_lines=4", "--parallel_searches=1"),
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=ENV, cwd=REPO)
    _wait_for(lambda: lock.exists() and f'"pid": {first.pid}' in lock.read_text(), first,
              "the first decoder's lock")
    # Second writers, in this process (refused before their model loads): the decoder and the
    # scorer, each naming its own flag and the first run.
    holder = f"is being written by another run (pid {first.pid} on host {socket.gethostname()}"
    message = _refused(_decode_file, model_dir=model_dir, decode_from_file=str(source),
                       decode_to_file=str(out))
    assert message.startswith(f"--decode_to_file {out} {holder}"), message
    message = _refused(_score_file, model_dir=model_dir, source_file=str(source),
                       target_file=str(source), output_file=str(out))
    assert message.startswith(f"--output_file {out} {holder}"), message
    _, stderr = first.communicate(source.read_bytes(), timeout=300)  # a pipe: written afresh
    assert first.returncode == 0, stderr.decode()[-3000:]
    assert out.read_bytes() == expected and os.listdir(tmp_path) == ["out.txt"]


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


@pytest.mark.slow
def test_a_free_lock_is_taken_over_but_a_foreign_file_is_not(model_dir, source, expected,
                                                            tmp_path):
    out = tmp_path / "out.txt"
    lock = out.with_name(out.name + file_lock.LOCK_SUFFIX)

    lock.write_text("my notes\n")  # not a lock of ours: never touched
    assert _refused(_decode_file, model_dir=model_dir, decode_from_file=str(source),
                    decode_to_file=str(out)) == (
        f"{lock} exists and is not a t2t_lite lock; move it away to write "
        f"--decode_to_file {out}")
    assert lock.read_text() == "my notes\n" and not out.exists()

    # Nobody flocks it, on a local file system: its holder has ended, whatever host it names
    # (a pod's hostname changes on restart) and whatever pid. A lock file of NUL bytes (a power
    # cut before its record reached the disk) too. (The branch without flock, and a file system
    # whose flocks stay on one machine: tests/test_file_lock.py.) Each lock is beside an output
    # of its own, so the three runs go at once.
    holder = {"kind": "t2t_lite lock", "pid": 4242, "host": "another-machine", "started": "x"}
    runs = []
    for index, content in enumerate((json.dumps(holder),
                                     json.dumps(dict(holder, pid=_dead_pid(),
                                                     host=socket.gethostname())),
                                     "\0" * 80)):
        taken = tmp_path / f"taken{index}.txt"
        taken_lock = taken.with_name(taken.name + file_lock.LOCK_SUFFIX)
        taken_lock.write_text(content)
        runs.append((taken, taken_lock, subprocess.Popen(
            _command("decoder", model_dir, f"--decode_from_file={source}",
                     f"--decode_to_file={taken}", "--chunk_lines=4", "--parallel_searches=1"),
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, cwd=REPO)))
    for taken, taken_lock, process in runs:
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr.decode()[-3000:]
        assert f"taking over the lock {taken_lock}" in stderr.decode(), stderr.decode()[-3000:]
        assert taken.read_bytes() == expected and not taken_lock.exists()
    assert lock.read_text() == "my notes\n" and not out.exists()
    assert sorted(os.listdir(tmp_path)) == ["out.txt.lock", "taken0.txt", "taken1.txt",
                                            "taken2.txt"]


@pytest.mark.slow
def test_bom_and_overlong_lines(model_dir, source, expected, tmp_path):
    # The source behind a BOM translates to the plain source's translations, byte for byte.
    text = tmp_path / "bom.txt"
    text.write_bytes(b"\xef\xbb\xbf" + source.read_bytes())
    out = tmp_path / "out.txt"
    result = _run(model_dir, f"--decode_from_file={text}", f"--decode_to_file={out}",
                  "--chunk_lines=4", "--parallel_searches=1")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert "1 UTF-8 byte-order mark dropped" in result.stderr.decode()
    assert out.read_bytes() == expected

    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"a cat\nthe dog\n" + b"x" * (2 << 20) + b"\nmore\n")
    # Refused as its chunk is read (after the model loads): the decoder's library call, here.
    assert _refused(_decode_file, model_dir=model_dir, decode_from_file=str(huge),
                    decode_to_file=str(tmp_path / "o3")) == \
        f"--decode_from_file {huge}: line 3 is longer than 1,048,576 bytes; split or remove it"
    assert not (tmp_path / "o3").exists()
    assert sorted(os.listdir(tmp_path)) == ["bom.txt", "huge.txt", "out.txt"]


@pytest.mark.slow
def test_the_scorer_is_strict(model_dir, tmp_path):
    sources, targets = tmp_path / "src.txt", tmp_path / "tgt.txt"
    sources.write_text("the cat\nthe dog\nthe house\n")
    targets.write_text("die Katze\nder Hund\n")
    assert _refused(_score_file, model_dir=model_dir, source_file=str(sources),
                    target_file=str(targets)) == (
        f"--source_file {sources} has 3 lines but --target_file {targets} has 2: the files "
        "are not parallel; --pad_shorter scores the missing side as empty")
    result = _run(model_dir, f"--source_file={sources}", f"--target_file={targets}",
                  "--pad_shorter", tool="score")
    assert result.returncode == 0 and result.stdout.count(b"\n") == 3
    assert "1 with a missing side" in result.stderr.decode()

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the cat\tdie Katze\n-1.5\tthe dog\t-2.0\tder Hund\n")
    assert _refused(_score_file, model_dir=model_dir, pairs_file=str(pairs)) == \
        "line 2 of the pairs has 4 tab-separated columns, not 2 (source<TAB>target)"

    # A device that refuses every write: the error names the scorer's own flag.
    assert _refused(_score_file, model_dir=model_dir, source_file=str(sources),
                    target_file=str(sources), output_file="/dev/full") == \
        "--output_file /dev/full: cannot write (No space left on device)"


# Units: the order of writes to disk.

def test_a_chunk_is_on_disk_before_the_record_that_counts_it(tmp_path, monkeypatch):
    out = tmp_path / "out.txt"
    calls = []
    real_fsync = os.fsync

    def recording_fsync(descriptor):
        calls.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    with resume.open_output(str(out)) as output:
        output.begin({"input": {"path": "in"}})
        output.append(["one", "two"], offset=8)
        output.append(["three"], offset=14)
        output.finish()
    progress = str(out) + resume.PROGRESS_SUFFIX
    tmp = "{}" + ".incomplete"
    assert calls == [str(out) + file_lock.LOCK_SUFFIX,  # the lock's record, before anything
                     tmp.format(out), str(tmp_path),  # the first chunk, renamed into place
                     tmp.format(progress), str(tmp_path),  # the record that counts it
                     str(out),  # the second chunk, appended
                     tmp.format(progress), str(tmp_path)]  # then its record
    assert out.read_bytes() == b"one\ntwo\nthree\n"


def test_bytes_past_the_record_are_cut_off_on_resume(tmp_path):
    out = tmp_path / "out.txt"
    identity = {"input": {"path": "in"}}
    output = resume.open_output(str(out))
    output.begin(identity)
    output.append(["one", "two"], offset=8)
    output.close()  # killed: the next chunk reached OUT, its record did not
    with open(out, "ab") as f:
        f.write(b"three\n")
    with resume.open_output(str(out)) as output:
        output.begin(identity)
        assert (output.lines_done, output.offset) == (2, 8)
        assert out.read_bytes() == b"one\ntwo\n"
