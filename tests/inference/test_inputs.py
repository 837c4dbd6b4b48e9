"""What the decoder and the scorer read: a file is recognised on resume by its real path (a link
to it and stdin redirected from it are the same input); a FIFO, bash's `<(command)` and other
pipes or devices named as inputs are read as streams (no resume, said once; no shards); paths
that cannot be used, as inputs or outputs, end in one line, never a traceback.

The units call the real library (line_input, resume.open_output, the CTranslate2 engine); the
slow cases go through the real CLIs on the session's tiny model.
"""
import os
import shlex
import stat
import subprocess
import sys
import threading

import pytest

from t2t_lite.errors import UserError
from t2t_lite.inference import line_input, resume
from tests.inference.test_outputs import (  # noqa: F401 (fixtures)
    ENV, REPO, _command, _error_line, _killed_file_run, _run, expected, source)


def _feed(fifo, data):
    """A thread that writes `data` into the FIFO once a reader opens it, then closes it."""
    def write():
        with open(fifo, "wb") as f:
            f.write(data)
    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return writer


def _release(fifo, writer):
    """Ends a writer still waiting for a reader (the reader refused before opening the FIFO)."""
    if writer.is_alive():
        descriptor = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        writer.join(timeout=60)
        os.close(descriptor)
    assert not writer.is_alive()


# ---- units: the real library calls


def test_a_link_and_its_file_are_one_input(tmp_path):
    real = tmp_path / "real.txt"
    real.write_bytes(b"a\nb\n")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    identity = line_input.LineInput(path=str(link)).identity()
    assert identity == line_input.LineInput(path=str(real)).identity()
    assert identity["path"] == os.path.realpath(real)


def test_a_fifo_is_read_as_a_stream_and_says_once_that_it_cannot_resume(tmp_path, capsys):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = _feed(fifo, b"\xef\xbb\xbfone\ntwo\nthree")
    source = line_input.LineInput(path=str(fifo))
    assert source.path is None and source.total_lines is None and source.identity() is None
    assert [lines for lines, _ in source.chunks(2)] == [[b"one", b"two"], [b"three"]]
    writer.join(timeout=60)
    assert source.bom_stripped == 1 and source.stream.closed
    assert capsys.readouterr().err == (f"--decode_from_file {fifo}: a pipe or a device, read "
                                       "as a stream; a stopped run cannot resume\n")


def test_a_fifo_cannot_be_sharded_and_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: opening it would wait for ever
    with pytest.raises(UserError) as refused:
        line_input.open_input(str(fifo), num_shards=2, shard_index=0)
    assert str(refused.value) == (f"--num_shards needs a file: --decode_from_file {fifo} is a "
                                  "pipe or a device, which cannot be split")


def test_parallel_streams_are_compared_as_they_are_read(tmp_path, capsys):
    def streams(source, target):
        fifos = [tmp_path / "source", tmp_path / "target"]
        for fifo, data in zip(fifos, (source, target)):
            if fifo.exists():
                fifo.unlink()
            os.mkfifo(fifo)
            _feed(fifo, data)
        return [str(f) for f in fifos]

    pairs = line_input.ParallelInput(*streams(b"a\nb\nc\n", b"x\ny\nz\n"))
    assert pairs.total_lines is None and pairs.identity() is None
    assert [p for chunk, _ in pairs.chunks(2) for p in chunk] == [
        (b"a", b"x"), (b"b", b"y"), (b"c", b"z")]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.endswith("pipes or devices, read as a stream; a stopped "
                                                  "run cannot resume\n")

    short = line_input.ParallelInput(*streams(b"a\nb\nc\n", b"x\ny\n"))
    with pytest.raises(UserError) as refused:
        list(short.chunks(2))
    assert str(refused.value) == (
        f"--target_file {tmp_path / 'target'} ended after 2 lines but --source_file "
        f"{tmp_path / 'source'} has more: the inputs are not parallel; --pad_shorter scores "
        "the missing side as empty")

    padded = line_input.ParallelInput(*streams(b"a\n", b"x\ny\n"), pad_shorter=True)
    assert [p for chunk, _ in padded.chunks(1) for p in chunk] == [(b"a", b"x"), (None, b"y")]


def test_a_file_and_a_stream_are_compared_as_they_are_read(tmp_path):
    fifo, target = tmp_path / "source", tmp_path / "target"
    os.mkfifo(fifo)
    target.write_bytes(b"x\ny\n")
    _feed(fifo, b"a\nb\nc\n")
    pairs = line_input.ParallelInput(str(fifo), str(target))
    with pytest.raises(UserError, match=rf"^--target_file {target} ended after 2 lines but "):
        list(pairs.chunks(10))


