"""Parallel beam searches (t2t_lite/export/parallel_search.py): a batch split over searches run at
once gives exactly the lines one search gives, and the decoder's threads are set for it."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from t2t_lite import cpu, exit_status
from t2t_lite.errors import UserError
from t2t_lite.inference import batch_decode, parallel_search
from tests.conftest import finished

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MORE_LINES = [b"the cat sat", b"a dog ran away !", b"we read", b"der Hund und die Katze sass",
              b"no", b"every day she said : the house is small", b"books ?", b"and the mat"]


def test_interleaved_parts_cover_every_item_once_and_never_come_empty():
    assert parallel_search.interleaved_parts(list(range(7)), 3) == [[0, 3, 6], [1, 4], [2, 5]]
    assert parallel_search.interleaved_parts([5, 6], 4) == [[5], [6]]
    assert parallel_search.interleaved_parts([1, 2, 3], 1) == [[1, 2, 3]]


def test_parts_come_back_in_order_from_a_pool():
    pool = parallel_search.thread_pool(3)
    try:
        parts = [[i] for i in range(20)]
        assert list(parallel_search.map_parts(lambda p: p[0] * 2, parts, pool)) == list(
            range(0, 40, 2))
    finally:
        pool.shutdown()
    assert parallel_search.thread_pool(1) is None


def test_auto_is_one_search_per_core_and_one_on_a_gpu():
    assert parallel_search.resolve(0) == min(cpu.available_cores(), 4)
    assert parallel_search.resolve(0, on_gpu=True) == 1
    assert parallel_search.resolve(3, on_gpu=True) == 3
    with pytest.raises(UserError, match="--parallel_searches must be >= 0"):
        parallel_search.resolve(-1)


@pytest.mark.slow
def test_split_batches_give_the_lines_of_one_search(model_dir, hostile_lines):
    """Several batches (small batch_tokens), each split in 3 parts searched at once: the same
    n-best lines and scores as one search per batch, for every hostile line."""
    from t2t_lite.inference import translation_module

    module = translation_module.from_model_dir(model_dir)
    lines = hostile_lines + MORE_LINES
    settings = dict(alpha=0.6, extra_length=6, nbest=2, print_scores=True, batch_tokens=40)
    one, _ = batch_decode.decode_lines(module, lines, parallel_searches=1, **settings)
    split, stats = batch_decode.decode_lines(module, lines, parallel_searches=3, **settings)
    assert len(split) == len(lines) == stats.lines
    assert [line.split("\t")[1::2] for line in split] == [line.split("\t")[1::2] for line in one]
    for a, b in zip(one, split):
        np.testing.assert_allclose([float(s) for s in b.split("\t")[::2] if s],
                                   [float(s) for s in a.split("\t")[::2] if s], rtol=1e-5)
    assert sum(bool(line) for line in split) == len(lines) - 2  # the two empty lines


PROBE = """
import json, os, sys
from t2t_lite.inference import parallel_search
import tensorflow as tf
threads = tf.config.threading
steps = []
for action in sys.argv[1:]:
    if action == "start":
        tf.constant(1.0) + 1.0  # TensorFlow's runtime starts: its threads are fixed from here on
    elif action == "drop_user_setting":
        del os.environ["TF_NUM_INTRAOP_THREADS"]
    else:  # each call's result, and the threads as it left them
        done = parallel_search.configure_tensorflow(int(action))
        steps.append(dict(configured=done, intra=threads.get_intra_op_parallelism_threads(),
                          inter=threads.get_inter_op_parallelism_threads()))
print(json.dumps(steps))
"""


def _start_probe(*actions, **env):
    """A fresh Python (TensorFlow not started) running PROBE's actions: a number of searches to
    configure, "start" (TensorFlow runs an op), "drop_user_setting"; _probe_steps reads the
    calls' results."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TF_NUM_")}
    environment.update(env, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, "-c", PROBE, *actions], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO, env=environment)


def _probe_steps(process):
    stdout, _ = finished(process, timeout=120)
    return json.loads(stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_threads_are_set_before_tensorflow_starts_and_never_after():
    """Two fresh processes (threads are fixed once TensorFlow starts), run at once; every call's
    starting point is known, as each call reads the threads back."""
    cores = cpu.available_cores()
    processes = [_start_probe("1", "2", "start", "3"),
                 _start_probe("2", "drop_user_setting", "4", "start", "5",
                              TF_NUM_INTRAOP_THREADS="3")]
    try:
        (one, two, after_start), (user_set, four, other_after_start) = (
            _probe_steps(p) for p in processes)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    # One search leaves TensorFlow's own defaults (0: one per core), as does a user's setting
    # (TensorFlow reads it itself).
    assert one == dict(configured=True, intra=0, inter=0)
    assert user_set["configured"] and user_set["intra"] == 0
    # Set from intra 0 (the default, or a user's setting just dropped): cores // searches
    # threads per op, `searches` ops at once.
    assert two == dict(configured=True, intra=max(1, cores // 2), inter=2)
    assert four == dict(configured=True, intra=max(1, cores // 4), inter=4)
    # Once TensorFlow has started, nothing changes.
    assert after_start == dict(two, configured=False)
    assert other_after_start == dict(four, configured=False)


@pytest.mark.slow
def test_cli_decodes_with_parallel_searches_and_refuses_a_negative_count(cli, model_dir,
                                                                         checkpoint_decode,
                                                                         hostile_lines):
    result = cli("decoder", f"--model_dir={model_dir}", "--parallel_searches=3",
                 "--batch_tokens=40", "--nbest=2", "--print_scores",
                 stdin=b"\n".join(hostile_lines))
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    got = result.stdout.decode("utf-8").split("\n")[:-1]
    want = checkpoint_decode[0].decode("utf-8").split("\n")[:-1]
    assert [line.split("\t")[1::2] for line in got] == [line.split("\t")[1::2] for line in want]

    result = cli("decoder", f"--model_dir={model_dir}", "--parallel_searches=-1",
                 stdin=b"hello\n")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1] == (
        "error: --parallel_searches must be >= 0 (0: one per CPU core), got -1")
