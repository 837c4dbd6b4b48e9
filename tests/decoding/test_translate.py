"""Beam search over the real (tiny, random) Transformer: cached decoding equals an uncached one."""
import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.decoding import beam_search
from t2t_lite.decoding.translate import input_lengths, translate
from t2t_lite.models.transformer import Transformer

VOCAB = 40


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(7)
    config = dataclasses.replace(hparams.load("tiny")[0], max_length=16)
    model = Transformer(config, VOCAB)
    # Initial weights make a fresh model repeat pad; larger random matrices make its choices
    # depend on the prefix (e.g. alternating tokens), so a broken cache would show.
    rng = np.random.default_rng(1)
    for weight in model.weights:
        if len(weight.shape) == 2:
            scale = 2.0 / np.sqrt(weight.shape[0])
            weight.assign(rng.normal(0, scale, weight.shape).astype("float32"))
    return model


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    ids = rng.integers(2, VOCAB, size=(3, 6)).astype("int32")
    for row, length in enumerate([6, 4, 2]):
        ids[row, length - 1], ids[row, length:] = 1, 0
    return tf.constant(ids)


def uncached_tokens_to_logits(model):
    """Keeps the decoded prefix in the cache and re-runs the teacher-forced decoder on all of it.

    The prefix is the decoder input (start symbol first); the full pass takes targets, which are
    the decoder input shifted left. Causal masking makes positions after `index` irrelevant.
    """
    def tokens_to_logits(ids, index, cache, encoded):
        width = tf.shape(cache["prefix"])[1]
        prefix = tf.where(tf.range(width)[None, :] == index, ids[:, None], cache["prefix"])
        targets = tf.concat([prefix[:, 1:], tf.zeros_like(prefix[:, :1])], axis=1)
        logits = model.decode(targets, encoded, training=False)
        return tf.gather(logits, index, axis=1), {"prefix": prefix}

    return tokens_to_logits


@pytest.mark.slow
def test_cached_beam_search_equals_uncached_reference(model, inputs):
    extra_length = 5
    sequences, scores = translate(model, inputs, beam_size=3, alpha=0.6,
                                  extra_length=extra_length)
    width = sequences.shape[-1]
    assert width == 6 + extra_length

    encoded = model.encode(inputs, training=False)
    reference_sequences, reference_scores = beam_search(
        uncached_tokens_to_logits(model), {"prefix": tf.zeros([3, width], tf.int32)}, encoded,
        batch_size=3, vocab_size=VOCAB, beam_size=3, alpha=0.6, max_decode_length=width,
        decode_lengths=input_lengths(inputs) + extra_length)
    np.testing.assert_array_equal(sequences.numpy(), reference_sequences.numpy())
    np.testing.assert_allclose(scores.numpy(), reference_scores.numpy(), rtol=1e-4, atol=1e-5)
    # Every hypothesis ends with EOS within input length + extra_length, then only padding.
    limits = input_lengths(inputs).numpy() + extra_length
    for b, limit in enumerate(limits):
        for row in sequences.numpy()[b]:
            end = list(row).index(1)
            assert end < limit and not row[end + 1:].any()


@pytest.mark.parametrize("extra_length", [3, pytest.param(50, marks=pytest.mark.slow)])
def test_translation_in_a_tf_function_equals_eager(model, inputs, extra_length):
    eager_sequences, eager_scores = translate(model, inputs, beam_size=2, alpha=0.6,
                                              extra_length=extra_length)
    # Width: source width 6 + extra_length, capped at the model's max_length (16).
    width = min(6 + extra_length, 16)
    assert eager_sequences.shape == (3, 2, width)
    # alpha and extra_length as runtime inputs: one trace serves any setting.
    translate_batch = tf.function(
        lambda inputs, alpha, extra_length: translate(model, inputs, beam_size=2, alpha=alpha,
                                                      extra_length=extra_length),
        autograph=False, input_signature=[tf.TensorSpec([None, None], tf.int32),
                                          tf.TensorSpec([], tf.float32),
                                          tf.TensorSpec([], tf.int32)])
    sequences, scores = translate_batch(inputs, tf.constant(0.6), tf.constant(extra_length))
    assert sequences.shape[-1] == width
    np.testing.assert_array_equal(sequences.numpy(), eager_sequences.numpy())
    np.testing.assert_allclose(scores.numpy(), eager_scores.numpy(), rtol=1e-4, atol=1e-5)


def test_empty_batch(model):
    sequences, scores = translate(model, tf.zeros([0, 5], tf.int32), beam_size=2)
    assert sequences.shape == (0, 2, 16) and scores.shape == (0, 2)
