"""FusedAdam (one ResourceApplyAdam per variable) computes Keras' Adam, step for step."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams, models
from t2t_lite.training.fused_adam import FusedAdam
from t2t_lite.training.loss import token_statistics

pytestmark = pytest.mark.slow  # every test here runs end to end

VOCAB = 40


def _batches(count, seed=0):
    rng = np.random.default_rng(seed)
    return [(rng.integers(3, VOCAB, size=(8, 7)).astype(np.int32),
             rng.integers(3, VOCAB, size=(8, 6)).astype(np.int32)) for _ in range(count)]


def _train(optimizer_class, batches):
    keras.utils.set_random_seed(4)
    model = models.build(hparams.load("tiny")[0], VOCAB)
    optimizer = optimizer_class(learning_rate=3e-3, beta_1=0.9, beta_2=0.98, epsilon=1e-9)

    @tf.function
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            logits = model({"inputs": inputs, "targets": targets}, training=False)
            stats = token_statistics(logits, targets, label_smoothing=0.1)
            loss = stats["loss"] / stats["tokens"]
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                      model.trainable_variables))

    for inputs, targets in batches:
        step(inputs, targets)
    return model, optimizer


def test_fused_adam_follows_keras_adam_step_for_step():
    batches = _batches(6)
    untrained, _ = _train(keras.optimizers.Adam, [])
    reference, reference_optimizer = _train(keras.optimizers.Adam, batches)
    fused, fused_optimizer = _train(FusedAdam, batches)
    for start, want, got in zip(untrained.trainable_variables, reference.trainable_variables,
                                fused.trainable_variables):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-6)
        # Six steps at lr 3e-3 move every weight far more than the tolerance.
        assert np.max(np.abs(want.numpy() - start.numpy())) > 1e-3, want.path
    for want, got in zip(reference_optimizer.variables, fused_optimizer.variables):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=2e-5, atol=1e-8)


def test_a_keras_adam_checkpoint_resumes_into_fused_adam(tmp_path):
    """A checkpoint of Keras' Adam resumes into FusedAdam with its optimizer state."""
    model, optimizer = _train(keras.optimizers.Adam, _batches(2))
    path = tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path / "ckpt"))
    resumed_model, resumed = _train(FusedAdam, _batches(1, seed=9))  # built, other values
    tf.train.Checkpoint(model=resumed_model, optimizer=resumed).restore(path).assert_consumed()
    for want, got in zip(optimizer.variables, resumed.variables):
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
