"""The divergence guard: a run that diverges before its first checkpoint says that none was
written (not "the last good checkpoint (None) was kept"), and nothing is saved."""
import pytest
import tensorflow as tf

from t2t_lite import problems
from t2t_lite.data import datagen
from t2t_lite.errors import UserError
from t2t_lite.model_dir import loaded
from t2t_lite.training.trainer import TrainOptions, train

pytestmark = pytest.mark.slow  # every test here runs end to end

PARAMS = ["max_length=8", "train_samples=500", "eval_samples=50"]


def test_nan_stop_on_a_fresh_run_says_no_checkpoint_was_written(tmp_path):
    data_dir, model_dir = str(tmp_path / "data"), str(tmp_path / "model")
    datagen.run(problems.build("algorithmic_reverse", PARAMS), data_dir)
    with pytest.raises(UserError) as stopped:
        train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS,
                           data_dir=data_dir, model_dir=model_dir, hparams_set="tiny",
                           train_steps=20, bleu_sentences=0, eval_batches=1,
                           gin_params=["TrainConfig.learning_rate_scale = 1e30"]))
    message = str(stopped.value)
    assert message.startswith("training diverged at step ")
    assert "no checkpoint was written" in message and "None" not in message
    assert tf.train.latest_checkpoint(model_dir) is None
    with pytest.raises(UserError, match="no checkpoint in .*train first"):
        loaded.load(model_dir)
