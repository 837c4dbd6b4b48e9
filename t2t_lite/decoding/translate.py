"""Translate a batch of id sequences with a Transformer: encode once, then beam search.

The paper's setting (section 6.1): beam 4, alpha 0.6, output length up to input length + 50.
Every function here is plain TensorFlow, so callers can wrap it in a tf.function. Not for XLA:
the decode cache grows and finished examples leave the batch, so shapes change every step.
"""
import tensorflow as tf

from t2t_lite.config import DecodeConfig
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.constrained_search import constrained_beam_search
from t2t_lite.config import MAX_EXTRA_LENGTH  # the step budget (config.py says why)
from t2t_lite.ids import EOS_ID, PAD_ID


def input_lengths(inputs):
    """Non-pad tokens per row of inputs [B, S] (EOS included), int32 [B]."""
    return tf.reduce_sum(tf.cast(tf.not_equal(inputs, PAD_ID), tf.int32), axis=1)


def clamp_extra_length(model, extra_length):
    """extra_length limited to [-max_length, min(max_length, MAX_EXTRA_LENGTH)].

    Past max_length outputs are the same (widths are capped at max_length, and an input is at
    most max_length long), but adding it to a length cannot overflow int32 (2147483647 + 5 wraps
    negative, which would leave empty translations). Past MAX_EXTRA_LENGTH is the step budget.
    A python int stays one.
    """
    limit = int(model.config.max_length)
    if isinstance(extra_length, int):
        return clamp_to_limit(extra_length, limit)
    return tf.clip_by_value(tf.cast(extra_length, tf.int32), -limit,
                            min(limit, MAX_EXTRA_LENGTH))


def clamp_to_limit(extra_length, max_length):
    """A python extra_length limited as clamp_extra_length limits it."""
    return max(-max_length, min(int(extra_length), max_length, MAX_EXTRA_LENGTH))


def decode_width(model, inputs, extra_length):
    """The output width: source width + extra_length, at most the model's max_length.

    The model's positions end at config.max_length, so nothing longer can be decoded. A python
    int when the source width and extra_length are static; otherwise a scalar tensor, so short
    batches are not decoded at full model width.
    """
    limit = int(model.config.max_length)
    extra_length = clamp_extra_length(model, extra_length)
    if inputs.shape[1] is not None and isinstance(extra_length, int):
        return max(1, min(inputs.shape[1] + extra_length, limit))
    width = tf.shape(inputs)[1] + tf.cast(extra_length, tf.int32)
    return tf.clip_by_value(width, 1, limit)


def _search_setup(model, inputs, beam_size, extra_length):
    """What both searches take for a batch: tokens_to_logits over the encoded inputs, the
    decode state, and the output width and per-example limits."""
    inputs = tf.cast(inputs, tf.int32)
    extra_length = clamp_extra_length(model, extra_length)
    max_decode_length = decode_width(model, inputs, extra_length)
    decode_lengths = tf.minimum(input_lengths(inputs) + tf.cast(extra_length, tf.int32),
                                max_decode_length)
    encoded = model.encode(inputs, training=False)
    cache, static = model.init_decode_state(encoded)
    # Shared by every example, so not part of the per-example state the search may shrink.
    output_matrix = static.pop("output_matrix")

    # The encoder state stays at B rows: each example's K beams attend to its one copy.
    def tokens_to_logits(ids, index, cache, static):
        return model.decode_step(ids, index, cache, dict(static, output_matrix=output_matrix),
                                 queries_per_example=beam_size)

    return dict(tokens_to_logits=tokens_to_logits, cache=cache, static=static,
                batch_size=tf.shape(inputs)[0], vocab_size=model.vocab_size,
                max_decode_length=max_decode_length, decode_lengths=decode_lengths,
                eos_id=EOS_ID, tile_static=False)


def translate(model, inputs, beam_size=DecodeConfig.beam_size, alpha=DecodeConfig.alpha,
              extra_length=DecodeConfig.extra_length,
              no_repeat_ngram_size=DecodeConfig.no_repeat_ngram_size):
    """n-best translations of inputs.

    Args:
      model: a t2t_lite Transformer (encode, init_decode_state, decode_step, config, vocab_size).
      inputs: int32 [B, S] source ids, each ending with EOS, 0-padded.
      beam_size: static int K.
      alpha: length penalty exponent (float or scalar tensor).
      extra_length: each example decodes at most (its input length + extra_length) tokens
        (int or scalar int tensor).
      no_repeat_ngram_size: static int n; no output repeats an n-gram of tokens
        (decoding/repeats.py; 0: no such rule).

    Returns:
      sequences: int32 [B, K, L] ids ending with EOS, 0-padded, best first; L = S +
        extra_length capped at the model's max_length (see decode_width).
      scores: float32 [B, K] log probability / GNMT length penalty (-inf for empty slots).
    """
    return beam_search(beam_size=beam_size, alpha=alpha,
                       no_repeat_ngram_size=no_repeat_ngram_size,
                       **_search_setup(model, inputs, beam_size, extra_length))


def translate_constrained(model, inputs, positive, negative, beam_size=DecodeConfig.beam_size,
                          alpha=DecodeConfig.alpha, extra_length=DecodeConfig.extra_length,
                          word_starts=None, word_ends=None, eos_until_met=False,
                          prefix_bars=None,
                          no_repeat_ngram_size=DecodeConfig.no_repeat_ngram_size):
    """translate() under per-example constraints (decoding/constrained_search.py): positive
    int32 [B, P, A, T] phrases that must appear, negative int32 [B, Q, T] phrases that must not
    (target ids, 0-padded). Returns sequences, scores and unmet int32 [B, K] (positive phrases
    each hypothesis misses). word_starts, word_ends: bool [V], the target tokens that start and
    end a word (see constrained_search's WORD_END and WORD_START). eos_until_met: a hypothesis
    may not end before it meets every phrase (constrained_search; off by default,
    docs/design.md). prefix_bars: the pieces `*` prefix forms bar (constrained_search).
    no_repeat_ngram_size: translate()'s, which never bars a phrase's token."""
    return constrained_beam_search(positive=positive, negative=negative, beam_size=beam_size,
                                   alpha=alpha, word_starts=word_starts, word_ends=word_ends,
                                   eos_until_met=eos_until_met, prefix_bars=prefix_bars,
                                   no_repeat_ngram_size=no_repeat_ngram_size,
                                   **_search_setup(model, inputs, beam_size, extra_length))
