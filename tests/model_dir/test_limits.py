"""A model_dir's configs are checked against bounds and the checkpoint's own shapes before any
tool builds a model from them: an edited configs.json or run.json ends in one error line, fast."""
import dataclasses
import json
import os
import shutil
import time

import pytest
import tensorflow as tf

from t2t_lite import exit_status, hparams, models
from t2t_lite.errors import UserError
from t2t_lite.model_dir import limits

VARIANTS = [dict(), dict(attention_bias=False), dict(position_encoding="learned"),
            dict(norm_position="pre"), dict(d_k=6, d_v=10, num_heads=2), dict(num_layers=3)]


@pytest.mark.slow
@pytest.mark.parametrize("overrides", VARIANTS)
def test_expected_shapes_are_a_built_models_checkpoint(overrides, tmp_path):
    config = dataclasses.replace(hparams.load("tiny", ["MAX_LENGTH = 20"])[0], **overrides)
    path = tf.train.Checkpoint(model=models.build(config, 23)).save(str(tmp_path / "ckpt"))
    assert limits.expected_shapes(config, 23) == limits.checkpoint_shapes(path)
    limits.check_model_dir(config, 23, path, "configs.json")  # passes


def test_a_training_checkpoint_names_weights_through_its_object_graph(tmp_path):
    """With the optimizer in the checkpoint, weights are stored under the optimizer's paths; the
    check still finds each under its model name."""
    import keras

    config = hparams.load("tiny", ["MAX_LENGTH = 20"])[0]
    model = models.build(config, 23)
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    path = tf.train.Checkpoint(optimizer=optimizer, model=model).save(str(tmp_path / "ckpt"))
    assert not any(n.startswith("model/") and "kernel" in n for n, _ in tf.train.list_variables(path))
    assert limits.checkpoint_shapes(path) == limits.expected_shapes(config, 23)


def _edited(model_dir, tmp_path, section, field, value):
    """A copy of model_dir with one value of configs.json (or run.json) replaced."""
    copy = tmp_path / "edited"
    shutil.copytree(model_dir, copy)
    name = "run.json" if section == "run" else "configs.json"
    data = json.loads((copy / name).read_text())
    (data if section == "run" else data[section])[field] = value
    (copy / name).write_text(json.dumps(data))
    return str(copy)


EDITS = [
    ("run", "vocab_size", 10 ** 10, "vocab_size = 10000000000 is outside the sane range"),
    ("model", "d_model", 2 ** 30, "d_model = 1073741824 is outside the sane range"),
    ("model", "d_ff", 2 ** 31, "d_ff = 2147483648 is outside the sane range"),
    ("model", "max_length", 2 ** 31, "max_length = 2147483648 is outside the sane range"),
    ("model", "num_layers", 100000, "num_layers = 100000 is outside the sane range"),
    ("decode", "beam_size", 10 ** 6, "beam_size = 1000000 is outside the sane range"),
    ("model", "num_layers", -1, "num_layers must be >= 1, got -1"),
    ("model", "num_heads", 0, "num_heads must be >= 1, got 0"),
    ("model", "num_layers", 1, "holds model/decoder_layer_1/"),  # fewer than the checkpoint's
    ("model", "num_layers", 3, "describes a model with model/decoder_layer_2/"),  # more
]


@pytest.mark.parametrize("section, field, value, message", EDITS)
def test_edited_model_dirs_are_refused_before_building(model_dir, tmp_path, section, field, value,
                                                        message):
    from t2t_lite.model_dir import loaded

    edited = _edited(model_dir, tmp_path, section, field, value)
    start = time.monotonic()
    with pytest.raises(UserError) as error:
        loaded.load(edited)
    assert message in str(error.value)
    assert time.monotonic() - start < 5


def test_a_legal_but_different_shape_names_the_variable_and_both_shapes(model_dir, tmp_path):
    from t2t_lite.model_dir import averaging, loaded

    d_ff = json.loads(open(os.path.join(model_dir, "configs.json")).read())["model"]["d_ff"]
    edited = _edited(model_dir, tmp_path, "model", "d_ff", 2 * d_ff)
    with pytest.raises(UserError) as error:
        loaded.load(edited)
    assert str(error.value).startswith("model/decoder_layer_0/feed_forward/inner/_kernel: ")
    assert f", {2 * d_ff}]" in str(error.value) and f", {d_ff}]" in str(error.value)
    with pytest.raises(UserError) as error:  # the averager checks too
        averaging.average_checkpoints(edited, 1)
    assert "feed_forward/inner/_kernel" in str(error.value)


@pytest.mark.slow
def test_the_decoder_cli_refuses_an_edited_model_dir_in_one_line(cli, model_dir, tmp_path):
    edited = _edited(model_dir, tmp_path, "model", "d_model", 2 ** 30)
    result = cli("decoder", f"--model_dir={edited}", stdin=b"hello\n")
    lines = result.stderr.decode().strip().splitlines()
    assert result.returncode == exit_status.USER_ERROR and "Traceback" not in result.stderr.decode()
    assert lines[-1].startswith("error: ") and "d_model = 1073741824" in lines[-1]
