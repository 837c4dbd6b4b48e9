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
