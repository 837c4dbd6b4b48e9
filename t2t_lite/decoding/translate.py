"""Translate a batch of id sequences with a Transformer: encode once, then beam search.

The paper's setting (section 6.1): beam 4, alpha 0.6, output length up to input length + 50.
Every function here is plain TensorFlow, so exporters and benchmarks can wrap it in a
tf.function (with jit_compile=True for XLA).
"""
import tensorflow as tf

from t2t_lite.decoding.beam_search import beam_search

PAD_ID = 0
EOS_ID = 1


def input_lengths(inputs):
    """Non-pad tokens per row of inputs [B, S] (EOS included), int32 [B]."""
    return tf.reduce_sum(tf.cast(tf.not_equal(inputs, PAD_ID), tf.int32), axis=1)


def static_decode_length(model, source_width, extra_length):
    """The static output width: source width + extra_length, at most the model's max_length.

    The model's positions and decode cache end at config.max_length, so nothing longer can be
    decoded. Without a static source width (or extra_length) the model's limit is used.
    """
    limit = int(model.config.max_length)
    if source_width is None or not isinstance(extra_length, int):
        return limit
    return max(1, min(int(source_width) + extra_length, limit))


def translate(model, inputs, beam_size=4, alpha=0.6, extra_length=50, max_decode_length=None):
    """n-best translations of inputs.

    Args:
      model: a t2t_lite Transformer (encode, init_decode_state, decode_step, config, vocab_size).
      inputs: int32 [B, S] source ids, each ending with EOS, 0-padded.
      beam_size: static int K.
      alpha: length penalty exponent (float or scalar tensor).
      extra_length: each example decodes at most (its input length + extra_length) tokens
        (int or scalar int tensor).
      max_decode_length: static output width L; by default S + extra_length capped at the
        model's max_length (see static_decode_length).

    Returns:
      sequences: int32 [B, K, L] ids ending with EOS, 0-padded, best first.
      scores: float32 [B, K] log probability / GNMT length penalty (-inf for empty slots).
    """
    inputs = tf.cast(inputs, tf.int32)
    if max_decode_length is None:
        max_decode_length = static_decode_length(model, inputs.shape[1], extra_length)
    decode_lengths = tf.minimum(input_lengths(inputs) + tf.cast(extra_length, tf.int32),
                                max_decode_length)
    encoded = model.encode(inputs, training=False)
    cache, static = model.init_decode_state(encoded, max_decode_length)
    return beam_search(model.decode_step, cache, static, batch_size=tf.shape(inputs)[0],
                       vocab_size=model.vocab_size, beam_size=beam_size, alpha=alpha,
                       max_decode_length=max_decode_length, decode_lengths=decode_lengths,
                       eos_id=EOS_ID)


def translate_fn(model, beam_size=4, jit_compile=False):
    """A tf.function(inputs [B, S] int32, alpha float32, extra_length int32) -> translate(...).

    alpha and extra_length are runtime inputs, so one trace serves any setting; the output width
    is then the model's max_length (shorter examples stop early and come back 0-padded).
    """
    @tf.function(jit_compile=jit_compile, input_signature=[
        tf.TensorSpec([None, None], tf.int32), tf.TensorSpec([], tf.float32),
        tf.TensorSpec([], tf.int32)])
    def translate_batch(inputs, alpha, extra_length):
        return translate(model, inputs, beam_size=beam_size, alpha=alpha,
                         extra_length=extra_length)

    return translate_batch
