"""Constrained beam search on toy decoders whose best constrained sequences can be enumerated."""
import types

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.beam_search import beam_search, length_penalty, most_favourable_penalty
from t2t_lite.decoding import constrained_search
from t2t_lite.decoding.constrained_search import constrained_beam_search


def phrases(rows, alternatives=1, width=None):
    """[[phrase, ...] per example] (a phrase: a token list, or a tuple of alternatives) ->
    int32 [B, P, A, T], 0-padded."""
    def alternatives_of(phrase):
        return list(phrase) if isinstance(phrase, tuple) else [phrase]

    most = max([len(r) for r in rows] + [0])
    alts = max([len(alternatives_of(p)) for r in rows for p in r] + [alternatives])
    tokens = max([len(a) for r in rows for p in r for a in alternatives_of(p)] + [width or 1])
    array = np.zeros([len(rows), most, alts, tokens], np.int32)
    for b, row in enumerate(rows):
        for p, phrase in enumerate(row):
            for a, alternative in enumerate(alternatives_of(phrase)):
                array[b, p, a, :len(alternative)] = alternative
    return array


def negatives(rows):
    most = max([len(r) for r in rows] + [0])
    tokens = max([len(p) for r in rows for p in r] + [1])
    array = np.zeros([len(rows), most, tokens], np.int32)
    for b, row in enumerate(rows):
        for q, phrase in enumerate(row):
            array[b, q, :len(phrase)] = phrase
    return array


def run_constrained(model, cache, static, batch_size, positive, negative=None, **kwargs):
    negative = np.zeros([batch_size, 0, 1], np.int32) if negative is None else negative

    @tf.function
    def search():
        return constrained_beam_search(model.tokens_to_logits, cache, static, batch_size,
                                       model.vocab_size, tf.constant(positive),
                                       tf.constant(negative), **kwargs)

    return [t.numpy() for t in search()]


def run_plain(model, cache, static, batch_size, **kwargs):
    @tf.function
    def search():
        return beam_search(model.tokens_to_logits, cache, static, batch_size,
                                       model.vocab_size, **kwargs)

    return [t.numpy() for t in search()]


def contains(sequence, phrase):
    n = len(phrase)
    return any(list(sequence[i:i + n]) == list(phrase) for i in range(len(sequence) - n + 1))


def occurrences(sequence, phrase):
    n = len(phrase)
    return sum(list(sequence[i:i + n]) == list(phrase) for i in range(len(sequence) - n + 1))


@pytest.mark.parametrize("seed, limits, empty", [
    (4, [3, 8, 1], "absent phrases"),
    pytest.param(4, [3, 8, 1], "no phrases", marks=pytest.mark.slow),
    pytest.param(0, None, "absent phrases", marks=pytest.mark.slow),
    pytest.param(7, [2, 9, 4], "no phrases", marks=pytest.mark.slow)])
def test_without_constraints_it_is_the_plain_search_token_for_token(toys, seed, limits, empty):
    model = toys.RnnModel(vocab_size=12, seed=seed, eos_bias=1.0)
    batch_size = 3
    cache, static = model.initial_state(batch_size)
    settings = dict(beam_size=4, alpha=0.6, max_decode_length=9,
                    decode_lengths=None if limits is None else tf.constant(limits))
    positive = (np.zeros([batch_size, 0, 1, 1], np.int32) if empty == "no phrases"
                else np.zeros([batch_size, 3, 2, 4], np.int32))
    sequences, scores, unmet = run_constrained(model, cache, static, batch_size, positive,
                                               **settings)
    plain_sequences, plain_scores = run_plain(model, cache, static, batch_size, **settings)
    np.testing.assert_array_equal(sequences, plain_sequences)
    np.testing.assert_array_equal(scores, plain_scores)
    assert not unmet.any()


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_wide_beam_finds_the_best_sequence_that_holds_the_phrase(toys):
    # Vocab 5 (3 real tokens), 4 positions: 40 sequences, all kept by a 40-wide beam; the
    # n-best is every sequence holding [2, 3] by score, then the others.
    model = toys.RnnModel(vocab_size=5, seed=0, sharpness=1.0)
    batch_size, max_length, alpha, phrase = 2, 4, 0.6, [2, 3]
    cache, static = model.initial_state(batch_size)
    sequences, scores, unmet = run_constrained(
        model, cache, static, batch_size, phrases([[phrase]] * batch_size), beam_size=40,
        alpha=alpha, max_decode_length=max_length)
    candidates = list(toys.all_sequences(model.vocab_size, max_length))
    for b in range(batch_size):
        bias = static["bias"].numpy()[b]
        expected = sorted(
            ((not contains(seq, phrase),
              model.sequence_log_prob(seq, bias) / toys.gnmt_penalty(len(seq), alpha), seq)
             for seq in candidates), key=lambda item: (item[0], -item[1]))
        got = [toys.strip(row) for row in sequences[b]]
        assert got == [seq for _, _, seq in expected]
        np.testing.assert_allclose(scores[b], [score for _, score, _ in expected], atol=1e-4)
        np.testing.assert_array_equal(unmet[b], [int(missing) for missing, _, _ in expected])