def _one_line(call):
    with pytest.raises(UserError) as refused:
        call()
    return str(refused.value)


def test_input_paths_that_cannot_be_looked_up_are_one_line(tmp_path):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert _one_line(lambda: line_input.open_input(str(loop))) == (
        f"--decode_from_file {loop}: cannot read (Too many levels of symbolic links)")
    long_name = tmp_path / ("a" * 300)
    assert _one_line(lambda: line_input.open_input(str(long_name))) == (
        f"--decode_from_file {long_name}: cannot read (File name too long)")
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x\n")
    assert _one_line(lambda: line_input.open_input(str(not_a_folder / "in"))) == (
        f"--decode_from_file {not_a_folder / 'in'} does not exist or is not a file")
    assert _one_line(lambda: line_input.open_input(str(tmp_path))) == (
        f"--decode_from_file {tmp_path} does not exist or is not a file")


def test_output_paths_that_cannot_be_used_are_one_line(tmp_path):
    a_file = tmp_path / "file"
    a_file.write_text("x\n")
    assert _one_line(lambda: resume.open_output(str(a_file / "out"))) == (
        f"--decode_to_file {a_file / 'out'}: {a_file} is not a folder")
    assert _one_line(lambda: resume.open_output(str(a_file / "sub" / "out"))).startswith(
        f"--decode_to_file {a_file / 'sub' / 'out'}: cannot write in {a_file / 'sub'} (")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert _one_line(lambda: resume.open_output(str(loop))) == (
        f"--decode_to_file {loop}: cannot write (Too many levels of symbolic links)")
    long_name = tmp_path / ("a" * 300)
    assert _one_line(lambda: resume.open_output(str(long_name))) == (
        f"--decode_to_file {long_name}: cannot write (File name too long)")
    # A name that fits, but its progress record's would not.
    almost = tmp_path / ("b" * 250)
    assert _one_line(lambda: resume.open_output(str(almost), flag="--output_file")) == (
        f"--output_file {almost}: the name is too long for the files written beside it (they "
        f"add up to {len(resume.SIDECAR_SUFFIX)} characters to it, and {tmp_path} allows 255); "
        "use a shorter name")
    assert sorted(os.listdir(tmp_path)) == ["file", "loop"]  # nothing written, no lock left
    assert not resume.is_stream_path(str(loop)) and not resume.is_stream_path(str(long_name))


def test_a_ctranslate2_folder_whose_settings_are_not_an_object_is_one_line(tmp_path):
    pytest.importorskip("ctranslate2")
    from t2t_lite.inference import ctranslate2_engine

    (tmp_path / "model.bin").write_bytes(b"")
    (tmp_path / "t2t_lite.json").write_text("[]")
    assert _one_line(lambda: ctranslate2_engine.CTranslate2Translator(
        str(tmp_path), beam_size=4)) == (
        f"{tmp_path / 't2t_lite.json'} holds no t2t_lite settings (a JSON object)")


# ---- the real CLIs


@pytest.mark.slow
def test_stdin_from_a_link_resumes_a_run_over_the_link(model_dir, source, expected, tmp_path):
    """docs/decoding.md: stdin redirected from the file resumes the run, a link on the path
    included (both are the file's real path)."""
    link = tmp_path / "link.txt"
    link.symlink_to(source)
    out = tmp_path / "out.txt"
    record, _ = _killed_file_run(model_dir, link, out)
    with open(link, "rb") as stdin:
        result = subprocess.run(
            _command("decoder", model_dir, f"--decode_to_file={out}", "--chunk_lines=1",
                     "--parallel_searches=1"),
            stdin=stdin, capture_output=True, env=ENV, cwd=REPO, timeout=300)
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert "resuming after" in result.stderr.decode()
    assert out.read_bytes() == expected and not record.exists()


@pytest.mark.slow
def test_the_decoder_reads_a_fifo_and_refuses_to_shard_it(model_dir, source, expected,
                                                          tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)
    out = tmp_path / "out.txt"
    writer = _feed(fifo, source.read_bytes())
    result = _run(model_dir, f"--decode_from_file={fifo}", f"--decode_to_file={out}",
                  "--chunk_lines=4")
    _release(fifo, writer)
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert out.read_bytes() == expected
    assert stderr.count("a stopped run cannot resume") == 1
    assert sorted(os.listdir(tmp_path)) == ["in.fifo", "out.txt"]

    writer = _feed(fifo, source.read_bytes())
    result = _run(model_dir, f"--decode_from_file={fifo}", "--num_shards=2", "--shard_index=1")
    _release(fifo, writer)
    assert _error_line(result) == (f"error: --num_shards needs a file: --decode_from_file "
                                   f"{fifo} is a pipe or a device, which cannot be split")


