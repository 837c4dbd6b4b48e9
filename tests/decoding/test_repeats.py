"""The rule against loops in the search (decoding/repeats.py): the barred tokens are exactly those
that would repeat an n-gram, counted as fairseq, Hugging Face and CTranslate2 count them, and no
hypothesis of either search repeats an n-gram, except the tokens a required phrase needs."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding import repeats
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.constrained_search import constrained_beam_search


def _barred_by_counting(generated, n):
    """The tokens after every earlier occurrence of the last n - 1 generated tokens."""
    tail = generated[len(generated) - n + 1:] if n > 1 else []
    return {generated[s + n - 1] for s in range(len(generated) - n + 1)
            if generated[s:s + n - 1] == tail}


def test_barred_tokens_are_the_ones_that_repeat_an_ngram():
    rng = np.random.default_rng(0)
    for _ in range(150):
        index, n = int(rng.integers(0, 13)), int(rng.integers(1, 5))
        seqs = rng.integers(3, 6, size=(2, 3, 13)).astype(np.int32)
        seqs[:, :, 0] = 0  # the start token never counts
        got = repeats.repeated_ngram_tokens(tf.constant(seqs), tf.constant(index), n).numpy()
        expected = {(b * 3 + k, t) for b in range(2) for k in range(3)
                    for t in _barred_by_counting(list(seqs[b, k, 1:index + 1]), n)}
        assert set(map(tuple, got.tolist())) == expected


def test_the_start_token_is_not_part_of_an_ngram():
    # Generated 0 (the start token's id) then 5: with the start token counted, (0, 0) would
    # be a bigram already held and bar 0 after the generated 0.
    seqs = tf.constant([[[0, 0, 5, 0]]])
    barred = repeats.repeated_ngram_tokens(seqs, tf.constant(3), 2).numpy().tolist()
    assert barred == [[0, 5]]


VOCAB = 8


def _looping_model(ids, index, cache, static):
    """Prefers to repeat the token it was fed (a loop), then 3, EOS least; EOS only late."""
    del cache, static
    logits = tf.one_hot(ids, VOCAB, on_value=4.0) + tf.constant(
        [-9.0, -3.0, 0.0, 1.0, 0.5, 0.2, 0.1, 0.0])[None, :]
    late = tf.cast(index >= 6, tf.float32)
    logits += late * 8.0 * tf.one_hot(tf.fill(tf.shape(ids), 1), VOCAB)
    return logits, {}


def _ngrams(tokens, n):
    return [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]


def _hypotheses(sequences):
    for row in sequences.numpy().tolist():
        for seq in row:
            yield seq[:seq.index(1)] if 1 in seq else seq


@pytest.mark.parametrize("n", [1, 2, 3])
def test_no_hypothesis_repeats_an_ngram(n):
    args = dict(cache={}, static={}, batch_size=2, vocab_size=VOCAB, beam_size=3, alpha=0.6,
                max_decode_length=10)
    looping, _ = beam_search(_looping_model, **args)
    assert any(len(set(_ngrams(h, n))) < len(_ngrams(h, n)) for h in _hypotheses(looping))
    sequences, scores = beam_search(_looping_model, no_repeat_ngram_size=n, **args)
    for hypothesis in _hypotheses(sequences):
        assert len(set(_ngrams(hypothesis, n))) == len(_ngrams(hypothesis, n)), hypothesis
    assert np.all(np.isfinite(scores.numpy()))


def test_a_required_phrase_that_repeats_is_still_written():
    """The constraint wins: with n = 1 every token may appear once, yet the phrase 5 5 5 (and a
    phrase asked for twice) comes out; what the phrases do not need stays unrepeated."""
    args = dict(cache={}, static={}, batch_size=2, vocab_size=VOCAB, beam_size=3, alpha=0.6,
                max_decode_length=10, no_repeat_ngram_size=1)
    positive = tf.constant([[[[5, 5, 5]], [[0, 0, 0]]], [[[4, 6, 0]], [[4, 6, 0]]]])
    negative = tf.zeros([2, 0, 1], tf.int32)
    sequences, _, unmet = constrained_beam_search(_looping_model, positive=positive,
                                                  negative=negative, **args)
    best = [next(_hypotheses(sequences[i:i + 1])) for i in range(2)]
    assert unmet.numpy()[:, 0].tolist() == [0, 0]
    assert "5 5 5" in " ".join(map(str, best[0]))
    assert " ".join(map(str, best[1])).count("4 6") == 2
    for hypothesis, phrase_tokens in zip(best, ({5}, {4, 6})):
        others = [t for t in hypothesis if t not in phrase_tokens]
        assert len(others) == len(set(others)), hypothesis


def test_without_phrases_the_constrained_search_blocks_as_beam_search():
    args = dict(cache={}, static={}, batch_size=2, vocab_size=VOCAB, beam_size=3, alpha=0.6,
                max_decode_length=10, no_repeat_ngram_size=2)
    expected, expected_scores = beam_search(_looping_model, **args)
    got, scores, _ = constrained_beam_search(
        _looping_model, positive=tf.zeros([2, 0, 1, 1], tf.int32),
        negative=tf.zeros([2, 0, 1], tf.int32), **args)
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_allclose(scores.numpy(), expected_scores.numpy(), rtol=1e-6)
