"""The decoder at corpus scale: chunks, resume after kill -9, shards, pipes, bad input.

Every run goes through the real CLI on the session's random-weight model_dir (tests/conftest.py);
outputs are compared byte for byte with an uninterrupted whole-file run.
"""
import os
import random
import signal
import subprocess
import sys
import time

import pytest

from t2t_lite import exit_status
from t2t_lite.inference import line_input, resume

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")


def _words(seed, count):
    rng = random.Random(seed)
    words = "the house is small a cat sat on mat and dog ran away we read books".split()
    return [" ".join(rng.choice(words) for _ in range(rng.randint(0, 9))).encode()
            for _ in range(count)]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, hostile_lines):
    """~60 lines: the hostile ones scattered among ordinary ones, no final newline."""
    lines = _words(1, 50)
    for i, line in enumerate(hostile_lines):
        lines.insert(i * 5, line)
    path = tmp_path_factory.mktemp("stream") / "corpus.txt"
    path.write_bytes(b"\n".join(lines))
    return path, len(lines)


def _decoder(model_dir, *args, **kwargs):
    return [sys.executable, "-m", "t2t_lite.bin.decoder", f"--model_dir={model_dir}", *args]


def _run(model_dir, *args, stdin=None):
    return subprocess.run(_decoder(model_dir, *args), input=stdin, capture_output=True, env=ENV,
                          cwd=REPO, timeout=300)


@pytest.fixture(scope="module")
def whole_file(model_dir, corpus, tmp_path_factory):
    """The uninterrupted run, with one chunk holding the whole file."""
    out = tmp_path_factory.mktemp("whole") / "out.txt"
    result = _run(model_dir, f"--decode_from_file={corpus[0]}", f"--decode_to_file={out}")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    return out.read_bytes()


def test_line_counting_and_shard_ranges(tmp_path):
    for data, lines in ((b"", 0), (b"a", 1), (b"a\n", 1), (b"a\n\nb", 3), (b"\r\n\r", 2)):
        (tmp_path / "f").write_bytes(data)
        assert line_input.count_lines(str(tmp_path / "f")) == lines
    ranges = [line_input.shard_range(10, 3, i) for i in range(3)]
    assert ranges == [(0, 3), (3, 6), (6, 10)]
    assert [line_input.shard_range(2, 3, i) for i in range(3)] == [(0, 0), (0, 1), (1, 2)]


def test_chunks_resume_from_a_line_or_an_offset(tmp_path):
    path = tmp_path / "f"
    path.write_bytes(b"a\nb\r\n\nd\ne")
    source = line_input.LineInput(path=str(path))
    chunks = list(source.chunks(2))
    assert [lines for lines, _ in chunks] == [[b"a", b"b\r"], [b"", b"d"], [b"e"]]
    assert list(source.chunks(2, lines_done=3)) == [([b"d", b"e"], 9)]
    assert [lines for lines, _ in source.chunks(2, lines_done=2, offset=chunks[0][1])] == [
        [b"", b"d"], [b"e"]]
    shard = line_input.LineInput(path=str(path), num_shards=2, shard_index=1)
    assert shard.total_lines == 3
    assert [lines for lines, _ in shard.chunks(10)] == [[b"", b"d", b"e"]]


@pytest.mark.slow
def test_small_chunks_give_the_whole_file_output(model_dir, corpus, whole_file, tmp_path):
    out = tmp_path / "out.txt"
    result = _run(model_dir, f"--decode_from_file={corpus[0]}", f"--decode_to_file={out}",
                  "--chunk_lines=7")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert out.read_bytes() == whole_file
    assert whole_file.count(b"\n") == corpus[1]
    assert os.listdir(tmp_path) == ["out.txt"]  # a finished run leaves only OUT
    # The progress line over the whole input (its rate limit and ETA: tests/test_progress.py).
    assert result.stderr.decode().count(f"decoded {corpus[1]}/{corpus[1]} lines (") == 1


@pytest.mark.slow
def test_shards_joined_in_order_equal_one_run(model_dir, corpus, whole_file, tmp_path):
    parts = []
    for index in range(3):
        out = tmp_path / f"out.{index}"
        result = _run(model_dir, f"--decode_from_file={corpus[0]}", f"--decode_to_file={out}",
                      "--num_shards=3", f"--shard_index={index}", "--chunk_lines=5")
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        parts.append(out.read_bytes())
    assert b"".join(parts) == whole_file


@pytest.mark.slow
def test_killed_runs_resume_to_the_same_bytes(model_dir, corpus, whole_file, tmp_path):
    """kill -9 at random moments; each re-run of the same command continues where it stopped."""
    out = tmp_path / "out.txt"
    command = _decoder(model_dir, f"--decode_from_file={corpus[0]}", f"--decode_to_file={out}",
                       "--chunk_lines=3", "--parallel_searches=1")
    rng = random.Random(7)
    kills, resumed = 0, False
    for _ in range(12):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   env=ENV, cwd=REPO)
        # Wait for the model to load and decoding to start, then kill at a random moment.
        progress = out.with_name(out.name + resume.PROGRESS_SUFFIX)
        deadline = time.monotonic() + 120
        while process.poll() is None and time.monotonic() < deadline and not (
                out.exists() or progress.exists()):
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 0.6))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills += 1
            if out.exists():  # what OUT holds is always the start of the right output
                assert whole_file.startswith(out.read_bytes())
            continue
        stderr = process.stderr.read().decode()
        assert process.returncode == 0, stderr[-2000:]
        resumed = resumed or "resuming after" in stderr
        break
    else:
        result = subprocess.run(command, capture_output=True, env=ENV, cwd=REPO, timeout=300)
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        resumed = resumed or "resuming after" in result.stderr.decode()
    assert kills >= 1 and resumed
    assert out.read_bytes() == whole_file
    assert os.listdir(tmp_path) == ["out.txt"]


