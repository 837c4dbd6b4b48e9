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


def test_cached_steps_equal_the_causal_self_attention_path():
    # Incremental decoding: position by position from an empty cache, each step appending its
    # own key and value, equals one causal self-attention pass.
    ours, _, query, _ = _pair(True, 10)
    expected = np.asarray(ours(query, bias=causal_bias(T)))
    cache = ours.initial_cache(query[:, :0])
    assert cache["key"].shape == (BATCH, HEADS, 0, KEY_DIM)
    for t in range(T):
        out, cache = ours.call_cached(query[:, t:t + 1], cache, update_cache=True)
        assert out.shape == (BATCH, 1, D)
        np.testing.assert_allclose(np.asarray(out)[:, 0], expected[:, t], atol=1e-5)
    assert cache["value"].shape == (BATCH, HEADS, T, 10)


@pytest.mark.parametrize("group", [1, 3])
def test_grouped_cached_cross_attention_equals_attention_on_tiled_source(group):
    # Beam search's cross-attention: `group` consecutive query rows per example share that
    # example's cached keys/values, which are not tiled to every row.
    ours, _, query, source = _pair(True, 10)
    rows = np.repeat(query[:, :1], group, axis=0)
    rows += np.random.default_rng(1).normal(size=rows.shape).astype("float32")  # distinct beams
    real = np.arange(S)[None, :] < np.array([[S], [4], [2]])
    bias = padding_bias(real)
    cache = ours.initial_cache(source)
    out, unchanged = ours.call_cached(rows, cache, bias, queries_per_example=group)
    assert unchanged is cache
    tile = lambda x: np.repeat(np.asarray(x), group, axis=0)  # noqa: E731
    expected = ours(rows, tile(source), bias=tile(bias))
    assert out.shape == (BATCH * group, 1, D)
    np.testing.assert_allclose(np.asarray(out), np.asarray(expected), atol=1e-5)