def test_a_known_best_constrained_answer_with_a_narrow_beam(toys):
    # Unconstrained, [2, EOS] wins (p=.45); with the phrase [4] the best holder is [3, 4, EOS]
    # (.3 * .9 * .9), over [4, EOS] (.1 * .9) and [2, 4, EOS] (.5 * .02 * .9). A beam of 3
    # keeps [4] in bank 1 and [2], [3] in bank 0, so [3] lives to be extended with 4.
    vocab = 6
    table = np.full((vocab, vocab), 1e-3)
    table[:, toys.PAD] = 0.0
    table[toys.PAD] = [0, 0.01, 0.5, 0.3, 0.1, 0.09]
    table[2] = [0, 0.9, 0.03, 0.03, 0.02, 0.02]
    table[3] = [0, 0.05, 0.02, 0.01, 0.9, 0.02]
    table[4] = [0, 0.9, 0.03, 0.03, 0.02, 0.02]
    table[5] = [0, 0.9, 0.03, 0.03, 0.02, 0.02]
    model = toys.TableModel(table)
    plain, _ = run_plain(model, {}, {}, 1, beam_size=3, alpha=0.0, max_decode_length=5)
    assert toys.strip(plain[0, 0]) == [2, toys.EOS]
    sequences, scores, unmet = run_constrained(model, {}, {}, 1, phrases([[[4]]]), beam_size=3,
                                               alpha=0.0, max_decode_length=5)
    assert toys.strip(sequences[0, 0]) == [3, 4, toys.EOS] and unmet[0, 0] == 0
    # The score is the model's own log probability: the constraint adds no bonus.
    np.testing.assert_allclose(scores[0, 0], model.sequence_log_prob([3, 4, toys.EOS]),
                               rtol=1e-5)


@pytest.mark.slow
def test_alternatives_any_one_satisfies(toys):
    model = toys.RnnModel(vocab_size=10, seed=5)
    cache, static = model.initial_state(1)
    choice = ([7, 8], [6])
    sequences, _, unmet = run_constrained(model, cache, static, 1, phrases([[choice]]),
                                          beam_size=4, alpha=0.6, max_decode_length=8)
    best = toys.strip(sequences[0, 0])
    assert unmet[0, 0] == 0 and (contains(best, [7, 8]) or contains(best, [6]))


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_many_phrases_fit_a_fixed_beam_and_all_are_met(toys):
    # Five phrases (one of them twice) on a beam of 2: the beam does not grow, and a phrase
    # given twice appears twice.
    model = toys.RnnModel(vocab_size=12, seed=6)
    cache, static = model.initial_state(2)
    rows = [[[3], [5, 6], [9], [9], [10, 11, 2]], [[4, 4], [7]]]
    sequences, scores, unmet = run_constrained(model, cache, static, 2, phrases(rows),
                                               beam_size=2, alpha=0.6, max_decode_length=16)
    assert sequences.shape[:2] == (2, 2) and scores.shape == (2, 2)
    for b, row in enumerate(rows):
        best = toys.strip(sequences[b, 0])
        assert unmet[b, 0] == 0, best
        for phrase in row:
            assert occurrences(best, phrase) >= row.count(phrase), (best, phrase)
        np.testing.assert_allclose(
            scores[b, 0], model.sequence_log_prob(best, static["bias"].numpy()[b])
            / toys.gnmt_penalty(len(best), 0.6), rtol=1e-4)


