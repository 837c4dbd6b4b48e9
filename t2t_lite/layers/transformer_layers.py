"""Encoder and decoder layers (paper section 3.1) with post- or pre-layer-norm residuals.

post (the paper): x = LayerNorm(x + Dropout(Sublayer(x)))
pre  (tensor2tensor v2 sets): x = x + Dropout(Sublayer(LayerNorm(x))), final LayerNorm per stack.
"""
import keras
import tensorflow as tf
from keras import ops

from t2t_lite.layers.attention import MASK_NEGATIVE, MultiHeadAttention
from t2t_lite.layers.feed_forward import FeedForward


class LayerNorm(keras.layers.LayerNormalization):
    """keras.layers.LayerNormalization over the last axis (same variables, same numbers) with a
    hand-written gradient: dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dy * gamma.

    Keras' own TensorFlow path builds the normalisation from broadcast products (x * inv + res
    with inv = rsqrt(var) * gamma, a full [B, T, d] tensor) and autodiff doubles the passes in
    the backward; this one reads and writes each [B, T, d] tensor a few times fewer. Statistics are
    float32 under mixed precision, as Keras does.
    """

    def call(self, inputs):
        dtype = self.compute_dtype
        x = tf.cast(inputs, tf.float32)
        gamma = tf.cast(self.gamma, tf.float32)
        beta = tf.cast(self.beta, tf.float32)
        return tf.cast(_layer_norm(x, gamma, beta, self.epsilon), dtype)


def _layer_norm(x, gamma, beta, epsilon):
    @tf.custom_gradient
    def normalize(x, gamma, beta):
        mean = tf.reduce_mean(x, axis=-1, keepdims=True)
        centred = x - mean
        variance = tf.reduce_mean(tf.square(centred), axis=-1, keepdims=True)
        rstd = tf.math.rsqrt(variance + epsilon)
        normalized = centred * rstd

        def grad(dy):
            g = dy * gamma
            dx = rstd * (g - tf.reduce_mean(g, axis=-1, keepdims=True)
                         - normalized * tf.reduce_mean(g * normalized, axis=-1, keepdims=True))
            flat_dy = tf.reshape(dy, [-1, tf.shape(dy)[-1]])
            flat_normalized = tf.reshape(normalized, tf.shape(flat_dy))
            return (dx, tf.reduce_sum(flat_dy * flat_normalized, axis=0),
                    tf.reduce_sum(flat_dy, axis=0))

        return normalized * gamma + beta, grad

    return normalize(x, gamma, beta)


class Residual(keras.layers.Layer):
    """Wraps one sub-layer with dropout, the residual add and layer normalisation."""

    def __init__(self, dropout, norm_position, epsilon, **kwargs):
        super().__init__(**kwargs)
        self.norm_position = norm_position
        self.norm = LayerNorm(epsilon=epsilon, name="layer_norm")
        self.dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape):
        self.norm.build(input_shape)
        super().build(input_shape)

    def before(self, x):
        """What the sub-layer sees."""
        return self.norm(x) if self.norm_position == "pre" else x

    def after(self, x, sublayer_output, training):
        y = x + self.dropout(sublayer_output, training=training)
        return y if self.norm_position == "pre" else self.norm(y)


def _attention(config, name):
    return MultiHeadAttention(config.num_heads, config.key_dim, config.value_dim,
                              dropout=config.attention_dropout, use_bias=config.attention_bias,
                              name=name)


def _residual(config, name):
    return Residual(config.dropout, config.norm_position, config.layer_norm_epsilon, name=name)


class _SublayerStack(keras.layers.Layer):
    """What encoder and decoder layers share: the feed-forward block in its Residual."""

    def _feed_forward_block(self, x, training):
        h = self.feed_forward_residual.before(x)
        return self.feed_forward_residual.after(x, self.feed_forward(h, training=training),
                                                training)


