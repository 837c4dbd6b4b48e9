"""Positional encodings against the paper's formula; the shared embedding's scaling."""
import math

import numpy as np

from t2t_lite.layers.embedding import PositionEncoding, SharedEmbedding, sinusoid_table


def test_sinusoids_equal_the_papers_formula():
    d_model = 512
    table = sinusoid_table(300, d_model)
    rng = np.random.default_rng(1)
    for pos, i in zip(rng.integers(0, 300, 50), rng.integers(0, d_model // 2, 50)):
        angle = pos / 10000 ** (2 * i / d_model)
        assert math.isclose(table[pos, 2 * i], math.sin(angle), abs_tol=1e-6)
        assert math.isclose(table[pos, 2 * i + 1], math.cos(angle), abs_tol=1e-6)
    # Position 0: sin 0 = 0 on even dims, cos 0 = 1 on odd dims.
    assert np.all(table[0, 0::2] == 0) and np.all(table[0, 1::2] == 1)


def test_concat_layout_is_tensor2tensors():
    table = sinusoid_table(10, 8, layout="concat")
    interleaved = sinusoid_table(10, 8)
    np.testing.assert_allclose(table[:, :4], interleaved[:, 0::2])
    np.testing.assert_allclose(table[:, 4:], interleaved[:, 1::2])


def test_position_layer_adds_table_with_offset():
    layer = PositionEncoding(20, 8)
    x = np.zeros((2, 3, 8), dtype="float32")
    np.testing.assert_allclose(np.asarray(layer(x, offset=5))[1], sinusoid_table(20, 8)[5:8],
                               atol=1e-6)


def test_learned_positions_are_trainable_weights():
    layer = PositionEncoding(20, 8, kind="learned")
    layer(np.zeros((1, 3, 8), dtype="float32"))
    assert [w.shape for w in layer.trainable_weights] == [(20, 8)]


def test_embedding_scaled_by_sqrt_d_and_projection_shares_matrix():
    layer = SharedEmbedding(11, 16)
    vectors = np.asarray(layer(np.array([[3, 4]])))
    matrix = np.asarray(layer.embeddings)
    np.testing.assert_allclose(vectors[0, 0], matrix[3] * 4.0, rtol=1e-6)
    logits = np.asarray(layer.logits(np.ones((1, 16), dtype="float32")))
    np.testing.assert_allclose(logits[0], matrix.sum(-1), rtol=1e-5)
