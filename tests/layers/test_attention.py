"""Our multi-head attention against keras.layers.MultiHeadAttention with copied weights."""
import keras
import numpy as np
import pytest

from t2t_lite.layers.attention import MultiHeadAttention, causal_bias, padding_bias

BATCH, T, S, D, HEADS, KEY_DIM = 3, 5, 7, 24, 4, 6


def _pair(use_bias, value_dim):
    ours = MultiHeadAttention(HEADS, KEY_DIM, value_dim, use_bias=use_bias)
    theirs = keras.layers.MultiHeadAttention(HEADS, KEY_DIM, value_dim, use_bias=use_bias)
    rng = np.random.default_rng(0)
    query = rng.normal(size=(BATCH, T, D)).astype("float32")
    source = rng.normal(size=(BATCH, S, D)).astype("float32")
    ours(query, source)
    theirs(query, source)
    # Random biases too, so a bias wired to the wrong place cannot hide behind zeros.
    names = ["query", "key", "value"]
    for name, dense in zip(names, [theirs._query_dense, theirs._key_dense, theirs._value_dense]):
        kernel = rng.normal(size=dense.kernel.shape).astype("float32") * 0.3
        dense.kernel.assign(kernel)
        getattr(ours, f"{name}_kernel").assign(kernel)
        if use_bias:
            bias = rng.normal(size=dense.bias.shape).astype("float32")
            dense.bias.assign(bias)
            getattr(ours, f"{name}_bias").assign(bias)
    kernel = rng.normal(size=theirs._output_dense.kernel.shape).astype("float32") * 0.3
    theirs._output_dense.kernel.assign(kernel)
    ours.output_kernel.assign(kernel)
    if use_bias:
        bias = rng.normal(size=(D,)).astype("float32")
        theirs._output_dense.bias.assign(bias)
        ours.output_bias.assign(bias)
    return ours, theirs, query, source


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("value_dim", [None, 10])
def test_unmasked_matches_keras(use_bias, value_dim):
    ours, theirs, query, source = _pair(use_bias, value_dim)
    out, weights = ours(query, source, return_weights=True)
    ref, ref_weights = theirs(query, source, return_attention_scores=True)
    assert np.abs(np.asarray(out) - np.asarray(ref)).max() <= 1e-5
    assert np.abs(np.asarray(weights) - np.asarray(ref_weights)).max() <= 1e-5


def test_padding_mask_matches_keras():
    ours, theirs, query, source = _pair(True, None)
    lengths = np.array([7, 3, 1])
    real = np.arange(S)[None, :] < lengths[:, None]  # [B, S]
    out = ours(query, source, bias=padding_bias(real))
    ref = theirs(query, source, attention_mask=np.repeat(real[:, None, :], T, axis=1))
    assert np.abs(np.asarray(out) - np.asarray(ref)).max() <= 1e-5


def test_causal_and_padding_masks_match_keras():
    ours, theirs, query, _ = _pair(True, None)
    self_source = query
    lengths = np.array([5, 2, 4])
    real = np.arange(T)[None, :] < lengths[:, None]
    causal = np.tril(np.ones((T, T), dtype=bool))
    bias = padding_bias(real) + causal_bias(T)
    out = ours(query, self_source, bias=bias)
    mask = causal[None, :, :] & real[:, None, :]
    ref = theirs(query, self_source, attention_mask=mask)
    assert np.abs(np.asarray(out) - np.asarray(ref)).max() <= 1e-5


def test_masked_keys_get_zero_weight():
    ours, _, query, source = _pair(True, None)
    real = np.arange(S)[None, :] < np.array([[4], [2], [7]])
    _, weights = ours(query, source, bias=padding_bias(real), return_weights=True)
    weights = np.asarray(weights)  # [B, H, T, S]
    assert np.all(weights[~np.broadcast_to(real[:, None, None, :], weights.shape)] < 1e-12)
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-6)


