"""Encoder and decoder layers (paper section 3.1) with post- or pre-layer-norm residuals.

post (the paper): x = LayerNorm(x + Dropout(Sublayer(x)))
pre  (tensor2tensor v2 sets): x = x + Dropout(Sublayer(LayerNorm(x))), final LayerNorm per stack.
"""
import keras
import tensorflow as tf

from t2t_lite.layers.attention import MultiHeadAttention
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
    """Wraps one sub-layer with dropout, the residual add and layer normalisation:
    `after(x, sublayer(before(x)))`.

    Args:
      dropout: rate of the dropout on the sub-layer's output.
      norm_position: "post" (LayerNorm after the add, the paper) or "pre" (before the sub-layer).
      epsilon: the layer norm's epsilon.
    """

    def __init__(self, dropout, norm_position, epsilon, **kwargs):
        super().__init__(**kwargs)
        self.norm_position = norm_position
        self.norm = LayerNorm(epsilon=epsilon, name="layer_norm")
        self.dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape):
        self.norm.build(input_shape)
        super().build(input_shape)

    def before(self, x):
        """x -> what the sub-layer sees (x itself, or its layer norm for "pre")."""
        return self.norm(x) if self.norm_position == "pre" else x

    def after(self, x, sublayer_output, training):
        """The block's output from its input x and the sub-layer's output, same shape."""
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

    def residuals(self):
        """The layer's Residual wrappers (each holds the dropout on a sub-layer's output)."""
        return [value for value in vars(self).values() if isinstance(value, Residual)]

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
        """Args:
          x: [B, S, d_model].
          bias: the source padding bias [B, 1, 1, S].
          training: whether dropout is on.
          return_weights: also return the attention probabilities.

        Returns:
          [B, S, d_model]; with return_weights, (output, weights [B, H, S, S]).
        """
        h = self.self_attention_residual.before(x)
        attended, weights = self.self_attention(h, bias=bias, training=training, return_weights=True)
        x = self._feed_forward_block(self.self_attention_residual.after(x, attended, training),
                                     training)
        return (x, weights) if return_weights else x

    def call_packed(self, x, packing, bias, training=False):
        """The same layer on packed real-token rows (layers/packing.py).

        Args:
          x: [n, d_model], the real positions of a padded batch; packing: their Packing.
          bias, training: as for `call`.

        Returns:
          [n, d_model], the rows `call` gives at the real positions.
        """
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

    `call` runs the teacher-forced pass over a whole target prefix, `call_packed` the same on
    packed rows, and `call_cached` one position of incremental decoding from the caches
    `initial_cache` makes.
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

    def call(self, x, encoder_outputs, self_bias, cross_bias, training=False, return_weights=False):
        """The teacher-forced pass over the whole target prefix.

        Args:
          x: [B, T, d_model], the shifted targets' hidden states.
          encoder_outputs: [B, S, d_model].
          self_bias: the causal bias [1, 1, T, T].
          cross_bias: the source padding bias [B, 1, 1, S].
          training: whether dropout is on.
          return_weights: also return the attention probabilities.

        Returns:
          [B, T, d_model]; with return_weights, (output, self-attention weights [B, H, T, T],
          encoder-decoder weights [B, H, T, S]).
        """
        h = self.self_attention_residual.before(x)
        attended, self_weights = self.self_attention(h, bias=self_bias, training=training,
                                                     return_weights=True)
        x = self.self_attention_residual.after(x, attended, training)
        h = self.cross_attention_residual.before(x)
        attended, cross_weights = self.cross_attention(h, encoder_outputs, bias=cross_bias,
                                                       training=training, return_weights=True)
        x = self._feed_forward_block(self.cross_attention_residual.after(x, attended, training),
                                     training)
        return (x, self_weights, cross_weights) if return_weights else x

    def call_packed(self, x, packing, encoder_rows, source_packing, self_bias, cross_bias,
                    training=False):
        """The teacher-forced pass on packed rows (layers/packing.py).

        Args:
          x: [n, d_model], the shifted targets' real positions; packing: their Packing.
          encoder_rows: [m, d_model], the encoder output at the source's real positions;
            source_packing: their Packing.
          self_bias, cross_bias, training: as for `call`.

        Returns:
          [n, d_model], the rows `call` gives at the real positions.
        """
        with tf.name_scope(self.name):
            h = self.self_attention_residual.before(x)
            attended = self.self_attention.call_packed(h, packing, self_bias, training)
            x = self.self_attention_residual.after(x, attended, training)
            h = self.cross_attention_residual.before(x)
            attended = self.cross_attention.call_packed(h, packing, cross_bias, training,
                                                        encoder_rows, source_packing)
            x = self.cross_attention_residual.after(x, attended, training)
            return self._feed_forward_block(x, training)

    def initial_cache(self, encoder_outputs):
        """The caches `call_cached` starts from.

        Args:
          encoder_outputs: [B, S, d_model].

        Returns:
          (self_cache, cross_cache): the self-attention's, empty ({"key": [B, H, 0, d_k],
          "value": [B, H, 0, d_v]}) and grown by every step; the encoder-decoder attention's,
          the encoder output's keys and values ([B, H, S, d_k] / [B, H, S, d_v]), read only.
        """
        no_positions = encoder_outputs[:, :0]
        return (self.self_attention.initial_cache(no_positions),
                self.cross_attention.initial_cache(encoder_outputs))

    def call_cached(self, x, self_cache, cross_cache, cross_bias, training=False,
                    queries_per_example=1):
        """One position of incremental decoding.

        Args:
          x: [N, 1, d_model], the decoder input at the position being decoded.
          self_cache: this layer's self-attention keys and values of the positions before it,
            N rows.
          cross_cache: the encoder output's keys and values, N / queries_per_example rows.
          cross_bias: the source padding bias [N / queries_per_example, 1, 1, S].
          training: whether dropout is on.
          queries_per_example: G consecutive rows of x share one example's cross_cache row.

        Returns:
          (output [N, 1, d_model], self_cache with this position appended).
        """
        h = self.self_attention_residual.before(x)
        attended, self_cache = self.self_attention.call_cached(h, self_cache, training=training,
                                                               update_cache=True)
        x = self.self_attention_residual.after(x, attended, training)
        h = self.cross_attention_residual.before(x)
        attended, _ = self.cross_attention.call_cached(
            h, cross_cache, cross_bias, training=training, queries_per_example=queries_per_example)
        x = self.cross_attention_residual.after(x, attended, training)
        return self._feed_forward_block(x, training), self_cache