class EncoderLayer(_SublayerStack):
    """One of the encoder's N identical layers (section 3.1): self-attention, then the
    position-wise feed-forward network, each wrapped in a Residual (dropout, residual add,
    LayerNorm after or before, per config.norm_position).

    Args:
      config: the ModelConfig (d_model, d_ff, h, d_k, d_v, dropouts, norm position, epsilon).

    Called on x [B, S, d_model] with the source padding bias [B, 1, 1, S]; returns [B, S, d_model]
    (and the attention weights [B, H, S, S] with return_weights=True).
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = _attention(config, "self_attention")
        self.self_attention_residual = _residual(config, "self_attention_residual")
        self.feed_forward = FeedForward(config.d_model, config.d_ff, config.relu_dropout,
                                        name="feed_forward")
        self.feed_forward_residual = _residual(config, "feed_forward_residual")

    def build(self, input_shape):
        for layer in (self.self_attention, self.self_attention_residual, self.feed_forward,
                      self.feed_forward_residual):
            layer.build(input_shape)
        super().build(input_shape)

    def call(self, x, bias, training=False, return_weights=False):
        h = self.self_attention_residual.before(x)
        attended, weights = self.self_attention(h, bias=bias, training=training, return_weights=True)
        x = self._feed_forward_block(self.self_attention_residual.after(x, attended, training),
                                     training)
        return (x, weights) if return_weights else x

    def call_packed(self, x, packing, bias, training=False):
        """The same layer on packed real-token rows x [n, d] (layers/packing.py)."""
        with tf.name_scope(self.name):
            h = self.self_attention_residual.before(x)
            attended = self.self_attention.call_packed(h, packing, bias, training)
            return self._feed_forward_block(
                self.self_attention_residual.after(x, attended, training), training)


class DecoderLayer(_SublayerStack):
    """One of the decoder's N identical layers (section 3.1): masked self-attention,
    encoder-decoder attention over the encoder output, then the feed-forward network, each in a
    Residual.

    Args:
      config: the ModelConfig, as for EncoderLayer.

    Called on the shifted targets' x [B, T, d_model] with the encoder output, the causal and
    source padding biases; `step` runs one position against a key/value cache (growing, or
    fixed-size for XLA) for incremental decoding.
    """

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.self_attention = _attention(config, "self_attention")
        self.self_attention_residual = _residual(config, "self_attention_residual")
        self.cross_attention = _attention(config, "encoder_decoder_attention")
        self.cross_attention_residual = _residual(config, "encoder_decoder_attention_residual")
        self.feed_forward = FeedForward(config.d_model, config.d_ff, config.relu_dropout,
                                        name="feed_forward")
        self.feed_forward_residual = _residual(config, "feed_forward_residual")

    def build(self, input_shape):
        for layer in (self.self_attention, self.self_attention_residual, self.cross_attention,
                      self.cross_attention_residual, self.feed_forward, self.feed_forward_residual):
            layer.build(input_shape)
        super().build(input_shape)

    def _cross_and_feed_forward(self, x, cross_key, cross_value, cross_bias, training):
        h = self.cross_attention_residual.before(x)
        attended, cross_weights = self.cross_attention.attend(
            self.cross_attention.project_query(h), cross_key, cross_value, cross_bias, training)
        x = self.cross_attention_residual.after(x, attended, training)
        return self._feed_forward_block(x, training), cross_weights

    def call(self, x, encoder_outputs, self_bias, cross_bias, training=False, return_weights=False):
        """Teacher-forced pass over the whole target prefix."""
        h = self.self_attention_residual.before(x)
        attended, self_weights = self.self_attention(h, bias=self_bias, training=training,
                                                     return_weights=True)
        x = self.self_attention_residual.after(x, attended, training)
        cross_key, cross_value = self.cross_attention.project_key_value(encoder_outputs)
        x, cross_weights = self._cross_and_feed_forward(x, cross_key, cross_value, cross_bias,
                                                        training)
        return (x, self_weights, cross_weights) if return_weights else x

    def call_packed(self, x, packing, encoder_rows, source_packing, self_bias, cross_bias,
                    training=False):
        """The teacher-forced pass on packed rows: x [n, d] of the shifted targets' real
        positions, encoder_rows [m, d] of the source's (layers/packing.py)."""
        with tf.name_scope(self.name):
            h = self.self_attention_residual.before(x)
            attended = self.self_attention.call_packed(h, packing, self_bias, training)
            x = self.self_attention_residual.after(x, attended, training)
            h = self.cross_attention_residual.before(x)
            key_value = self.cross_attention.project_packed_key_value(encoder_rows,
                                                                      source_packing)
            attended = self.cross_attention.call_packed(h, packing, cross_bias, training,
                                                        key_value)
            x = self.cross_attention_residual.after(x, attended, training)
            return self._feed_forward_block(x, training)

    def step(self, x, index, cache, cross_key, cross_value, cross_bias, training=False,
             growing=False, queries_per_example=1):
        """One position: x [N, 1, d] at `index`; cache holds this layer's keys/values so far.

        Growing cache (growing=True, graph and eager mode): heads-first keys [N, H, t, k] and
        values [N, H, t, v] holding exactly the positions decoded so far; the new position is
        appended, so the beam search's per-step reorder and the attention touch index + 1
        positions, and the attention needs no transpose and no mask.
        Fixed-size cache (growing=False, for XLA): [N, L, H, k] buffers written with a slice
        update at `index`, so shapes never change between steps; later positions are masked.

        cross_key / cross_value are heads-first [N / G, H, S, k] for G = queries_per_example
        consecutive rows per example (G = beam size when beam search leaves them untiled).
        """
        h = self.self_attention_residual.before(x)
        query, key, value = self.self_attention.project_query_key_value(h)
        key, value = ops.cast(key, cache["key"].dtype), ops.cast(value, cache["value"].dtype)
        if growing:
            cache, attended = self._attend_growing_cache(query, key, value, cache, h.dtype,
                                                         training)
        else:
            cache, attended = self._attend_fixed_cache(query, key, value, cache, index, h.dtype,
                                                       training)
        x = self.self_attention_residual.after(x, attended, training)
        h = self.cross_attention_residual.before(x)
        attended = self.cross_attention.attend_grouped(
            self.cross_attention.project_query(h), cross_key, cross_value, cross_bias,
            queries_per_example, training)
        x = self.cross_attention_residual.after(x, attended, training)
        return self._feed_forward_block(x, training), cache

    def _attend_growing_cache(self, query, key, value, cache, dtype, training):
        # [N, 1, H, d] is [N, H, 1, d] in memory: a reshape, not a transpose, makes it heads-first.
        rows = tf.shape(key)[0]
        heads_first = lambda t: tf.reshape(t, [rows, t.shape[2], 1, t.shape[3]])
        cache = {"key": tf.concat([cache["key"], heads_first(key)], axis=2),
                 "value": tf.concat([cache["value"], heads_first(value)], axis=2)}
        attended = self.self_attention.attend_cached(
            query, ops.cast(cache["key"], dtype), ops.cast(cache["value"], dtype), training)
        return cache, attended

    def _attend_fixed_cache(self, query, key, value, cache, index, dtype, training):
        start = [0, index, 0, 0]
        cache = {"key": ops.slice_update(cache["key"], start, key),
                 "value": ops.slice_update(cache["value"], start, value)}
        length = ops.shape(cache["key"])[1]
        # Positions after `index` hold zeros (not yet decoded): mask them out.
        visible = ops.arange(length) <= index
        self_bias = ops.where(visible, 0.0, MASK_NEGATIVE)[None, None, None, :]
        attended, _ = self.self_attention.attend(
            query, ops.cast(cache["key"], dtype), ops.cast(cache["value"], dtype), self_bias,
            training)
        return cache, attended
