"""A phrase is whole words: the constrained search on toy decoders whose tokens start words or
continue them (as SentencePiece's "▁Datei" and "format" in "Dateiformat")."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding import phrase_matching
from t2t_lite.decoding.constrained_search import constrained_beam_search
from t2t_lite.decoding.phrase_matching import WORD_END, WORD_START

END = WORD_END
# Toy vocabulary: 0 pad, 1 EOS, 2 "▁Datei", 3 "format" (continues a word), 4 "▁ist",
# 5 "en" (continues a word), 6 ":" (punctuation: starts a word boundary).
STARTS = np.array([True, True, True, False, True, False, True])


def _run(model, positive, negative=None, starts=STARTS, batch_size=1, **kwargs):
    positive = np.asarray(positive, np.int32)
    negative = (np.zeros([batch_size, 0, 1], np.int32) if negative is None
                else np.asarray(negative, np.int32))

    @tf.function
    def search():
        return constrained_beam_search(model.tokens_to_logits, {}, {}, batch_size,
                                       model.vocab_size, tf.constant(positive),
                                       tf.constant(negative), word_starts=starts, **kwargs)

    return [t.numpy() for t in search()]


def _table(toys, preferred):
    """A position-independent chain that prefers `preferred` strongly: table[prev, next]."""
    vocab = len(STARTS)
    table = np.full((vocab, vocab), 0.02)
    table[:, toys.PAD] = 0.0
    previous = toys.PAD
    for token in preferred:
        table[previous, token] = 2.0
        previous = token
    return toys.TableModel(table)


def _words(sequence, starts=STARTS):
    """The whole-word occurrences of token 2 ("▁Datei") in a sequence (EOS included)."""
    return sum(1 for i, token in enumerate(sequence[:-1])
               if token == 2 and starts[sequence[i + 1]])


def test_a_phrase_met_only_where_the_word_ends_and_never_run_on(toys):
    # The model wants "Dateiformat" ([2, 3]); the phrase "Datei" must stand as a word.
    model = _table(toys, [2, 3, toys.EOS])
    plain, _, unmet = _run(model, [[[[2]]]], beam_size=2, alpha=0.0, max_decode_length=6)
    assert toys.strip(plain[0, 0]) == [2, 3, toys.EOS] and unmet[0, 0] == 0  # token-level
    sequences, scores, unmet = _run(model, [[[[2, END]]]], beam_size=2, alpha=0.0,
                                    max_decode_length=6)
    for row, missing in zip(sequences[0], unmet[0]):
        best = toys.strip(row)
        assert missing == 0 and _words(best) >= 1, best
        # No run-on: "▁Datei" is never followed by a token that continues its word before the
        # phrase is met.
        first = best.index(2)
        assert STARTS[best[first + 1]], best


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_eos_ends_the_phrases_word(toys):
    model = _table(toys, [4, 2, toys.EOS])
    sequences, _, unmet = _run(model, [[[[2, END]]]], beam_size=2, alpha=0.0,
                               max_decode_length=6)
    assert toys.strip(sequences[0, 0]) == [4, 2, toys.EOS] and unmet[0, 0] == 0


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_a_phrase_ending_in_punctuation_needs_no_word_end(toys):
    # "Datei:" ends a word by its own last token.
    model = _table(toys, [2, 6, 3, toys.EOS])
    sequences, _, unmet = _run(model, [[[[2, 6]]]], beam_size=2, alpha=0.0,
                               max_decode_length=6)
    assert unmet[0, 0] == 0 and toys.strip(sequences[0, 0])[:2] == [2, 6]


def _all_sequences(toys, max_length):
    return list(toys.all_sequences(len(STARTS), max_length))


def test_a_whole_word_negative_bars_the_word_not_the_compound(toys):
    # Every sequence fits the beam: the n-best are the sequences without the word "Datei",
    # by score; "Dateiformat" and "Dateien" stay.
    model = toys.RnnModel(vocab_size=len(STARTS), seed=3, sharpness=1.0)
    model.tokens_to_logits_ = model.tokens_to_logits
    cache, static = model.initial_state(1)
    max_length, alpha = 3, 0.6
    candidates = _all_sequences(toys, max_length)

    @tf.function
    def search():
        return constrained_beam_search(
            model.tokens_to_logits, cache, static, 1, model.vocab_size,
            tf.zeros([1, 0, 1, 1], tf.int32), tf.constant([[[2, END]]], tf.int32),
            beam_size=len(candidates), alpha=alpha, max_decode_length=max_length,
            word_starts=STARTS)

    sequences, scores, _ = [t.numpy() for t in search()]
    bias = static["bias"].numpy()[0]
    allowed = [seq for seq in candidates if _words(seq) == 0]
    expected = sorted(((model.sequence_log_prob(seq, bias) / toys.gnmt_penalty(len(seq), alpha),
                        seq) for seq in allowed), key=lambda item: -item[0])
    got = [toys.strip(row) for row, score in zip(sequences[0], scores[0]) if score > -np.inf]
    assert got == [seq for _, seq in expected]
    assert any(2 in seq for seq in got)  # the compounds are there


def test_a_prefix_form_negative_bars_every_word_it_begins(toys):
    model = _table(toys, [2, 3, toys.EOS])
    sequences, scores, _ = _run(model, np.zeros([1, 0, 1, 1]), [[[2]]], beam_size=3,
                                alpha=0.0, max_decode_length=5)
    for row, score in zip(sequences[0], scores[0]):
        if score > -np.inf:
            assert 2 not in toys.strip(row)


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_the_wide_beam_n_best_holds_the_phrase_as_a_word_first(toys):
    # Vocab 5 (3 real tokens, 3 continuing a word), 4 positions: every sequence fits the beam.
    # Hypotheses that would continue "▁2" into a word before the phrase is met are never made;
    # the rest come ranked: holding [2] as a word first, then by score.
    starts = np.array([True, True, True, False, True])
    model = toys.RnnModel(vocab_size=5, seed=0, sharpness=1.0)
    cache, static = model.initial_state(1)
    max_length, alpha = 4, 0.6

    @tf.function
    def search():
        return constrained_beam_search(
            model.tokens_to_logits, cache, static, 1, model.vocab_size,
            tf.constant([[[[2, END]]]], tf.int32), tf.zeros([1, 0, 1], tf.int32), beam_size=40,
            alpha=alpha, max_decode_length=max_length, word_starts=starts)

    sequences, scores, unmet = [t.numpy() for t in search()]

    def run_on_before_met(seq):
        for i, token in enumerate(seq[:-1]):
            if token == 2 and not starts[seq[i + 1]]:
                return True  # the word runs on while the phrase is unmet
            if token == 2:
                return False  # met here
        return False

    bias = static["bias"].numpy()[0]
    allowed = [seq for seq in toys.all_sequences(5, max_length) if not run_on_before_met(seq)]
    expected = sorted(((_words(seq, starts) == 0,
                        model.sequence_log_prob(seq, bias) / toys.gnmt_penalty(len(seq), alpha),
                        seq) for seq in allowed), key=lambda item: (item[0], -item[1]))
    kept = scores[0] > -np.inf
    got = [toys.strip(row) for row in sequences[0][kept]]
    assert got == [seq for _, _, seq in expected][:len(got)]
    assert len(got) == min(40, len(expected))
    np.testing.assert_array_equal(unmet[0][kept], [int(m) for m, _, _ in expected][:len(got)])


@pytest.mark.parametrize("rows, want", [
    # Phrases [5, 6, 8] and [5, 6, 7]: "5 6" is 2 tokens along one path of a trie, "5 6 7"
    # meets a phrase of 3; the shared prefix counts once.
    ([[5, 6]], [2]), ([[5, 6, 7]], [3])])
def test_banks_count_a_shared_prefix_once(rows, want):
    positive = tf.constant([[[[5, 6, 8]], [[5, 6, 7]]]], tf.int32)  # [1, 2, 1, 3]
    windows = tf.constant([[[-1] * (3 - len(r)) + r for r in rows]], tf.int32)
    starts = tf.ones([10], tf.bool)
    prefix, complete, _ = phrase_matching.progress(windows, positive, starts)
    met = phrase_matching.credit(complete, tf.zeros([1, 1, 2], tf.bool),
                                     tf.zeros([1, 2, 2], tf.bool))
    bank = phrase_matching.bank(prefix, met, tf.constant([[3, 3]]))
    assert bank.numpy()[0].tolist() == want


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_eos_until_met_keeps_a_hypothesis_going_until_its_phrases_are_met(toys):
    # The model would end at once; with the phrase [4] unmet, EOS waits for it.
    model = _table(toys, [toys.EOS])
    for eos_until_met in (False, True):
        sequences, scores, unmet = _run(model, [[[[4]]]], beam_size=1, alpha=0.0,
                                        max_decode_length=4, eos_until_met=eos_until_met)
        best = toys.strip(sequences[0, 0])
        if eos_until_met:
            assert 4 in best and unmet[0, 0] == 0
        # Either way the search returns a finished hypothesis.
        assert np.isfinite(scores[0, 0]) and best[-1] == toys.EOS


@pytest.mark.parametrize("times", [2, 3, 4, 6])
def test_a_phrase_required_k_times_is_placed_k_times(toys, times):
    # The model writes "▁ist ▁Datei : EOS" and would not write "▁Datei" again: each further
    # one is forced, on a beam whose top candidates leave it out (a beam of 1 offers 2).
    model = _table(toys, [4, 2, 6, toys.EOS])
    table = np.exp(model.log_table)
    table[[0, 2, 3, 5, 6], 2] = 0.001
    model = toys.TableModel(table)
    for eos_until_met in (False, True):
        sequences, _, unmet = _run(model, [[[[2, END]]] * times], beam_size=1, alpha=0.0,
                                   max_decode_length=3 * times + 2,
                                   eos_until_met=eos_until_met)
        best = toys.strip(sequences[0, 0])
        assert unmet[0, 0] == 0 and _words(best) == times, (eos_until_met, best)


def test_eos_until_met_ends_a_line_whose_phrases_cannot_fit(toys):
    # A phrase of seven tokens cannot fit in five: the hypothesis ends where the model wants,
    # as without the rule, and is counted as missing it (not run on to the limit).
    model = _table(toys, [4, 6, toys.EOS])
    results = [_run(model, [[[[2, 5, 5, 5, 5, 5, 5]]]], beam_size=2, alpha=0.0,
                    max_decode_length=6, eos_until_met=eos_until_met)
               for eos_until_met in (False, True)]
    (plain, _, plain_unmet), (ruled, _, ruled_unmet) = results
    assert toys.strip(ruled[0, 0]) == toys.strip(plain[0, 0])
    assert len(toys.strip(ruled[0, 0])) < 6 and ruled_unmet[0, 0] == plain_unmet[0, 0] == 1
    # Where they fit, the rule keeps the hypothesis going until they are met.
    sequences, _, unmet = _run(model, [[[[2, END]]] * 2], beam_size=2, alpha=0.0,
                               max_decode_length=6, eos_until_met=True)
    assert unmet[0, 0] == 0 and _words(toys.strip(sequences[0, 0])) == 2


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_a_negative_glued_to_punctuation_is_barred_after_a_word_end(toys):
    # The model wants ": format" glued (":format", [6, 3]) as a word; the glued negative
    # [WORD_START, 3, END] bars 3 as a whole word after a token that ends one.
    ends = np.array([True, True, False, False, False, False, True])
    model = _table(toys, [6, 3, toys.EOS])
    plain, _, _ = _run(model, np.zeros([1, 0, 1, 1]), beam_size=2, alpha=0.0,
                       max_decode_length=5)
    assert toys.strip(plain[0, 0]) == [6, 3, toys.EOS]
    sequences, scores, _ = _run(model, np.zeros([1, 0, 1, 1]), [[[WORD_START, 3, END]]],
                                beam_size=2, alpha=0.0, max_decode_length=5, word_ends=ends)
    for row, score in zip(sequences[0], scores[0]):
        best = toys.strip(row)
        if score > -np.inf:
            assert not any(ends[a] and b == 3 and STARTS[c]
                           for a, b, c in zip([0] + best, best, best[1:])), best


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_prefix_bars_bar_what_their_function_returns_for_the_examples_that_carry_them(toys):
    # Vocabulary: 7 "▁Dateien" (one piece), 8 "▁Date", 9 "ien" (continues a word). Example 0
    # carries a text and its function bars 7 everywhere and 9 after 8; example 1 carries none
    # and keeps what the model wants. The texts travel with the examples as they leave.
    starts = np.array([True, True, True, False, True, False, True, True, True, False])

    def barred(seqs, index, texts, word_starts, word_ends):
        shape = tf.shape(seqs)
        carries = tf.broadcast_to(tf.not_equal(texts[:, :1], ""), shape[:2])  # [B, K]
        rows = tf.reshape(tf.range(shape[0] * shape[1]), shape[:2])
        after_8 = carries & tf.equal(seqs[:, :, index], 8)
        return tf.concat([
            tf.stack([tf.boolean_mask(rows, carries),
                      tf.fill([tf.reduce_sum(tf.cast(carries, tf.int32))], 7)], axis=1),
            tf.stack([tf.boolean_mask(rows, after_8),
                      tf.fill([tf.reduce_sum(tf.cast(after_8, tf.int32))], 9)], axis=1)], 0)

    for preferred in ([7, toys.EOS], [8, 9, toys.EOS]):
        table = np.full((len(starts), len(starts)), 0.02)
        table[:, toys.PAD] = 0.0
        previous = toys.PAD
        for token in preferred:
            table[previous, token] = 2.0
            previous = token
        sequences, scores, _ = _run(toys.TableModel(table), np.zeros([2, 0, 1, 1]),
                                    np.zeros([2, 0, 1]), starts=starts, batch_size=2,
                                    beam_size=2, alpha=0.0, max_decode_length=5,
                                    prefix_bars=(tf.constant([["x"], [""]]), barred))
        assert toys.strip(sequences[1, 0]) == preferred
        for row, score in zip(sequences[0], scores[0]):
            best = toys.strip(row)
            if score > -np.inf:
                assert 7 not in best and [8, 9] not in [best[i:i + 2] for i in range(len(best))]

