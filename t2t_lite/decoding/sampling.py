"""Greedy decoding and sampling (temperature, top-k) with beam search's tokens_to_logits interface.

Both run one fixed-shape tf.while_loop (XLA-ready) over B sequences, one hypothesis each:

    tokens_to_logits(ids [B] int32, index int32 scalar, cache, static) -> (logits [B, V], cache)

Like beam search, every output sequence ends with EOS (forced at the example's last allowed
position) and is padded with 0, and the loop stops once every sequence has ended.
"""
import tensorflow as tf


def _decode(tokens_to_logits, cache, static, batch_size, vocab_size, max_decode_length,
            decode_lengths, eos_id, choose_tokens):
    """Shared loop; choose_tokens(log_probs [B, V], index) -> ids [B] picks each next token."""
    if not tf.is_tensor(max_decode_length):
        max_decode_length = int(max_decode_length)
    if decode_lengths is None:
        decode_lengths = tf.fill([batch_size], max_decode_length)
    decode_lengths = tf.clip_by_value(tf.cast(decode_lengths, tf.int32), 1, max_decode_length)
    is_eos_token = tf.equal(tf.range(vocab_size), eos_id)[None, :]

    def not_done(i, ids, sequences, log_prob_sums, ended, cache):
        del ids, sequences, log_prob_sums, cache
        return (i < max_decode_length) & tf.logical_not(tf.reduce_all(ended))

    def step(i, ids, sequences, log_prob_sums, ended, cache):
        logits, cache = tokens_to_logits(ids, i, cache, static)
        log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float32))
        must_end = tf.greater_equal(i + 1, decode_lengths)[:, None]
        log_probs = tf.where(must_end & ~is_eos_token, float("-inf"), log_probs)
        next_ids = tf.cast(choose_tokens(log_probs, i), tf.int32)
        next_ids = tf.where(ended, 0, next_ids)
        chosen_log_probs = tf.gather(log_probs, next_ids, batch_dims=1)
        log_prob_sums += tf.where(ended, 0.0, chosen_log_probs)
        is_position = tf.equal(tf.range(max_decode_length), i)[None, :]
        sequences = tf.where(is_position, next_ids[:, None], sequences)
        ended = ended | tf.equal(next_ids, eos_id)
        return i + 1, next_ids, sequences, log_prob_sums, ended, cache

    state = (tf.constant(0), tf.zeros([batch_size], tf.int32),
             tf.zeros([batch_size, max_decode_length], tf.int32), tf.zeros([batch_size]),
             tf.zeros([batch_size], tf.bool), cache)
    _, _, sequences, log_prob_sums, _, _ = tf.while_loop(
        not_done, step, state, maximum_iterations=max_decode_length)
    return sequences, log_prob_sums


def greedy_decode(tokens_to_logits, cache, static, batch_size, vocab_size, max_decode_length=256,
                  decode_lengths=None, eos_id=1):
    """Takes the most likely token each step.

    Returns sequences int32 [B, L] (ending with EOS, 0-padded) and their log probabilities [B].
    """
    def choose_tokens(log_probs, index):
        del index
        return tf.argmax(log_probs, axis=-1)

    return _decode(tokens_to_logits, cache, static, batch_size, vocab_size, max_decode_length,
                   decode_lengths, eos_id, choose_tokens)


def sample_decode(tokens_to_logits, cache, static, batch_size, vocab_size, max_decode_length=256,
                  decode_lengths=None, eos_id=1, temperature=1.0, top_k=0, seed=(0, 0)):
    """Samples each token from softmax(logits / temperature), optionally among the top_k only.

    `seed` (a pair of ints or an int32 [2] tensor) makes the draw reproducible (stateless RNG, so it
    compiles under XLA). Returns sequences int32 [B, L] (ending with EOS, 0-padded) and their log
    probabilities [B] under the model itself (temperature 1, no truncation).
    """
    top_k = int(top_k)
    if not tf.is_tensor(temperature) and temperature <= 0:
        raise ValueError(f"temperature must be positive (greedy_decode is temperature 0), "
                         f"got {temperature}")
    seed = tf.cast(seed, tf.int32)
    temperature = tf.cast(temperature, tf.float32)

    def choose_tokens(log_probs, index):
        scaled = log_probs / temperature
        if top_k > 0:
            kth_best = tf.math.top_k(scaled, k=top_k).values[:, -1:]
            scaled = tf.where(scaled < kth_best, float("-inf"), scaled)
        step_seed = tf.stack([seed[0], seed[1] + index])
        return tf.random.stateless_categorical(scaled, 1, seed=step_seed)[:, 0]

    return _decode(tokens_to_logits, cache, static, batch_size, vocab_size, max_decode_length,
                   decode_lengths, eos_id, choose_tokens)