@pytest.mark.slow
def test_each_line_of_a_mixed_batch_gets_its_own_constraints(toys):
    """The fairseq batch bug: constraints must stay with their own example. Each example's
    result in a batch equals its result searched alone, and the unconstrained one equals the
    plain search."""
    model = toys.RnnModel(vocab_size=12, seed=8, eos_bias=0.5)
    batch_size = 4
    cache, static = model.initial_state(batch_size)
    rows = [[[5]], [], [[7, 8], [3]], [([9], [10])]]
    negative_rows = [[], [[4]], [], [[2]]]
    settings = dict(beam_size=3, alpha=0.6, max_decode_length=10)
    together = run_constrained(model, cache, static, batch_size, phrases(rows, width=2),
                               negatives(negative_rows), **settings)
    for b in range(batch_size):
        alone = run_constrained(model, *tf.nest.map_structure(lambda t: t[b:b + 1],
                                                              (cache, static)), 1,
                                phrases([rows[b]], width=2), negatives([negative_rows[b]]),
                                **settings)
        np.testing.assert_array_equal(together[0][b], alone[0][0])
        np.testing.assert_allclose(together[1][b], alone[1][0], rtol=1e-5)
    plain = run_plain(model, *tf.nest.map_structure(lambda t: t[1:2], (cache, static)), 1,
                      **settings)
    negative_free = run_constrained(model, *tf.nest.map_structure(lambda t: t[1:2],
                                                                  (cache, static)), 1,
                                    phrases([[]]), **settings)
    np.testing.assert_array_equal(negative_free[0][0], plain[0][0])


def test_a_negative_phrase_never_appears(toys):
    # Wide beam over every sequence: the n-best are the sequences without [3, 2] by score.
    model = toys.RnnModel(vocab_size=5, seed=1, sharpness=1.0)
    max_length, alpha, banned = 4, 0.6, [3, 2]
    cache, static = model.initial_state(1)
    sequences, scores, _ = run_constrained(
        model, cache, static, 1, phrases([[]]), negatives([[banned, [4, 4, 4]]]), beam_size=40,
        alpha=alpha, max_decode_length=max_length)
    bias = static["bias"].numpy()[0]
    allowed = [seq for seq in toys.all_sequences(model.vocab_size, max_length)
               if not contains(seq, banned) and not contains(seq, [4, 4, 4])]
    expected = sorted(((model.sequence_log_prob(seq, bias) / toys.gnmt_penalty(len(seq), alpha),
                        seq) for seq in allowed), key=lambda item: -item[0])
    got = [toys.strip(row) for row, score in zip(sequences[0], scores[0]) if score > -np.inf]
    assert got == [seq for _, seq in expected]


@pytest.mark.slow
def test_a_phrase_that_cannot_fit_returns_the_best_that_meets_the_most(toys):
    # A limit of 3 tokens (EOS included) leaves room for [5, 6] but not also for [7, 8].
    model = toys.RnnModel(vocab_size=10, seed=9)
    cache, static = model.initial_state(1)
    sequences, scores, unmet = run_constrained(
        model, cache, static, 1, phrases([[[5, 6], [7, 8]]]), beam_size=4, alpha=0.6,
        max_decode_length=3)
    best = toys.strip(sequences[0, 0])
    assert unmet[0, 0] == 1 and len(best) <= 3 and np.isfinite(scores[0, 0])
    assert contains(best, [5, 6]) or contains(best, [7, 8])


