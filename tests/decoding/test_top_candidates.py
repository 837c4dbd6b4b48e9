"""Beam search's candidate selection (per-beam top 2K, block-wise top_k) against the full table.

The reference is the straightforward selection: log_softmax over [B*K, V], the must-end rule as
a mask over the vocabulary, alive log probs added to build [B, K*V], and one top_k over it.
"""
import importlib

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.beam_search import NEG_INF

# The module (the package exports the function under the same name).
search = importlib.import_module("t2t_lite.decoding.beam_search")

EOS = 1


def full_table_top_candidates(logits, alive_log_probs, must_end, beam_size, vocab_size, eos_id):
    batch_size = tf.shape(alive_log_probs)[0]
    log_probs = tf.reshape(tf.nn.log_softmax(tf.cast(logits, tf.float32)),
                           [batch_size, beam_size, vocab_size])
    is_eos_token = tf.equal(tf.range(vocab_size), eos_id)[None, None, :]
    log_probs = tf.where(must_end[:, None, None] & ~is_eos_token, NEG_INF, log_probs)
    candidates = tf.reshape(alive_log_probs[:, :, None] + log_probs,
                            [batch_size, beam_size * vocab_size])
    top_log_probs, top_indices = tf.math.top_k(candidates, k=2 * beam_size)
    return top_log_probs, top_indices // vocab_size, top_indices % vocab_size


def random_case(seed, batch_size, beam_size, vocab_size, ties=False):
    rng = np.random.default_rng(seed)
    if ties:  # few distinct values: many exact ties, inside and across beams
        logits = rng.integers(-3, 3, (batch_size * beam_size, vocab_size)).astype(np.float32)
    else:
        logits = rng.normal(0, 3, (batch_size * beam_size, vocab_size)).astype(np.float32)
    alive = rng.normal(-5, 2, (batch_size, beam_size)).astype(np.float32)
    if ties:
        alive = np.round(alive)
    alive[0, 1:] = NEG_INF  # the first step: only beam 0 alive
    must_end = np.arange(batch_size) % 3 == 2
    return tf.constant(logits), tf.constant(alive), tf.constant(must_end)


def assert_same_selection(new, reference):
    new_log_probs, new_beams, new_tokens = (np.asarray(t) for t in new)
    ref_log_probs, ref_beams, ref_tokens = (np.asarray(t) for t in reference)
    np.testing.assert_allclose(new_log_probs, ref_log_probs, rtol=1e-6, atol=1e-5)
    # Dead candidates (below NEG_INF / 2) never reach an output; their tokens are arbitrary.
    real = ref_log_probs > NEG_INF / 2
    np.testing.assert_array_equal(new_log_probs > NEG_INF / 2, real)
    np.testing.assert_array_equal(new_beams[real], ref_beams[real])
    np.testing.assert_array_equal(new_tokens[real], ref_tokens[real])


@pytest.mark.parametrize("vocab_size", [8000, 37, 5])  # block-wise top_k; plain; V < 2K
@pytest.mark.parametrize("ties", [False, True])
def test_selection_equals_full_log_softmax_table(vocab_size, ties):
    beam_size, batch_size = 4, 6
    logits, alive, must_end = random_case(vocab_size, batch_size, beam_size, vocab_size, ties)
    new = search._top_candidates(logits, alive, must_end, beam_size, vocab_size, EOS)
    reference = full_table_top_candidates(logits, alive, must_end, beam_size, vocab_size, EOS)
    assert_same_selection(new, reference)


def test_must_end_rows_offer_only_eos_with_its_own_log_prob():
    beam_size, vocab_size = 3, 8000
    logits, alive, _ = random_case(0, 2, beam_size, vocab_size)
    must_end = tf.constant([True, True])
    log_probs, beams, tokens = search._top_candidates(logits, alive, must_end, beam_size,
                                                      vocab_size, EOS)
    real = log_probs.numpy() > NEG_INF / 2
    assert np.all(tokens.numpy()[real] == EOS)
    eos_log_probs = tf.nn.log_softmax(logits).numpy()[:, EOS].reshape(2, beam_size)
    expected = np.take_along_axis(alive.numpy() + eos_log_probs, beams.numpy(), axis=1)
    np.testing.assert_allclose(log_probs.numpy()[real], expected[real], rtol=1e-6)


@pytest.mark.parametrize("vocab_size", [8000, 6400, 3200])
def test_blockwise_row_top_k_equals_top_k_ties_included(vocab_size):
    rng = np.random.default_rng(vocab_size)
    logits = rng.integers(0, 4, (16, vocab_size)).astype(np.float32)  # ties everywhere
    logits[3] = 0.0  # a row of one value: the lowest token ids win
    logits[4, :50] = -np.inf
    assert search._block_size(vocab_size, 8) is not None
    values, tokens = search._row_top_k(tf.constant(logits), 8, vocab_size)
    expected_values, expected_tokens = tf.math.top_k(logits, k=8)
    np.testing.assert_array_equal(values.numpy(), expected_values.numpy())
    np.testing.assert_array_equal(tokens.numpy(), expected_tokens.numpy())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["eager", "graph"])
def test_beam_search_outputs_equal_the_full_table_search(toys, monkeypatch, mode):
    # Vocabulary 1024 with beam 2 takes the block-wise path; per-example decode lengths exercise
    # the must-end rule mid-search.
    model = toys.RnnModel(vocab_size=1024, seed=3, sharpness=2.0, eos_bias=2.0)
    batch_size = 4
    cache, static = model.initial_state(batch_size)
    kwargs = dict(beam_size=2, alpha=0.6, max_decode_length=7,
                  decode_lengths=tf.constant([7, 3, 1, 5]))

    def run():
        def decode():
            return search.beam_search(model.tokens_to_logits, cache, static, batch_size,
                                      model.vocab_size, **kwargs)
        sequences, scores = decode() if mode == "eager" else tf.function(decode)()
        return sequences.numpy(), scores.numpy()

    assert search._block_size(model.vocab_size, 4) is not None
    sequences, scores = run()
    monkeypatch.setattr(search, "_top_candidates", full_table_top_candidates)
    reference_sequences, reference_scores = run()
    np.testing.assert_array_equal(sequences, reference_sequences)
    np.testing.assert_allclose(scores, reference_scores, rtol=1e-5)
    toys.assert_ends_with_eos_and_padded(sequences[:, :1], limits=[7, 3, 1, 5])
