"""t2t-lite-trainer --warm_start_from: a new model_dir from a parent's model weights, a fresh
optimizer and step 0; a parent of other shapes, another vocabulary or another model setting
refused in one line, an export given as the parent named as one."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from t2t_lite import exit_status, hparams, models, problems, registry
from t2t_lite.data import datagen
from t2t_lite.errors import UserError
from t2t_lite.model_dir import averaging, limits, loaded
from t2t_lite.models.transformer import Transformer
from t2t_lite.training import trainer
from t2t_lite.training.hooks import Hook
from t2t_lite.training.trainer import TrainOptions, train
from t2t_lite.training import warm_start
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
    datagen.run(problems.build("algorithmic_copy", PARAMS), str(path))
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


def _trainer_cli(data_dir, child, *flags):
    """t2t-lite-trainer on the copy problem into `child`, 2 steps, with `flags`."""
    command = [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_copy",
               f"--data_dir={data_dir}", f"--model_dir={child}", "--hparams_set=tiny",
               *[f"--problem_param={p}" for p in PARAMS], "--train_steps=2", *flags]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="")
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def _refused_line(out):
    """The one error line a refused run ends with (exit 1, no traceback)."""
    assert out.returncode == exit_status.USER_ERROR, out.stderr[-2000:]
    assert "Traceback" not in out.stderr
    return out.stderr.strip().splitlines()[-1]


def test_a_parent_of_other_shapes_is_refused_in_one_line(data_dir, parent, tmp_path):
    child = tmp_path / "child"
    named = os.path.join(parent, "ckpt-3")
    out = _trainer_cli(data_dir, child, "--gin_param=ModelConfig.d_ff = 96",
                       f"--warm_start_from={named}")
    last = _refused_line(out)
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
    datagen.run(problems.build("translate_text_files", params), child_data)
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
    averaging.average_checkpoints(parent, 2)
    averaged = os.path.join(parent, "averaged", "ckpt-3")
    assert parent_checkpoint(averaged) == (averaged, parent)
    assert parent_checkpoint(parent) == (averaged, parent)  # the averaged one is the newest
    named = os.path.join(parent, "ckpt-3")
    assert parent_checkpoint(named) == (named, parent)
    with pytest.raises(UserError, match="neither a model_dir nor a checkpoint"):
        parent_checkpoint(os.path.join(parent, "ckpt-77"))


# A value other than tiny's for every compared ModelConfig field; the test below fails when a
# field is added to ModelConfig without one, so no new setting goes unchecked.
@models.register_model("transformer_twin_test")
class TwinTransformer(Transformer):
    """A registered variant with the Transformer's very variables: only its name differs."""


OTHER_VALUES = {"model": "transformer_twin_test", "num_layers": 3, "d_model": 48, "d_ff": 96,
                "num_heads": 2, "d_k": 16, "d_v": 16, "norm_position": "pre",
                "position_encoding": "learned", "sinusoid_layout": "concat",
                "attention_bias": True, "layer_norm_epsilon": 1e-5}


@pytest.fixture(scope="module")
def child_config():
    """tiny's ModelConfig, the parent's, and the copy problem's vocabulary size."""
    model_config = hparams.load("tiny", FAST)[0]
    problem = registry.problem("algorithmic_copy", **registry.parse_params(PARAMS))
    return model_config, problem


def _prepare(parent, data_dir, model_config, problem, model_dir, accept=()):
    return warm_start.prepare(parent, str(model_dir), model_config,
                              problem.tokenizer(data_dir).vocab_size, problem, data_dir,
                              "the child's set", accept=accept)


def test_every_compared_setting_changed_alone_is_refused(data_dir, parent, child_config,
                                                         tmp_path):
    """Each ModelConfig field outside MAY_DIFFER, changed alone in the child: refused by the
    shape check when it changes a shape, else by the settings check naming it, which
    --warm_start_accept lets through."""
    base, problem = child_config
    assert set(OTHER_VALUES) == set(warm_start.COMPARED)
    vocab_size = problem.tokenizer(data_dir).vocab_size
    same_shapes = []
    for name, value in OTHER_VALUES.items():
        assert value != getattr(base, name), name
        changed = dataclasses.replace(base, **{name: value})
        with pytest.raises(UserError) as error:
            _prepare(parent, data_dir, changed, problem, tmp_path / name)
        message = str(error.value)
        assert "\n" not in message and message.startswith(f"cannot warm start from {parent}: ")
        if (limits.expected_shapes(changed, vocab_size)
                != limits.expected_shapes(base, vocab_size)):
            assert "shape" in message or "does not have" in message, (name, message)
            continue
        same_shapes.append(name)
        assert (f"differs from the one the child's set describes in settings that keep the "
                f"shapes but change what the weights compute: {name} {getattr(base, name)!r} "
                f"against {value!r}; set them as the parent's, or accept the difference with "
                f"--warm_start_accept={name}") in message, message
        assert os.path.join(parent, "configs.json") in message
        accepted = _prepare(parent, data_dir, changed, problem, tmp_path / name, accept=[name])
        assert accepted.accepted == {name: (getattr(base, name), value)}
    # The settings the shape check alone lets through, each now refused.
    assert set(same_shapes) == {"model", "sinusoid_layout", "layer_norm_epsilon"}
    assert not any((tmp_path / name).exists() for name in OTHER_VALUES)


