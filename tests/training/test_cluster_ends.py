"""The trainer's edges under a cluster and at the end of a run, through the real CLI: timed
checkpoints of two workers started apart are written at the chief's steps; a signal during the
final dev evaluation or the end-of-run barrier ends the run at once, a second Ctrl-C always does;
a worker lost before the first step ends the other with one line; the model_dir lock is free
after every way out. Tests wait for the trainer's own lines, never for guessed seconds."""
import json
import os
import pathlib
import re
import signal
import sys
import textwrap
import time

import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.model_dir import dev_history
from tests.training.test_trainer import (  # noqa: F401 (data_dir: a fixture)
    COORDINATION_ERRORS, PARAMS, SAVED, Trainer, _free_port, data_dir, finish_all,
    trainer_command)

pytestmark = pytest.mark.slow  # runs the trainer end to end; -m 'not slow' skips it


def tf_config(addresses, index):
    return {"TF_CONFIG": json.dumps({"cluster": {"worker": addresses},
                                     "task": {"type": "worker", "index": index}})}


def saved_steps(directory):
    state = tf.train.get_checkpoint_state(str(directory))
    return [int(path.rsplit("-", 1)[1]) for path in state.all_model_checkpoint_paths]


def test_timed_checkpoints_of_a_late_worker_are_written_at_the_chiefs_steps(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    addresses = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    command = trainer_command(
        data_dir, model_dir, "--train_steps=40", "--log_every=1", "--eval_every_steps=1000",
        "--gin_param=TrainConfig.checkpoint_minutes = 0.01",  # a save every 0.6 s
        "--gin_param=TrainConfig.keep_checkpoints = 1000")
    chief = Trainer(command, tf_config(addresses, 0))
    chief.wait_for(r"^cluster: worker 0 of 2, waiting up to \d+ s ")
    other = Trainer(command, tf_config(addresses, 1))  # starts once the chief waits for it
    assert finish_all([chief, other]) == [0, 0], chief.output[-3000:] + other.output[-3000:]
    steps = saved_steps(model_dir)
    # The chief's timer decides: every save is at one step on both workers (worker 1's copy
    # is its own folder), the last one at the run's end.
    assert steps == saved_steps(model_dir / ".worker_1")
    assert len(steps) >= 3 and steps[-1] == 40, steps
    for trainer in (chief, other):
        assert not any(error in trainer.output for error in COORDINATION_ERRORS)


HERE = pathlib.Path(__file__).resolve().parent
# The trainer's CLI in a process whose file system has no flock, so that its model_dir lock is
# the lock file itself, removed when released: a way out that skips the release leaves it.
NO_FLOCK = textwrap.dedent("""
    import errno, fcntl, os, runpy, sys
    def no_flock(*args):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    fcntl.flock = no_flock
    sys.argv[0] = "t2t-lite-trainer"
    runpy.run_module("t2t_lite.bin.trainer", run_name="__main__")
""")


def slow_dev_command(data_dir, model_dir, *extra, no_flock=False):
    """The trainer on slow_dev_problem's problem: a dev evaluation that decodes sentences
    waits (120 s) for the test's signal."""
    command = trainer_command(data_dir, model_dir, "--problem=slow_dev_reverse",
                              f"--problem_module={HERE / 'slow_dev_problem.py'}",
                              "--bleu_sentences=2", "--log_every=1",
                              "--gin_param=TrainConfig.checkpoint_minutes = 0", *extra)
    if no_flock:
        command[1:3] = ["-c", NO_FLOCK]  # [python, -m, t2t_lite.bin.trainer, flags...]
    return command


def lock_path(model_dir):
    return pathlib.Path(model_dir) / ".lock"


def test_sigterm_during_the_final_evaluation_skips_it_keeps_the_checkpoint_and_exits_143(
        data_dir, tmp_path):
    model_dir = tmp_path / "model"
    run = Trainer(slow_dev_command(data_dir, model_dir, "--train_steps=3",
                                   "--eval_every_steps=1000", no_flock=True))
    run.wait_for(r"^final dev evaluation of step 3 ")
    run.process.send_signal(signal.SIGTERM)
    assert run.finish(timeout=60) == exit_status.TERMINATED, run.output[-3000:]
    path, step, _ = run.wait_for(SAVED.format("SIGTERM")).groups()
    assert (path, step) == (str(model_dir / "ckpt-3"), "3")
    assert tf.train.latest_checkpoint(str(model_dir)) == path
    assert 3 not in dev_history.read(str(model_dir))  # the evaluation was skipped
    assert "Traceback" not in run.output and "re-run the same command" in run.output
    assert not lock_path(model_dir).exists()


def test_a_second_sigint_stops_at_once_even_during_an_evaluation(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    run = Trainer(slow_dev_command(data_dir, model_dir, "--train_steps=100000",
                                   "--eval_every_steps=2", no_flock=True))
    run.wait_for(r"^slow dev pairs: waiting")  # the evaluation at step 2, which lasts 120 s
    run.process.send_signal(signal.SIGINT)  # recorded: the save waits for the evaluation
    run.wait_for(r"^SIGINT received: saving after the step in progress, then exiting \(Ctrl-C "
                 r"again stops at once, without saving\)$")
    run.process.send_signal(signal.SIGINT)  # Ctrl-C again: out now
    assert run.finish(timeout=60) == exit_status.INTERRUPTED, run.output[-3000:]
    run.wait_for(r"^SIGINT again: stopping at once, without saving")
    assert "Traceback" not in run.output and "KeyboardInterrupt" not in run.output
    assert not lock_path(model_dir).exists()


def test_a_signal_at_the_end_of_run_barrier_and_during_the_chiefs_final_evaluation(
        data_dir, tmp_path):
    """Worker 1 waits at the end-of-run barrier for the chief's final evaluation: SIGTERM
    there ends it at once; SIGTERM to the chief then skips its evaluation. Both exit 143 with
    the checkpoint of the last step, and the chief's lock is released."""
    model_dir = tmp_path / "model"
    addresses = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    args = ("--train_steps=4", "--eval_every_steps=1000")
    chief = Trainer(slow_dev_command(data_dir, model_dir, *args, no_flock=True),
                    tf_config(addresses, 0))
    other = Trainer(slow_dev_command(data_dir, model_dir, *args), tf_config(addresses, 1))
    chief.wait_for(r"^slow dev pairs: waiting")
    other.process.send_signal(signal.SIGTERM)
    assert other.finish(timeout=60) == exit_status.TERMINATED, other.output[-3000:]
    chief.process.send_signal(signal.SIGTERM)
    assert chief.finish(timeout=60) == exit_status.TERMINATED, chief.output[-3000:]
    for trainer in (chief, other):
        path, step, _ = trainer.wait_for(SAVED.format("SIGTERM")).groups()
        assert (path, step) == (str(model_dir / "ckpt-4"), "4")
        assert "Traceback" not in trainer.output
    assert tf.train.latest_checkpoint(str(model_dir)) == str(model_dir / "ckpt-4")
    assert not lock_path(model_dir).exists()


def test_a_worker_lost_before_the_first_step_ends_the_other_with_one_line(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    addresses = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    args = ("--train_steps=100000", "--log_every=1")
    chief = Trainer(trainer_command(data_dir, model_dir, *args), tf_config(addresses, 0))
    other = Trainer(trainer_command(data_dir, model_dir, *args), tf_config(addresses, 1))
    other.wait_for(r"^batching: ")  # the cluster has formed; the model is not built yet
    other.process.kill()
    other.finish()
    assert chief.finish(timeout=120) == exit_status.USER_ERROR, chief.output[-3000:]
    last = chief.lines[-1]
    assert re.match(r"^error: worker 1 \(127\.0\.0\.1:\d+\) went away at step 0 \(.+\); no "
                    r"checkpoint was written yet; re-running every worker's command starts the "
                    r"run again$", last), chief.output[-3000:]
    assert "Traceback" not in chief.output and not re.search(r"^step \d", chief.output, re.M)
