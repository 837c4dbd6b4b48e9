"""Training on real tokens only (Transformer.packed_hidden): the same logits, loss and gradients
as the padded model at every real position, and the same training step."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.loss import batch_statistics, token_statistics
from t2t_lite.training.schedule import make_schedule, optimizer_with
from t2t_lite.training.steps import TrainSteps

VOCAB = 40


def _batch(seed=0):
    rng = np.random.default_rng(seed)
    inputs = rng.integers(3, VOCAB, size=(4, 9)).astype("int32")
    targets = rng.integers(3, VOCAB, size=(4, 7)).astype("int32")
    # Ragged lengths, one full row each side and one sentence of a single token.
    for row, (source, target) in enumerate([(9, 3), (2, 7), (5, 1), (1, 6)]):
        inputs[row, source:] = 0
        targets[row, target:] = 0
    return {"inputs": tf.constant(inputs), "targets": tf.constant(targets)}


def packed_logits(model, batch, training=False):
    """Logits of the real target tokens: packed_hidden through the pre-softmax projection."""
    hidden, targets = model.packed_hidden(batch, training=training)
    return tf.matmul(hidden, model.output_matrix(hidden.dtype), transpose_b=True), targets


def _model(norm_position="pre", overrides=()):
    model_config, train_config, _ = hparams.load(
        "tiny", [f"ModelConfig.norm_position = '{norm_position}'", *overrides])
    keras.utils.set_random_seed(0)
    return Transformer(model_config, VOCAB), model_config, train_config


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_packed_logits_equal_padded_logits_at_real_positions(norm_position):
    model, _, _ = _model(norm_position)
    batch = _batch()
    padded = model(batch).numpy()
    logits, targets = packed_logits(model, batch)
    real = batch["targets"].numpy() != 0
    np.testing.assert_array_equal(targets.numpy(), batch["targets"].numpy()[real])
    np.testing.assert_allclose(logits.numpy(), padded[real], atol=2e-5)


@pytest.mark.slow
@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_packed_loss_and_gradients_equal_padded(norm_position):
    model, _, _ = _model(norm_position)
    batch = _batch(seed=1)
    with tf.GradientTape(persistent=True) as tape:
        padded = token_statistics(model(batch, training=True), batch["targets"], 0.1)
        packed = batch_statistics(model, batch, True, 0.1)  # packed_hidden + fused projection
    for key in ("loss", "nll", "correct", "tokens"):
        np.testing.assert_allclose(float(packed[key]), float(padded[key]), rtol=1e-5)
    variables = model.trainable_variables
    for ours, reference, variable in zip(tape.gradient(packed["loss"], variables),
                                         tape.gradient(padded["loss"], variables), variables):
        np.testing.assert_allclose(tf.convert_to_tensor(ours).numpy(),
                                   tf.convert_to_tensor(reference).numpy(), atol=2e-5,
                                   err_msg=variable.path)


def test_learned_positions_and_attention_dropout_path_run_packed():
    # Learned position table and attention dropout (random, so only shapes and finiteness).
    model, _, _ = _model("post", ["ModelConfig.position_encoding = 'learned'",
                                  "ModelConfig.attention_dropout = 0.1"])
    batch = _batch(seed=2)
    padded = model(batch).numpy()
    logits, _ = packed_logits(model, batch)
    np.testing.assert_allclose(logits.numpy(), padded[batch["targets"].numpy() != 0], atol=2e-5)
    logits, _ = packed_logits(model, batch, training=True)
    assert np.isfinite(logits.numpy()).all()


@pytest.mark.slow
def test_training_step_packed_equals_padded_step():
    """TrainSteps trains on packed rows (model_logits) and on the padded batch (as under XLA):
    the same statistics and the same weights after two steps."""
    batch = _batch(seed=3)
    results = []
    for packed in (True, False):
        model, model_config, train_config = _model("pre")
        optimizer = optimizer_with(make_schedule(model_config, train_config), train_config)
        steps = TrainSteps(tf.distribute.get_strategy(), model, optimizer, 0.1, 1)
        steps.jit_compile = not packed  # the padded path, without compiling
        stats = [steps.final_step(batch) for _ in range(2)]
        results.append(([float(s["loss"]) for s in stats],
                        [v.numpy() for v in model.trainable_variables]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    # Adam's first steps move each weight by about the learning rate (2.7e-4 here) whatever its
    # gradient's size; where a gradient is near 0, the round-off of another kernel order (some of
    # oneDNN's CPU kernels) changes m / sqrt(v) and so that weight's step. Allow it in a few weights.
    differences = np.concatenate([np.abs(ours - reference).ravel()
                                  for ours, reference in zip(results[0][1], results[1][1])])
    assert np.mean(differences > 1e-5) <= 1e-3, np.sort(differences)[-10:]
    assert differences.max() < 1e-4


def test_batch_statistics_of_other_models_go_through_their_padded_logits():
    class Plain(keras.Model):
        def call(self, features, training=False):
            return tf.one_hot(features["targets"], 5) * 4.0

    batch = {"inputs": tf.constant([[3, 0]]), "targets": tf.constant([[2, 0]])}
    stats = batch_statistics(Plain(), batch, False, 0.0)
    expected = token_statistics(tf.one_hot(batch["targets"], 5) * 4.0, batch["targets"], 0.0)
    assert float(stats["tokens"]) == 1.0 and float(stats["correct"]) == 1.0
    np.testing.assert_allclose(float(stats["loss"]), float(expected["loss"]))


def test_packed_training_under_mixed_bfloat16_matches_padded():
    """bfloat16 compute (the CPU recipe's choice where bf16 units exist): the packed path and
    its fused loss agree with the padded model to bfloat16 precision."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        model, _, _ = _model("pre")
        batch = _batch(seed=4)
        with tf.GradientTape(persistent=True) as tape:
            padded = token_statistics(model(batch, training=True), batch["targets"], 0.1)
            packed = batch_statistics(model, batch, True, 0.1)
        np.testing.assert_allclose(float(packed["loss"]), float(padded["loss"]), rtol=2e-2)
        assert float(packed["tokens"]) == float(padded["tokens"])
        variables = model.trainable_variables
        ours = tf.concat([tf.reshape(tf.convert_to_tensor(g), [-1])
                          for g in tape.gradient(packed["loss"], variables)], 0)
        reference = tf.concat([tf.reshape(tf.convert_to_tensor(g), [-1])
                               for g in tape.gradient(padded["loss"], variables)], 0)
        assert all(g.dtype == tf.float32 for g in (ours, reference))
        relative = float(tf.norm(ours - reference) / tf.norm(reference))
        assert relative < 3e-2, relative
    finally:
        keras.mixed_precision.set_global_policy("float32")