@pytest.mark.slow
def test_ctranslate2_nbest_with_scores_in_chunks_equals_one_chunk(model_dir, corpus, tmp_path):
    pytest.importorskip("ctranslate2")
    outputs = []
    for chunk_lines in (100000, 4):
        out = tmp_path / f"out.{chunk_lines}"
        result = _run(model_dir, "--engine=ctranslate2", "--nbest=2", "--print_scores",
                      f"--chunk_lines={chunk_lines}", f"--decode_from_file={corpus[0]}",
                      f"--decode_to_file={out}")
        assert result.returncode == 0, result.stderr.decode()[-2000:]
        outputs.append(out.read_bytes())
    # Other chunks make other batches, whose float sums may round apart in a score's last
    # printed digit (kernels differ by CPU); the translations never differ.
    assert outputs[0].count(b"\n") == outputs[1].count(b"\n") == corpus[1]
    for whole, chunked in zip(outputs[0].splitlines(), outputs[1].splitlines()):
        whole, chunked = (line.split(b"\t") if line else [] for line in (whole, chunked))
        assert whole[1::2] == chunked[1::2]
        assert [float(s) for s in whole[0::2]] == pytest.approx(
            [float(s) for s in chunked[0::2]], rel=1e-5, abs=1e-6)
    assert len(outputs[0].split(b"\n")[1].split(b"\t")) == 4  # score, hyp, score, hyp


@pytest.mark.slow
def test_a_progress_record_of_another_run_is_refused(model_dir, corpus, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(corpus[0].read_bytes())
    out = tmp_path / "out.txt"
    out.write_bytes(b"kept\n")
    record = tmp_path / ("out.txt" + resume.PROGRESS_SUFFIX)
    args = (f"--decode_from_file={source}", f"--decode_to_file={out}")

    record.write_text("{not json", encoding="utf-8")
    result = _run(model_dir, *args)
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1].startswith(
        f"error: {record} is damaged")
    assert out.read_bytes() == b"kept\n"  # nothing already written is lost

    # A record of this very command, then the input changes under it.
    record.write_text('{"run": {}, "lines_done": 1, "out_bytes": 5, "offset": null}')
    result = _run(model_dir, *args)
    last = result.stderr.decode().strip().splitlines()[-1]
    assert (result.returncode == exit_status.USER_ERROR
            and last.startswith(f"error: {record} is from another run ("))
    assert "--start_over" in last and out.read_bytes() == b"kept\n"

    result = _run(model_dir, *args, "--start_over", "--chunk_lines=1000")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert out.read_bytes().count(b"\n") == corpus[1] and not record.exists()


@pytest.mark.slow
def test_a_pipe_gets_each_translation_before_the_next_line(model_dir):
    process = subprocess.Popen(_decoder(model_dir, "--chunk_lines=1"), stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV, cwd=REPO)
    try:
        for line in (b"the house is small", b"", b"a cat sat on the mat"):
            process.stdin.write(line + b"\n")
            process.stdin.flush()
            answer = process.stdout.readline()  # blocks until this line's translation is out
            assert answer.endswith(b"\n") and (answer == b"\n") == (line == b"")
        process.stdin.close()
        assert process.stdout.read() == b""
        assert process.wait(timeout=60) == 0
    finally:
        process.kill()


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--decode_from_file=/nonexistent/in.txt"], "error: --decode_from_file /nonexistent/in.txt"
                                                 " does not exist or is not a file"),
    (["--decode_from_file={tmp}"], "error: --decode_from_file {tmp} does not exist or is not a"
                                   " file"),
    (["--decode_to_file={tmp}/missing/out.txt"], "error: --decode_to_file: folder "
                                                 "{tmp}/missing does not exist"),
    (["--decode_to_file={tmp}"], "error: --decode_to_file {tmp} is a directory; name a file"),
    (["--num_shards=2"], "error: --num_shards needs --decode_from_file (a pipe cannot be split)"),
    (["--num_shards=2", "--shard_index=2", "--decode_from_file={tmp}/in.txt"],
     "error: --shard_index must be in [0, --num_shards=2), got 2"),
    (["--chunk_lines=0"], "error: --chunk_lines must be >= 1, got 0"),
])
def test_bad_input_is_one_error_line(model_dir, tmp_path, args, message):
    (tmp_path / "in.txt").write_bytes(b"a\n")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = _run(model_dir, *args, stdin=b"a\n")
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1] == message.replace("{tmp}", str(tmp_path))
