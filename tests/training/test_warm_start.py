"""t2t-lite-trainer --warm_start_from: a new model_dir from a parent's model weights, a fresh
optimizer and step 0; a parent of other shapes or another vocabulary refused in one line."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from t2t_lite import registry
from t2t_lite.data import datagen
from t2t_lite.errors import UserError
from t2t_lite.model_dir import checkpoints, loaded
from t2t_lite.training import trainer
from t2t_lite.training.hooks import Hook
from t2t_lite.training.trainer import TrainOptions, train
from t2t_lite.training.warm_start import parent_checkpoint

pytestmark = pytest.mark.slow  # trains end to end; -m 'not slow' skips it

PARAMS = ["max_length=8", "train_samples=2000", "eval_samples=50"]
FAST = ["TrainConfig.batch_tokens = 512", "TrainConfig.max_tokens_per_replica = 512",
        "TrainConfig.checkpoint_minutes = 0"]


def options(data_dir, model_dir, **kwargs):
    kwargs.setdefault("gin_params", FAST)
    return TrainOptions(problem="algorithmic_copy", problem_params=PARAMS, data_dir=data_dir,
                        model_dir=model_dir, hparams_set="tiny", bleu_sentences=0,
                        eval_batches=1, log_every=10, **kwargs)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("copy_data")
    datagen.run("algorithmic_copy", str(path), problem_params=PARAMS)
    return str(path)


@pytest.fixture(scope="module")
def parent(data_dir, tmp_path_factory):
    """A parent model_dir trained 3 steps."""
    model_dir = str(tmp_path_factory.mktemp("parent") / "model")
    assert train(options(data_dir, model_dir, train_steps=3)).step == 3
    return model_dir


class Spy(Hook):
    """What the loop starts from: the step, the optimizer's iterations and the weights."""

    def begin(self, state):
        self.step = state.step
        self.iterations = int(state.optimizer.iterations.numpy())
        self.weights = [np.array(w) for w in state.model.weights]
        self.slots = [np.array(v) for v in state.optimizer.variables
                      if "iteration" not in v.name]


@pytest.fixture()
def spy(monkeypatch):
    """Adds a Spy to the trainer's hooks."""
    spy = Spy()
    real_loop = trainer.loop
    monkeypatch.setattr(trainer, "loop",
                        lambda state, step, hooks: real_loop(state, step, [spy, *hooks]))
    return spy


def test_child_starts_from_the_parents_weights_with_a_fresh_optimizer(
        data_dir, parent, tmp_path, spy, capsys):
    child = str(tmp_path / "child")
    result = train(options(data_dir, child, train_steps=2, warm_start_from=parent))
    parent_checkpoint_path = os.path.join(parent, "ckpt-3")
    parent_model = loaded.load(parent, parent_checkpoint_path).model
    # The first step's weights are the parent's trained weights, not a fresh initialisation.
    assert len(spy.weights) == len(parent_model.weights)
    for mine, theirs in zip(spy.weights, parent_model.weights):
        np.testing.assert_array_equal(mine, np.array(theirs))
    # The optimizer is fresh: no iterations, all moments zero; the step counts from 0.
    assert spy.iterations == 0 and spy.step == 0
    assert spy.slots and all(not np.any(slot) for slot in spy.slots)
    assert result.step == 2
    assert result.last_checkpoint.endswith("ckpt-2")
    out = capsys.readouterr().out
    assert (f"warm start from {parent_checkpoint_path} (parent: problem algorithmic_copy, "
            "set tiny)") in out
    assert "resumed from" not in out
    with open(os.path.join(child, "run.json"), encoding="utf-8") as f:
        info = json.load(f)
    assert info["warm_start"] == {"path": parent,
                                  "checkpoint": os.path.abspath(parent_checkpoint_path),
                                  "problem": "algorithmic_copy", "hparams_set": "tiny"}

    # Re-running the child resumes from its own checkpoint: the parent is not read (here it
    # does not even exist) and run.json still records the parent the weights started from.
    result = train(options(data_dir, child, train_steps=4,
                           warm_start_from=str(tmp_path / "no_such_parent")))
    assert result.step == 4 and spy.step == 2 and spy.iterations == 2
    out = capsys.readouterr().out
    assert "already has checkpoints: resuming from its latest" in out
    assert f"resumed from {os.path.join(child, 'ckpt-2')} at step 2" in out
    with open(os.path.join(child, "run.json"), encoding="utf-8") as f:
        assert json.load(f)["warm_start"]["path"] == parent


def test_a_parent_of_other_shapes_is_refused_in_one_line(data_dir, parent, tmp_path):
    child = tmp_path / "child"
    named = os.path.join(parent, "ckpt-3")
    command = [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_copy",
               f"--data_dir={data_dir}", f"--model_dir={child}", "--hparams_set=tiny",
               *[f"--problem_param={p}" for p in PARAMS], "--train_steps=2",
               "--gin_param=ModelConfig.d_ff = 96", f"--warm_start_from={named}"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    out = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: cannot warm start from {named}: ")
    assert ("feed_forward/inner/_kernel: --hparams_set=tiny with --gin_param gives shape "
            f"[32, 96], checkpoint {named} holds [32, 64]") in last
    assert not child.exists()  # refused before anything was written


def test_a_parent_with_another_vocabulary_is_refused(parent, tmp_path):
    source = tmp_path / "corpus.en"
    target = tmp_path / "corpus.de"
    source.write_text("".join(f"sentence number {i}\n" for i in range(300)), encoding="utf-8")
    target.write_text("".join(f"satz nummer {i}\n" for i in range(300)), encoding="utf-8")
    params = [f"train={source},{target}", "vocab_size=40"]
    child_data = str(tmp_path / "child_data")
    datagen.run("translate_text_files", child_data, problem_params=params)
    vocab = registry.problem("translate_text_files",
                             **registry.parse_params(params)).vocab_path(child_data)
    with pytest.raises(UserError) as error:
        train(TrainOptions(problem="translate_text_files", problem_params=params,
                           data_dir=child_data, model_dir=str(tmp_path / "child"),
                           hparams_set="tiny", train_steps=2, warm_start_from=parent))
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith(f"cannot warm start from {parent}: its vocabulary ")
    assert f"is not the one {vocab} the data is encoded with" in message
    assert f"--problem_param=vocab_from={parent}" in message
    assert not (tmp_path / "child").exists()


def test_the_parent_dir_of_a_named_checkpoint(parent, tmp_path):
    parent = str(shutil.copytree(parent, tmp_path / "parent"))
    checkpoints.average_checkpoints(parent, 2)
    averaged = os.path.join(parent, "averaged", "ckpt-3")
    assert parent_checkpoint(averaged) == (averaged, parent)
    assert parent_checkpoint(parent) == (averaged, parent)  # the averaged one is the newest
    named = os.path.join(parent, "ckpt-3")
    assert parent_checkpoint(named) == (named, parent)
    with pytest.raises(UserError, match="neither a model_dir nor a checkpoint"):
        parent_checkpoint(os.path.join(parent, "ckpt-77"))