PAIRS = [b"the house is small .\tdas Haus ist klein .", b"a cat sat on the mat\tdie Katze",
         b"\tleer", b"we read books\t", b"the dog ran away\tder Hund lief weg"]


@pytest.mark.slow
def test_the_scorer_reads_two_process_substitutions(model_dir, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_bytes(b"".join(p + b"\n" for p in PAIRS))
    from_file = _run(model_dir, f"--pairs_file={pairs}", tool="score")
    assert from_file.returncode == 0, from_file.stderr.decode()[-3000:]
    assert len(from_file.stdout.splitlines()) == len(PAIRS)

    def score(source, target, *args):
        command = shlex.join(_command("score", model_dir, *args))
        return subprocess.run(
            ["bash", "-c", f"{command} --source_file=<({source}) --target_file=<({target})"],
            capture_output=True, env=ENV, cwd=REPO, timeout=300)

    quoted = shlex.quote(str(pairs))
    result = score(f"cut -f1 {quoted}", f"cut -f2 {quoted}")
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert result.stdout == from_file.stdout
    assert stderr.count("a stopped run cannot resume") == 1 and "/dev/fd/" in stderr

    # One side ends first: one line, unless --pad_shorter.
    short = f"head -n 3 {quoted} | cut -f2"
    line = _error_line(score(f"cut -f1 {quoted}", short, "--chunk_lines=2"))
    assert line.startswith("error: --target_file /dev/fd/") and line.endswith(
        "ended after 3 lines but --source_file " + line.split("--source_file ")[1])
    assert "has more: the inputs are not parallel; --pad_shorter scores" in line
    padded = score(f"cut -f1 {quoted}", short, "--pad_shorter")
    assert padded.returncode == 0, padded.stderr.decode()[-3000:]
    assert len(padded.stdout.splitlines()) == len(PAIRS)
    assert "2 with a missing side" in padded.stderr.decode()


@pytest.mark.slow
@pytest.mark.parametrize("case", ["not a folder", "link loop", "300 characters", "input loop"])
def test_unusable_paths_end_the_decoder_in_one_line(model_dir, source, tmp_path, case):
    a_file = tmp_path / "file"
    a_file.write_text("x\n")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    long_name = tmp_path / ("a" * 300)
    output, message = {
        "not a folder": (a_file / "out", f"{a_file / 'out'}: {a_file} is not a folder"),
        "link loop": (loop, f"{loop}: cannot write (Too many levels of symbolic links)"),
        "300 characters": (long_name, f"{long_name}: cannot write (File name too long)"),
        "input loop": (None, None)}[case]
    if output is None:
        result = _run(model_dir, f"--decode_from_file={loop}")
        assert _error_line(result) == (f"error: --decode_from_file {loop}: cannot read (Too "
                                       "many levels of symbolic links)")
    else:
        result = _run(model_dir, f"--decode_from_file={source}", f"--decode_to_file={output}")
        assert _error_line(result) == f"error: --decode_to_file {message}"
    assert sorted(os.listdir(tmp_path)) == ["file", "loop"]


@pytest.mark.slow
def test_a_ctranslate2_folder_of_no_settings_with_a_beam_is_one_line(source, tmp_path):
    pytest.importorskip("ctranslate2")
    folder = tmp_path / "ct2"
    folder.mkdir()
    (folder / "model.bin").write_bytes(b"")
    (folder / "t2t_lite.json").write_text("[]")
    result = subprocess.run(
        [sys.executable, "-m", "t2t_lite.bin.decoder", "--engine=ctranslate2",
         f"--export_dir={folder}", "--beam_size=4", f"--decode_from_file={source}"],
        capture_output=True, env=ENV, cwd=REPO, timeout=300)
    assert _error_line(result) == (f"error: {folder / 't2t_lite.json'} holds no t2t_lite "
                                   "settings (a JSON object)")
    assert stat.S_ISDIR(os.stat(folder).st_mode) and sorted(os.listdir(folder)) == [
        "model.bin", "t2t_lite.json"]
