"""TrainOptions as isolated.call sends them to its child: JSON values, the configs built back;
TrainResult as the child sends it back."""
import dataclasses
import json

from t2t_lite import hparams
from t2t_lite.training.regularisation import RegularisationChoice
from t2t_lite.training.trainer import TrainOptions, TrainResult


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