def random_phrases(rng, batch_size, count, alternatives, vocab_size):
    """int32 [B, count, alternatives, 2]: 1-2 token alternatives of random tokens."""
    positive = np.zeros([batch_size, count, alternatives, 2], np.int32)
    positive[..., 0] = rng.integers(2, vocab_size, size=positive.shape[:3])
    positive[..., 1] = np.where(rng.random(positive.shape[:3]) < 0.5,
                                rng.integers(2, vocab_size, size=positive.shape[:3]), 0)
    return positive


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_a_beam_with_few_phrase_tokens_offers_them_all(toys, monkeypatch):
    # 3 phrases of 2 alternatives: at most 12 forced tokens a beam, within the bound, so the
    # search is the one that offers every phrase token.
    model = toys.RnnModel(vocab_size=20, seed=3, eos_bias=0.5)
    cache, static = model.initial_state(3)
    positive = random_phrases(np.random.default_rng(0), 3, 3, 2, 20)
    settings = dict(beam_size=4, alpha=0.6, max_decode_length=12)
    bounded = run_constrained(model, cache, static, 3, positive, **settings)
    monkeypatch.setattr(constrained_search, "FORCED_PER_BEAM", 10 ** 6)
    unbounded = run_constrained(model, cache, static, 3, positive, **settings)
    for got, want in zip(bounded, unbounded):
        np.testing.assert_array_equal(got, want)


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_more_phrase_tokens_than_a_beam_offers_are_all_met(toys):
    # 12 phrases of 3 alternatives: up to 72 forced tokens a beam, 16 offered a step.
    model = toys.RnnModel(vocab_size=40, seed=2, eos_bias=0.5)
    cache, static = model.initial_state(4)
    positive = random_phrases(np.random.default_rng(2), 4, 12, 3, 40)
    sequences, scores, unmet = run_constrained(model, cache, static, 4, positive, beam_size=4,
                                               alpha=0.6, max_decode_length=40)
    assert not unmet[:, 0].any()
    for b in range(4):
        best = toys.strip(sequences[b, 0])
        for phrase in positive[b]:
            assert any(contains(best, [t for t in alternative if t])
                       for alternative in phrase), (best, phrase)


def test_an_example_with_a_phrase_stops_at_the_next_length_penalty(toys, monkeypatch):
    # The phrase [4] is met early ([4, EOS], [5, 4, EOS], ...), while the alive beams that loop
    # on token 3 lose 0.51 a step: divided by the penalty of the next length they fall below
    # the third finished score after 10 steps; divided by the penalty at the length limit (the
    # exact bound) only after 19. The n-best is the one the search finds without stopping early.
    table = np.full((6, 6), 1e-3)
    table[:, toys.PAD] = 0.0
    table[toys.PAD] = [0, 0.05, 0.05, 0.6, 0.2, 0.1]
    table[2] = [0, 0.5, 0.2, 0.1, 0.001, 0.2]
    table[3] = [0, 0.01, 0.19, 0.6, 0.001, 0.2]
    table[4] = [0, 0.9, 0.05, 0.05, 0.001, 0.001]
    table[5] = [0, 0.1, 0.1, 0.1, 0.6, 0.1]
    model = toys.TableModel(table)

    def search(**settings):
        steps = []

        def tokens_to_logits(ids, index, cache, static):
            steps.append(index)  # eager: once a step
            return model.tokens_to_logits(ids, index, cache, static)

        results = constrained_beam_search(
            tokens_to_logits, {}, {}, 1, model.vocab_size, phrases([[[4]]]),
            np.zeros([1, 0, 1], np.int32), beam_size=3, alpha=0.6, max_decode_length=40,
            **settings)
        return len(steps), [t.numpy() for t in results]

    steps, results = search()
    full_steps, full_results = search(early_stopping=False)
    monkeypatch.setattr(constrained_search, "_next_length_penalty",
                        lambda alpha: most_favourable_penalty)
    exact_steps, exact_results = search()
    assert (steps, exact_steps, full_steps) == (10, 19, 40)
    for got, exact, full in zip(results, exact_results, full_results):
        np.testing.assert_array_equal(got, full)
        np.testing.assert_array_equal(exact, full)


def test_only_an_example_with_a_positive_phrase_stops_at_the_next_length_penalty():
    sizes = tf.constant([[0, 0], [2, 0], [0, 1]])
    beams = types.SimpleNamespace(constraints=types.SimpleNamespace(sizes=sizes),
                                  max_penalty=tf.constant([9.0, 9.0, 9.0]))
    penalty = constrained_search._next_length_penalty(tf.constant(0.6))(beams, tf.constant(3))
    next_length = length_penalty(5, 0.6).numpy()
    np.testing.assert_allclose(penalty.numpy(), [9.0, next_length, next_length])
