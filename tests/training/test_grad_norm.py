"""The gradient norm a training step reports is the global norm of the applied gradient."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.loss import token_statistics
from t2t_lite.training.schedule import make_schedule, optimizer_with
from t2t_lite.training.steps import TrainSteps

pytestmark = pytest.mark.slow  # every test here runs end to end


def _model():
    model_config, train_config, _ = hparams.load("tiny")
    keras.utils.set_random_seed(0)
    return Transformer(model_config, 30), model_config, train_config


def test_reported_grad_norm_is_the_global_norm_of_the_mean_token_gradient():
    batch = {"inputs": tf.constant([[5, 6, 7, 1], [8, 1, 0, 0]]),
             "targets": tf.constant([[9, 10, 1], [11, 1, 0]])}
    model, _, _ = _model()
    with tf.GradientTape() as tape:
        stats = token_statistics(model(batch, training=True), batch["targets"], 0.1)
        loss = stats["loss"] / stats["tokens"]
    expected = tf.linalg.global_norm(
        [tf.convert_to_tensor(g) for g in tape.gradient(loss, model.trainable_variables)])

    model, model_config, train_config = _model()
    optimizer = optimizer_with(make_schedule(model_config, train_config), train_config)
    steps = TrainSteps(tf.distribute.get_strategy(), model, optimizer, 0.1, 1)
    reported = steps.final_step(batch)["grad_norm"]
    np.testing.assert_allclose(float(reported), float(expected), rtol=1e-5)
    assert float(expected) > 0
