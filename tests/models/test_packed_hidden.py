"""Training on real tokens only (layers/packing.py, Transformer.packed_logits): the same logits,
loss and gradients as the padded model at every real position, and the same training step."""
import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.layers.packing import Packing
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.loss import batch_statistics, token_statistics
from t2t_lite.training.schedule import make_optimizer
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


def _model(norm_position="pre", overrides=()):
    model_config, train_config, _ = hparams.load(
        "tiny", [f"ModelConfig.norm_position = '{norm_position}'", *overrides])
    keras.utils.set_random_seed(0)
    return Transformer(model_config, VOCAB), model_config, train_config


def test_packing_round_trip_and_heads_layout():
    ids = tf.constant([[5, 6, 0, 0], [7, 0, 0, 0], [8, 9, 4, 3]])
    packing = Packing(ids)
    np.testing.assert_array_equal(packing.gather(ids).numpy(), [5, 6, 7, 8, 9, 4, 3])
    np.testing.assert_array_equal(packing.positions.numpy(), [0, 1, 0, 0, 1, 2, 3])
    heads, depth = 2, 3
    rows = tf.reshape(tf.range(7 * heads * depth, dtype=tf.float32), [7, heads * depth])
    padded = packing.unpack_heads(rows, heads)
    assert padded.shape == (3, heads, 4, depth)
    # Each real position holds its row's head slice, as transpose(reshape) of a padded tensor.
    expected = tf.transpose(tf.scatter_nd(tf.where(tf.not_equal(ids, 0)),
                                          tf.reshape(rows, [7, heads, depth]), [3, 4, heads, depth]),
                            [0, 2, 1, 3]).numpy()
    real = tf.not_equal(ids, 0).numpy()
    for b, t in zip(*np.nonzero(real)):
        np.testing.assert_array_equal(padded.numpy()[b, :, t], expected[b, :, t])
    np.testing.assert_array_equal(packing.pack_heads(padded).numpy(), rows.numpy())


def test_pack_heads_gradient_is_zero_at_pads_and_unpack_reads_real_rows():
    ids = tf.constant([[5, 6, 0], [7, 8, 9]])
    packing = Packing(ids)
    padded = tf.random.normal([2, 2, 3, 4])
    upstream = tf.random.normal([5, 8])
    with tf.GradientTape() as tape:
        tape.watch(padded)
        packed = packing.pack_heads(padded)
        objective = tf.reduce_sum(packed * upstream)
    grad = tape.gradient(objective, padded).numpy()
    assert np.all(grad[0, :, 2] == 0)  # the pad position
    np.testing.assert_array_equal(packing.pack_heads(tf.constant(grad)).numpy(), upstream.numpy())
    # unpack's gradient is the upstream at the real positions (pads are masked or dropped).
    rows = tf.random.normal([5, 8])
    with tf.GradientTape() as tape:
        tape.watch(rows)
        objective = tf.reduce_sum(packing.pack_heads(packing.unpack_heads(rows, 2)) * upstream)
    np.testing.assert_allclose(tape.gradient(objective, rows).numpy(), upstream.numpy())


@pytest.mark.parametrize("norm_position", ["pre", "post"])
def test_packed_logits_equal_padded_logits_at_real_positions(norm_position):
    model, _, _ = _model(norm_position)
    batch = _batch()
    padded = model(batch).numpy()
    logits, targets = model.packed_logits(batch)
    real = batch["targets"].numpy() != 0
    np.testing.assert_array_equal(targets.numpy(), batch["targets"].numpy()[real])
    np.testing.assert_allclose(logits.numpy(), padded[real], atol=2e-5)


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
    logits, _ = model.packed_logits(batch)
    np.testing.assert_allclose(logits.numpy(), padded[batch["targets"].numpy() != 0], atol=2e-5)
    logits, _ = model.packed_logits(batch, training=True)
    assert np.isfinite(logits.numpy()).all()


def test_training_step_packed_equals_padded_step():
    """TrainSteps trains on packed rows (model_logits) and on the padded batch (as under XLA):
    the same statistics and the same weights after two steps."""
    batch = _batch(seed=3)
    results = []
    for packed in (True, False):
        model, model_config, train_config = _model("pre")
        optimizer = make_optimizer(model_config, train_config)
        steps = TrainSteps(tf.distribute.get_strategy(), model, optimizer, 0.1, 1)
        steps.jit_compile = not packed  # the padded path, without compiling
        stats = [steps.final_step(batch) for _ in range(2)]
        results.append(([float(s["loss"]) for s in stats],
                        [v.numpy() for v in model.trainable_variables]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5)
    for ours, reference in zip(results[0][1], results[1][1]):
        np.testing.assert_allclose(ours, reference, atol=1e-5)


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
