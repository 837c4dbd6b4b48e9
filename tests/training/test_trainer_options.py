"""TrainOptions as isolated.call sends them to its child: JSON values, the configs built back."""
import dataclasses
import json

from t2t_lite import hparams
from t2t_lite.training.trainer import TrainOptions


def test_the_configs_cross_a_process_boundary_as_values():
    configs = hparams.load("tiny", ["TrainConfig.budget_dropout = ((0.5, 0.1),)",
                                    "TrainConfig.mixed_precision = 'mixed_bfloat16'"])
    options = TrainOptions(problem="p", data_dir="d", model_dir="m", configs=configs)
    assert options.configs is configs
    sent = json.loads(json.dumps(dataclasses.asdict(options)))  # what the child reads
    received = TrainOptions(**sent)
    assert received.configs == configs
    assert TrainOptions(problem="p", data_dir="d", model_dir="m").configs is None
