"""run.json someone sends you: a damaged one is a one-line error, and it names files inside the
model_dir only; the configs from their values, and written as gin bindings that give them back."""
import dataclasses
import json

import pytest

from t2t_lite.errors import UserError
from t2t_lite.model_dir import files


def _model_dir(tmp_path, text):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / files.RUN_INFO).write_text(text)
    return str(model_dir)


@pytest.mark.parametrize("text,message", [
    ("{not json", "cannot read .*run.json: Expecting property name"),
    ("[1, 2]", "not a t2t_lite run.json"),
    (json.dumps({"vocab_file": "v.spm.model", "vocab_size": "13"}), "not a t2t_lite run.json"),
])
def test_damaged_run_json_is_a_user_error(tmp_path, text, message):
    with pytest.raises(UserError, match=message):
        files.read_run_info(_model_dir(tmp_path, text))


@pytest.mark.parametrize("name", ["../elsewhere/v.spm.model", "/etc/v.spm.model", "sub/v.spm.model",
                                  "..", "", None])
def test_vocabulary_outside_the_model_dir_is_refused(tmp_path, name):
    model_dir = _model_dir(tmp_path, json.dumps({"vocab_file": name, "vocab_size": 13}))
    with pytest.raises(UserError, match="must be a file name inside the model_dir"):
        files.vocab_path(model_dir)


def test_vocabulary_file_name_reads_from_the_model_dir(tmp_path):
    model_dir = _model_dir(tmp_path, json.dumps({"vocab_file": "v.spm.model", "vocab_size": 13}))
    assert files.vocab_path(model_dir) == f"{model_dir}/v.spm.model"


@pytest.mark.parametrize("key,name,value", [("model", "num_layers", "2; import os"),
                                            ("model", "d_model", 64.5),
                                            ("train", "jit_compile", "yes"),
                                            ("decode", "beam_size", True)])
def test_configs_json_value_of_the_wrong_type_is_a_user_error(tmp_path, key, name, value):
    from t2t_lite import hparams

    configs = dict(zip(("model", "train", "decode"),
                       (dataclasses.asdict(c) for c in hparams.load("tiny"))))
    configs[key][name] = value
    model_dir = _model_dir(tmp_path, json.dumps({"vocab_file": "v.spm.model", "vocab_size": 13}))
    (tmp_path / "model" / files.CONFIGS).write_text(json.dumps(configs))
    with pytest.raises(UserError, match=f"{key}.{name} must be "):
        files.load_configs(model_dir)


def test_configs_json_numbers_as_gin_binds_them_still_load(tmp_path):
    from t2t_lite import hparams

    configs = dict(zip(("model", "train", "decode"),
                       (dataclasses.asdict(c) for c in hparams.load("tiny"))))
    configs["decode"]["alpha"] = 1  # `alpha = 1` in gin: an int for a float
    configs["train"]["train_steps"] = 1e5  # `train_steps = 1e5`: a whole float for an int
    model_dir = _model_dir(tmp_path, json.dumps({"vocab_file": "v.spm.model", "vocab_size": 13}))
    (tmp_path / "model" / files.CONFIGS).write_text(json.dumps(configs))
    _, train, decode = files.load_configs(model_dir)
    assert decode.alpha == 1 and train.train_steps == 100000
    assert isinstance(train.train_steps, int)


def test_configs_written_as_gin_bind_the_same_configs_again():
    import gin

    from t2t_lite import hparams
    from t2t_lite.config import DecodeConfig, ModelConfig, TrainConfig

    configs = hparams.load("tiny", ["TrainConfig.budget_dropout = ((0.5, 0.1), (2.0, 0.2))",
                                    "ModelConfig.d_k = 8", "DecodeConfig.alpha = 0.7"])
    text = files.configs_gin(configs)
    assert "# Parameters for ModelConfig:\n" in text and "ModelConfig.d_k = 8\n" in text
    gin.clear_config()
    try:
        gin.parse_config(text)
        assert (ModelConfig(), TrainConfig(), DecodeConfig()) == configs
    finally:
        gin.clear_config()


def test_configs_from_their_values_through_json_are_the_configs():
    from t2t_lite import hparams

    configs = hparams.load("tiny", ["TrainConfig.budget_dropout = ((0.5, 0.1),)"])
    values = json.loads(json.dumps([dataclasses.asdict(c) for c in configs]))
    assert files.configs_from_values(values) == configs
    values[0]["d_model"] = "64"
    with pytest.raises(ValueError, match="model.d_model must be int"):
        files.configs_from_values(values)