def test_several_differences_are_named_in_one_line(data_dir, parent, child_config, tmp_path):
    base, problem = child_config
    changed = dataclasses.replace(base, sinusoid_layout="concat", layer_norm_epsilon=1e-3)
    with pytest.raises(UserError) as error:
        _prepare(parent, data_dir, changed, problem, tmp_path / "child",
                 accept=["layer_norm_epsilon"])
    message = str(error.value)
    assert "sinusoid_layout 'interleaved' against 'concat'; " in message
    assert "layer_norm_epsilon" not in message  # accepted
    assert message.endswith("--warm_start_accept=sinusoid_layout")


def test_training_only_settings_and_the_derived_key_size_may_differ(data_dir, parent,
                                                                    child_config, tmp_path):
    base, problem = child_config
    # Dropout rates and max_length do not change what the weights compute; d_k 0 is tiny's
    # d_model 32 / 4 heads = 8, the parent's explicit 8.
    changed = dataclasses.replace(base, dropout=0.3, attention_dropout=0.1, relu_dropout=0.1,
                                  max_length=128, d_k=0, d_v=0)
    assert set(warm_start.MAY_DIFFER) == {"dropout", "attention_dropout", "relu_dropout",
                                          "max_length"}
    result = _prepare(parent, data_dir, changed, problem, tmp_path / "child")
    assert result.accepted == {} and "accepted" not in result.record()


def test_a_bad_accept_name_is_refused(data_dir, parent, child_config, tmp_path):
    base, problem = child_config
    with pytest.raises(UserError, match=r"^--warm_start_accept=sinusoid: no such model "
                                        r"setting; it names settings from model, num_layers"):
        _prepare(parent, data_dir, base, problem, tmp_path / "child", accept=["sinusoid"])
    with pytest.raises(UserError, match=r"^--warm_start_accept=dropout: dropout may differ "
                                        r"from the parent's without it"):
        _prepare(parent, data_dir, base, problem, tmp_path / "child", accept=["dropout"])


def test_a_parent_without_configs_json_is_refused(data_dir, parent, child_config, tmp_path):
    base, problem = child_config
    old = str(shutil.copytree(parent, tmp_path / "old_parent"))
    os.remove(os.path.join(old, "configs.json"))
    with pytest.raises(UserError) as error:
        _prepare(old, data_dir, base, problem, tmp_path / "child")
    assert str(error.value) == (f"cannot warm start from {old}: {old} has no configs.json to "
                                "compare its model settings with the child's")


def test_another_setting_through_the_cli_refused_then_accepted(data_dir, parent, tmp_path):
    child = tmp_path / "child"
    out = _trainer_cli(data_dir, child, "--gin_param=ModelConfig.sinusoid_layout = 'concat'",
                       f"--warm_start_from={parent}")
    last = _refused_line(out)
    assert last == (
        f"error: cannot warm start from {parent}: its model ({parent}/configs.json) differs "
        "from the one --hparams_set=tiny with --gin_param describes in settings that keep the "
        "shapes but change what the weights compute: sinusoid_layout 'interleaved' against "
        "'concat'; set them as the parent's, or accept the difference with "
        "--warm_start_accept=sinusoid_layout")
    assert not child.exists()  # refused before anything was written

    out = _trainer_cli(data_dir, child, "--gin_param=ModelConfig.sinusoid_layout = 'concat'",
                       f"--warm_start_from={parent}", "--warm_start_accept=sinusoid_layout",
                       *[f"--gin_param={g}" for g in FAST])
    assert out.returncode == 0, out.stderr[-2000:]
    assert "accepted: sinusoid_layout 'interleaved' -> 'concat')" in out.stdout
    assert (child / "ckpt-2.index").exists()
    with open(child / "run.json", encoding="utf-8") as f:
        record = json.load(f)["warm_start"]
    assert record["accepted"] == {"sinusoid_layout": {"parent": "interleaved",
                                                      "child": "concat"}}


def test_an_export_as_the_parent_is_named_as_one(data_dir, export_version_dir, tmp_path):
    export_dir = os.path.dirname(export_version_dir)
    saved_model_pb = os.path.join(export_version_dir, "saved_model.pb")
    out = _trainer_cli(data_dir, tmp_path / "child", f"--warm_start_from={export_dir}")
    assert _refused_line(out) == (
        f"error: cannot warm start from {export_dir}: it is a SavedModel export "
        f"({saved_model_pb}), made for decoding and serving, not a model_dir: a child starts "
        "from a training checkpoint; give the model_dir it was exported from")
    # The version folder, its saved_model.pb and its variables name the same export.
    for spec in (export_version_dir, saved_model_pb,
                 os.path.join(export_version_dir, "variables", "variables")):
        with pytest.raises(UserError, match=r"^it is a SavedModel export \("):
            parent_checkpoint(spec)
    ct2 = tmp_path / "ct2"
    ct2.mkdir()
    (ct2 / "model.bin").write_bytes(b"\0")
    with pytest.raises(UserError, match=r"^it is a CTranslate2 model folder \("):
        parent_checkpoint(str(ct2))
