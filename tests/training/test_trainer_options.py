"""TrainOptions as isolated.call sends them to its child: JSON values, the configs built back;
TrainResult as the child sends it back; the run settings, which override the set's TrainConfig
field of the same name."""
import dataclasses
import json
import typing

import gin
import pytest

from t2t_lite import hparams
from t2t_lite.config import TrainConfig
from t2t_lite.errors import UserError
from t2t_lite.training.regularisation import RegularisationChoice
from t2t_lite.training.trainer import (RUN_SETTINGS, TrainOptions, TrainResult,
                                       resolve_run_settings)


def test_the_configs_cross_a_process_boundary_as_values():
    configs = hparams.load("tiny", ["TrainConfig.budget_dropout = ((0.5, 0.1),)",
                                    "TrainConfig.mixed_precision = 'mixed_bfloat16'"])
    options = TrainOptions(problem="p", data_dir="d", model_dir="m", configs=configs)
    assert options.configs is configs
    sent = json.loads(json.dumps(dataclasses.asdict(options)))  # what the child reads
    received = TrainOptions(**sent)
    assert received.configs == configs
    assert TrainOptions(problem="p", data_dir="d", model_dir="m").configs is None


def test_the_result_and_its_regularisation_plan_cross_back_as_values():
    result = TrainResult(step=30, stopped_because="train_steps", last_checkpoint="m/ckpt-30",
                         best_metrics=None, total_flops=1e9, last_train_metrics={"loss": 2.0},
                         regularisation=RegularisationChoice(8.0, {"dropout": 0.2}))
    sent = json.loads(json.dumps(dataclasses.asdict(result)))  # what isolated.call returns
    assert sent["regularisation"] == {"passes": 8.0, "rates": {"dropout": 0.2}}
    assert TrainResult(**dict(sent, regularisation=RegularisationChoice(
        **sent["regularisation"]))) == result


def test_each_run_setting_is_an_unset_override_of_its_train_config_field():
    options_types = typing.get_type_hints(TrainOptions)
    config_types = typing.get_type_hints(TrainConfig)
    defaults = {field.name: field.default for field in dataclasses.fields(TrainOptions)}
    assert {"train_steps", "train_minutes", "log_every"} <= set(RUN_SETTINGS)
    for name in RUN_SETTINGS:
        assert options_types[name] == typing.Optional[config_types[name]], name
        assert defaults[name] is None, name


def test_the_resolved_config_takes_what_was_given_and_keeps_the_rest():
    gin.clear_config()  # a set another test in this process loaded binds TrainConfig's fields
    config = TrainConfig(train_steps=100, log_every=10)
    given = TrainOptions(problem="p", data_dir="d", model_dir="m", train_steps=7,
                         train_minutes=0.0)
    resolved = resolve_run_settings(given, config)
    assert (resolved.train_steps, resolved.train_minutes, resolved.log_every) == (7, 0.0, 10)
    assert dataclasses.replace(resolved, train_steps=100) == config
    assert resolve_run_settings(TrainOptions(problem="p", data_dir="d", model_dir="m"),
                                config) == config
    for bad in ({"log_every": 0}, {"train_steps": -1}, {"eval_batches": 0}):
        with pytest.raises(UserError, match="^bad run setting: .* must be >= "):
            resolve_run_settings(dataclasses.replace(given, **bad), config)
