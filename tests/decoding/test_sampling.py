"""Greedy decoding and sampling on toy decoders."""
import numpy as np
import tensorflow as tf

from t2t_lite.decoding import greedy_decode, sample_decode


def first_token_table(toys):
    """First token: 2 (p=.6), 3 (p=.3), 4 (p=.1); after it EOS is certain."""
    vocab = 5
    table = np.zeros((vocab, vocab))
    table[toys.PAD] = [0, 0, 0.6, 0.3, 0.1]
    table[2:, toys.EOS] = 1.0
    table[toys.EOS, toys.EOS] = 1.0
    return toys.TableModel(table)


def test_greedy_respects_limits_ends_with_eos_and_pads(toys):
    model = toys.RnnModel(vocab_size=10, seed=5, eos_bias=-20.0)
    cache, static = model.initial_state(3)
    limits = [4, 7, 1]
    sequences, log_probs = greedy_decode(model.tokens_to_logits, cache, static, 3, 10,
                                         max_decode_length=7, decode_lengths=tf.constant(limits))
    sequences = sequences.numpy()
    assert sequences.shape == (3, 7)
    assert [len(toys.strip(row)) for row in sequences] == limits
    toys.assert_ends_with_eos_and_padded(sequences, limits)
    for b, row in enumerate(sequences):
        expected = model.sequence_log_prob(toys.strip(row), static["bias"].numpy()[b])
        np.testing.assert_allclose(log_probs[b], expected, rtol=1e-4)


def test_sampling_follows_the_model_distribution(toys):
    model = first_token_table(toys)
    batch_size = 4000
    sequences, log_probs = tf.function(lambda: sample_decode(
        model.tokens_to_logits, {}, {}, batch_size, model.vocab_size, max_decode_length=4,
        seed=(1, 2)), jit_compile=True)()
    sequences = sequences.numpy()
    toys.assert_ends_with_eos_and_padded(sequences)
    frequencies = np.bincount(sequences[:, 0], minlength=5)[2:] / batch_size
    np.testing.assert_allclose(frequencies, [0.6, 0.3, 0.1], atol=0.03)
    np.testing.assert_allclose(log_probs.numpy(), np.log([0.6, 0.3, 0.1])[sequences[:, 0] - 2],
                               rtol=1e-5)


def test_temperature_and_top_k_shape_the_distribution(toys):
    model = first_token_table(toys)
    batch_size = 2000

    def first_tokens(**kwargs):
        sequences, _ = sample_decode(model.tokens_to_logits, {}, {}, batch_size,
                                     model.vocab_size, max_decode_length=3, seed=(3, 4),
                                     **kwargs)
        return np.bincount(sequences.numpy()[:, 0], minlength=5)[2:] / batch_size

    top_two = first_tokens(top_k=2)
    assert top_two[2] == 0.0  # token 4 is never drawn
    np.testing.assert_allclose(top_two[:2], [2 / 3, 1 / 3], atol=0.04)
    assert first_tokens(temperature=0.01)[0] == 1.0  # cold sampling is greedy
    # Hot sampling flattens: p ~ p_model^(1/T); with T=3 token 4 gets ~.24 instead of .1.
    hot = np.array([0.6, 0.3, 0.1]) ** (1 / 3)
    np.testing.assert_allclose(first_tokens(temperature=3.0), hot / hot.sum(), atol=0.04)


def test_sampling_is_reproducible_by_seed(toys):
    model = toys.RnnModel(vocab_size=12, seed=6, sharpness=1.0)
    cache, static = model.initial_state(8)

    def draw(seed):
        sequences, _ = sample_decode(model.tokens_to_logits, cache, static, 8, 12,
                                     max_decode_length=10, seed=seed)
        return sequences.numpy()

    np.testing.assert_array_equal(draw((5, 6)), draw((5, 6)))
    assert not np.array_equal(draw((5, 6)), draw((7, 8)))
