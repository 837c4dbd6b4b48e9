"""Packed real-token rows (layers/packing.py) and attention on them."""
import numpy as np
import tensorflow as tf

from t2t_lite.layers.attention import MultiHeadAttention, causal_bias, padding_bias
from t2t_lite.layers.packing import Packing


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


def test_packed_attention_equals_padded_attention_at_real_positions():
    ids = tf.constant([[5, 6, 0, 0], [7, 0, 0, 0], [8, 9, 4, 3]])
    source_ids = tf.constant([[5, 6, 2, 0, 0], [7, 3, 0, 0, 0], [8, 9, 4, 3, 2]])
    packing, source_packing = Packing(ids), Packing(source_ids)
    rng = np.random.default_rng(2)
    x = tf.constant(rng.normal(size=(3, 4, 16)).astype("float32"))
    source = tf.constant(rng.normal(size=(3, 5, 16)).astype("float32"))
    attention = MultiHeadAttention(4, 4, 6)
    attention(x)
    real = packing.mask.numpy()
    self_bias = padding_bias(packing.mask) + causal_bias(4)
    rows = attention.call_packed(packing.gather(x), packing, self_bias)
    np.testing.assert_allclose(rows.numpy(), attention(x, bias=self_bias).numpy()[real],
                               atol=1e-5)
    cross_bias = padding_bias(source_packing.mask)
    rows = attention.call_packed(packing.gather(x), packing, cross_bias,
                                 source_rows=source_packing.gather(source),
                                 source_packing=source_packing)
    np.testing.assert_allclose(rows.numpy(), attention(x, source, bias=cross_bias).numpy()[real],
                               atol=1e-5)