@pytest.mark.parametrize("heads,key_dim", [(1, 512), (8, 64), (32, 16)])
def test_projection_init_is_the_2d_glorot_of_the_paper_whatever_the_head_count(heads, key_dim):
    # tensor2tensor's [512, 512] projection: std sqrt(2 / (512 + 512)) = 0.0442 for every row A
    # variant. Keras' GlorotUniform on [512, heads, 64] would give 0.0074 at 8 heads.
    layer = MultiHeadAttention(heads, key_dim)
    layer(np.zeros((1, 2, 512), "float32"))
    expected = (2.0 / (512 + heads * key_dim)) ** 0.5
    for kernel in (layer.query_kernel, layer.key_kernel, layer.value_kernel, layer.output_kernel):
        std = float(np.std(kernel.numpy()))
        assert abs(std - expected) / expected < 0.03, (kernel.name, std, expected)


@pytest.mark.parametrize("use_bias", [True, False])
@pytest.mark.parametrize("value_dim", [None, 10])
def test_self_attention_path_matches_keras(use_bias, value_dim):
    # source=None: the self-attention path (queries, keys and values all from `query`).
    ours, theirs, query, _ = _pair(use_bias, value_dim)
    lengths = np.array([5, 2, 4])
    real = np.arange(T)[None, :] < lengths[:, None]
    causal = np.tril(np.ones((T, T), dtype=bool))
    out, weights = ours(query, bias=padding_bias(real) + causal_bias(T), return_weights=True)
    ref, ref_weights = theirs(query, query, attention_mask=causal[None] & real[:, None, :],
                              return_attention_scores=True)
    assert np.abs(np.asarray(out) - np.asarray(ref)).max() <= 1e-5
    assert np.abs(np.asarray(weights) - np.asarray(ref_weights)).max() <= 1e-5


def test_incremental_decoding_projections_equal_the_self_attention_path():
    # The decoder's incremental path projects with project_query / project_key_value and
    # attends with `attend`; it must equal the self-attention path.
    ours, _, query, _ = _pair(True, 10)
    q, k, v = ours.project_query_key_value(query)
    np.testing.assert_allclose(np.asarray(q), np.asarray(ours.project_query(query)), atol=1e-6)
    k2, v2 = ours.project_key_value(query)
    np.testing.assert_allclose(np.asarray(k), np.asarray(k2), atol=1e-6)
    np.testing.assert_allclose(np.asarray(v), np.asarray(v2), atol=1e-6)
    bias = causal_bias(T)
    out, _ = ours.attend(q, k, v, bias)
    np.testing.assert_allclose(np.asarray(out), np.asarray(ours(query, bias=bias)), atol=1e-5)


def _heads_first(x):
    return np.transpose(np.asarray(x), [0, 2, 1, 3])


def test_cached_step_attention_equals_attend_on_the_transposed_cache():
    # One query position per row against its own heads-first cache [N, H, t, k]: the decoder's
    # growing-cache path, which transposes nothing.
    ours, _, query, source = _pair(True, 10)
    q = ours.project_query(query[:, :1])  # [N, 1, H, k]
    k, v = ours.project_key_value(source)  # [N, S, H, k]
    out = ours.attend_cached(q, _heads_first(k), _heads_first(v))
    expected, _ = ours.attend(q, k, v)
    assert out.shape == (BATCH, 1, D)
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), atol=1e-6)


@pytest.mark.parametrize("group", [1, 3])
def test_grouped_query_attention_equals_attention_on_tiled_keys(group):
    # Beam search's cross-attention: `group` consecutive query rows per example share that
    # example's keys/values, which are no longer tiled to every row.
    ours, _, query, source = _pair(True, 10)
    rows = np.repeat(query[:, :1], group, axis=0)
    rows += np.random.default_rng(1).normal(size=rows.shape).astype("float32")  # distinct beams
    q = ours.project_query(rows)
    k, v = ours.project_key_value(source)
    real = np.arange(S)[None, :] < np.array([[S], [4], [2]])
    bias = padding_bias(real)
    out = ours.attend_grouped(q, _heads_first(k), _heads_first(v), bias, group)
    tile = lambda x: np.repeat(np.asarray(x), group, axis=0)
    expected, _ = ours.attend(q, tile(k), tile(v), tile(bias))
    assert out.shape == (BATCH * group, 1, D)
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), atol=1e-5)
