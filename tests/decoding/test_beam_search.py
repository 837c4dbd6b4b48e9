"""Beam search on toy decoders whose best sequences are known or can be enumerated."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding import beam_search


def run_beam(model, cache, static, batch_size, mode="graph", **kwargs):
    def search():
        return beam_search(model.tokens_to_logits, cache, static, batch_size, model.vocab_size,
                           **kwargs)

    sequences, scores = search() if mode == "eager" else tf.function(search)()
    return sequences.numpy(), scores.numpy()


def greedy(model, cache, static, batch_size, max_decode_length, decode_lengths=None, eos=1):
    """The reference: the most likely token each step (EOS forced at an example's limit), all
    rows stepped together, eagerly. Returns sequences [B, L] (0-padded) and log probs [B]."""
    limits = np.full(batch_size, max_decode_length) if decode_lengths is None else np.asarray(
        decode_lengths)
    sequences = np.zeros((batch_size, max_decode_length), np.int32)
    log_prob_sums = np.zeros(batch_size, np.float32)
    ended = np.zeros(batch_size, bool)
    ids = tf.zeros([batch_size], tf.int32)
    for index in range(max_decode_length):
        logits, cache = model.tokens_to_logits(ids, tf.constant(index), cache, static)
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32)).numpy()
        tokens = np.where(index + 1 >= limits, eos, log_probs.argmax(axis=1))
        tokens = np.where(ended, 0, tokens)
        log_prob_sums += np.where(ended, 0.0, log_probs[np.arange(batch_size), tokens])
        sequences[:, index] = tokens
        ended |= tokens == eos
        ids = tf.constant(tokens, tf.int32)
    return sequences, log_prob_sums


def trap_table(toys):
    """Greedy takes token 2 (p=.5) into a flat continuation; 3 (p=.4) then EOS (p=.97) is best."""
    vocab = 6
    table = np.full((vocab, vocab), 1.0)
    table[:, toys.PAD] = 0.0
    table[toys.PAD] = [0, 0.1 / 3, 0.5, 0.4, 0.1 / 3, 0.1 / 3]
    table[2] = [0, 0.2, 0.2, 0.2, 0.2, 0.2]
    table[3] = [0, 0.97, 0.0075, 0.0075, 0.0075, 0.0075]
    return toys.TableModel(table)


@pytest.mark.slow
def test_finds_best_sequence_that_greedy_misses(toys):
    model = trap_table(toys)
    sequences, scores = run_beam(model, {}, {}, 1, beam_size=4, alpha=0.6, max_decode_length=6)
    assert toys.strip(sequences[0, 0]) == [3, toys.EOS]
    np.testing.assert_allclose(scores[0, 0], np.log(0.4 * 0.97) / toys.gnmt_penalty(2, 0.6),
                               rtol=1e-5)
    assert np.all(np.diff(scores[0]) <= 0)

    greedy_sequences, _ = greedy(model, {}, {}, 1, max_decode_length=6)
    assert toys.strip(greedy_sequences[0]) == [2, toys.EOS]


def test_wide_beam_equals_exhaustive_search(toys):
    # Vocab 5 (3 real tokens) and 4 positions give 40 sequences; a 40-wide beam keeps them all.
    model = toys.RnnModel(vocab_size=5, seed=0, sharpness=1.0)
    batch_size, max_length, alpha = 2, 4, 0.6
    cache, static = model.initial_state(batch_size)
    sequences, scores = run_beam(model, cache, static, batch_size, beam_size=40, alpha=alpha,
                                 max_decode_length=max_length)
    candidates = list(toys.all_sequences(model.vocab_size, max_length))
    assert len(candidates) == 40
    for b in range(batch_size):
        bias = static["bias"].numpy()[b]
        expected = sorted(
            ((model.sequence_log_prob(seq, bias) / toys.gnmt_penalty(len(seq), alpha), seq)
             for seq in candidates), key=lambda pair: -pair[0])
        np.testing.assert_allclose(scores[b], [score for score, _ in expected], atol=1e-4)
        assert [toys.strip(row) for row in sequences[b]] == [seq for _, seq in expected]


@pytest.mark.slow
def test_beam_of_one_without_length_penalty_is_greedy(toys):
    # EOS (p=.35) is second best at the first step: a width-1 beam must not take it.
    vocab = 6
    table = np.full((vocab, vocab), 1.0)
    table[:, toys.PAD] = 0.0
    table[toys.PAD] = [0, 0.35, 0.6, 0.03, 0.01, 0.01]
    model = toys.TableModel(table)
    sequences, scores = run_beam(model, {}, {}, 1, beam_size=1, alpha=0.0, max_decode_length=5)
    greedy_sequences, log_probs = greedy(model, {}, {}, 1, max_decode_length=5)
    assert toys.strip(greedy_sequences[0])[0] == 2
    np.testing.assert_array_equal(sequences[:, 0], greedy_sequences)
    np.testing.assert_allclose(scores[:, 0], log_probs, rtol=1e-5)

    model = toys.RnnModel(vocab_size=12, seed=1)
    batch_size = 4
    cache, static = model.initial_state(batch_size)
    limits = tf.constant([10, 5, 3, 10])
    sequences, scores = run_beam(model, cache, static, batch_size, beam_size=1, alpha=0.0,
                                 max_decode_length=10, decode_lengths=limits)
    greedy_sequences, log_probs = greedy(model, cache, static, batch_size,
                                         max_decode_length=10, decode_lengths=limits.numpy())
    np.testing.assert_array_equal(sequences[:, 0], greedy_sequences)
    np.testing.assert_allclose(scores[:, 0], log_probs, rtol=1e-5)


def length_trade_off_table(toys):
    """[2, EOS] has the higher probability (.3); [4, 4, 4, 4, 4, EOS] (.3 * .97^5) is longer."""
    vocab, positions = 6, 8
    table = np.full((positions, vocab, vocab), 1.0)
    table[:, :, toys.PAD] = 0.0
    table[0, toys.PAD] = [0, 0.05, 0.5, 0.1, 0.3, 0.05]
    table[1, 2] = [0, 0.6, 0.1, 0.1, 0.1, 0.1]
    table[1:5, 4] = [0, 0.0075, 0.0075, 0.0075, 0.97, 0.0075]
    table[5, 4] = [0, 0.97, 0.0075, 0.0075, 0.0075, 0.0075]
    return toys.TableModel(table)


@pytest.mark.slow
def test_length_penalty_changes_the_winner(toys):
    model = length_trade_off_table(toys)
    short, long = [2, toys.EOS], [4, 4, 4, 4, 4, toys.EOS]
    for alpha, winner in [(0.0, short), (0.6, long)]:
        sequences, scores = run_beam(model, {}, {}, 1, beam_size=4, alpha=alpha,
                                     max_decode_length=8)
        assert toys.strip(sequences[0, 0]) == winner, alpha
        expected = model.sequence_log_prob(winner) / toys.gnmt_penalty(len(winner), alpha)
        np.testing.assert_allclose(scores[0, 0], expected, rtol=1e-5)
        # The loser is still in the n-best, just ranked lower.
        loser = long if winner is short else short
        assert loser in [toys.strip(row) for row in sequences[0]]


@pytest.mark.slow
def test_early_stopping_does_not_change_results(toys):
    model = toys.RnnModel(vocab_size=10, seed=2, eos_bias=1.5)
    batch_size = 3
    cache, static = model.initial_state(batch_size)
    results, steps = {}, {}
    for early in (True, False):
        model.calls = 0
        results[early] = run_beam(model, cache, static, batch_size, mode="eager", beam_size=4,
                                  alpha=0.6, max_decode_length=20, early_stopping=early)
        steps[early] = model.calls
    assert steps[False] == 20
    assert steps[True] < steps[False]  # it really stopped early ...
    np.testing.assert_array_equal(results[True][0], results[False][0])  # ... and lost nothing
    np.testing.assert_allclose(results[True][1], results[False][1], rtol=1e-6)


@pytest.mark.slow
def test_early_stopping_waits_for_a_longer_hypothesis_that_can_still_win(toys):
    # [EOS] (p=.5) finishes first and fills a width-1 beam; the alive [4] (p=.45) is already
    # worse in raw log probability, but [4, 4, 4, 4, 4, EOS] wins under the length penalty.
    vocab, positions = 6, 8
    table = np.full((positions, vocab, vocab), 1.0)
    table[:, :, toys.PAD] = 0.0
    table[0, toys.PAD] = [0, 0.5, 0.02, 0.01, 0.45, 0.02]
    table[1:5, 4] = [0, 0.0075, 0.0075, 0.0075, 0.97, 0.0075]
    table[5, 4] = [0, 0.97, 0.0075, 0.0075, 0.0075, 0.0075]
    model = toys.TableModel(table)
    for early in (True, False):
        sequences, _ = run_beam(model, {}, {}, 1, beam_size=1, alpha=0.6, max_decode_length=8,
                                early_stopping=early)
        assert toys.strip(sequences[0, 0]) == [4, 4, 4, 4, 4, toys.EOS]


@pytest.mark.slow
def test_graph_equals_eager(toys):
    model = toys.RnnModel(vocab_size=16, seed=3)
    batch_size = 3
    cache, static = model.initial_state(batch_size)
    limits = np.array([12, 6, 9])
    settings = dict(beam_size=4, alpha=0.6, max_decode_length=12,
                    decode_lengths=tf.constant(limits))
    eager = run_beam(model, cache, static, batch_size, mode="eager", **settings)
    sequences, scores = run_beam(model, cache, static, batch_size, mode="graph", **settings)
    np.testing.assert_array_equal(sequences, eager[0])
    np.testing.assert_allclose(scores, eager[1], rtol=1e-5)
    toys.assert_ends_with_eos_and_padded(eager[0], limits)
    assert np.all(np.isfinite(eager[1])) and np.all(np.diff(eager[1], axis=1) <= 0)


@pytest.mark.slow
def test_per_example_decode_lengths(toys):
    # EOS is so unlikely that every hypothesis runs to its example's limit, where EOS is forced.
    model = toys.RnnModel(vocab_size=10, seed=4, eos_bias=-20.0)
    batch_size = 3
    cache, static = model.initial_state(batch_size)
    limits = [3, 8, 1]
    sequences, scores = run_beam(model, cache, static, batch_size, beam_size=4, alpha=0.6,
                                 max_decode_length=8, decode_lengths=tf.constant(limits))
    assert sequences.shape == (3, 4, 8) and sequences.dtype == np.int32
    for b, limit in enumerate(limits[:2]):
        assert all(len(toys.strip(row)) == limit for row in sequences[b])
        toys.assert_ends_with_eos_and_padded(sequences[b], [limit])
        # Beams are distinct hypotheses, best first, scored with their own length's penalty.
        assert len({tuple(row) for row in sequences[b]}) == 4
        for row, score in zip(sequences[b], scores[b]):
            log_prob = model.sequence_log_prob(toys.strip(row), static["bias"].numpy()[b])
            np.testing.assert_allclose(score, log_prob / toys.gnmt_penalty(limit, 0.6),
                                       rtol=1e-4)
    # A limit of 1 allows only [EOS]: one hypothesis, the other slots empty with score -inf.
    assert toys.strip(sequences[2, 0]) == [toys.EOS]
    assert np.all(sequences[2, 1:] == 0) and np.all(scores[2, 1:] == -np.inf)


@pytest.mark.slow
def test_finished_examples_leave_and_change_no_output(toys):
    """Examples that end early leave the search: the same sequences and scores as searching each
    example alone, and exactly the beam rows of those searches (so none computed after an
    example is done), eager and in a graph, with the static state per example or tiled."""
    model = toys.RnnModel(vocab_size=12, seed=7, eos_bias=1.0)
    batch_size, beam_size = 7, 3
    cache, static = model.initial_state(batch_size)
    # Different limits: examples leave at different steps, some only at their limit.
    limits = tf.constant([2, 9, 4, 12, 1, 7, 12])

    def search(cache, static, limits, tile_static, rows):
        def counting_logits(ids, index, cache, static):
            rows.assign_add(tf.shape(ids)[0])
            return model.tokens_to_logits(ids, index, cache, static)

        # The toy serves one static row per beam row; untiled, its rows are repeated here.
        def untiled_logits(ids, index, cache, static):
            tiled = {"bias": tf.repeat(static["bias"], beam_size, axis=0)}
            return counting_logits(ids, index, cache, tiled)

        return beam_search(counting_logits if tile_static else untiled_logits, cache, static,
                           tf.shape(limits)[0], model.vocab_size, beam_size=beam_size, alpha=0.6,
                           max_decode_length=12, decode_lengths=limits, tile_static=tile_static)

    def one_example(structure, b):
        return tf.nest.map_structure(lambda t: t[b:b + 1], structure)

    def run(mode, *args):
        sequences, scores = search(*args) if mode == "eager" else tf.function(search)(*args)
        return sequences.numpy(), scores.numpy()

    alone_rows = tf.Variable(0)
    alone = [run("eager", one_example(cache, b), one_example(static, b), limits[b:b + 1], True,
                 alone_rows) for b in range(batch_size)]
    # Without leaving, every example would be computed for the longest one's steps.
    assert int(alone_rows.numpy()) < batch_size * beam_size * 12
    for mode in ("eager", "graph"):
        for tile_static in (True, False):
            batch_rows = tf.Variable(0)
            sequences, scores = run(mode, cache, static, limits, tile_static, batch_rows)
            np.testing.assert_array_equal(sequences, np.concatenate([a[0] for a in alone]))
            # A batch of one may round the toy's matmuls differently: scores to float32.
            np.testing.assert_allclose(scores, np.concatenate([a[1] for a in alone]), rtol=1e-6)
            assert int(batch_rows.numpy()) == int(alone_rows.numpy()), (mode, tile_static)
