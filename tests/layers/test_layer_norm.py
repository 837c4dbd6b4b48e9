"""The residual blocks' layer norm (hand-written gradient) against keras.layers.LayerNormalization."""
import keras
import numpy as np
import tensorflow as tf

from t2t_lite.layers.transformer_layers import LayerNorm


def test_layer_norm_values_and_gradients_equal_keras():
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(size=(3, 5, 16)).astype("float32") * 4 + 2)
    upstream = tf.constant(rng.normal(size=(3, 5, 16)).astype("float32"))
    ours, theirs = LayerNorm(epsilon=1e-6), keras.layers.LayerNormalization(epsilon=1e-6)
    ours.build(x.shape)
    theirs.build(x.shape)
    for layer in (ours, theirs):  # non-trivial scale and offset
        layer.gamma.assign(np.linspace(0.5, 2, 16).astype("float32"))
        layer.beta.assign(np.linspace(-1, 1, 16).astype("float32"))
    results = []
    for layer in (ours, theirs):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x)
            objective = tf.reduce_sum(y * upstream)
        results.append([y] + tape.gradient(objective, [x, layer.gamma, layer.beta]))
    for got, expected in zip(*results):
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-5, atol=1e-5)


def test_layer_norm_under_mixed_bfloat16_returns_the_compute_dtype():
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        layer = LayerNorm(epsilon=1e-6)
        y = layer(tf.random.normal([2, 3, 8]))
        assert y.dtype == tf.bfloat16 and layer.gamma.dtype == tf.float32
    finally:
        keras.mixed_precision.set_global_policy("float32")
