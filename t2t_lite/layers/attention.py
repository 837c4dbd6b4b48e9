"""Multi-head scaled dot-product attention (paper section 3.2).

Projection weights use the same layout as keras.layers.MultiHeadAttention (query/key/value kernels
[d_model, heads, d_k], output kernel [heads, d_v, d_model]) so the two can be compared weight for
weight. Masks are additive biases (0 where allowed, a large negative number where not), so padding
and causal masks combine by addition.
"""
import math

import keras
import tensorflow as tf
from keras import ops

# Large enough to zero a softmax entry, small enough not to overflow float16/bfloat16 logits.
MASK_NEGATIVE = -1e9


def padding_bias(padding_mask):
    """[B, S] bool (True = real token) -> additive bias [B, 1, 1, S]."""
    return ops.where(padding_mask, 0.0, MASK_NEGATIVE)[:, None, None, :]


def causal_bias(length):
    """Additive bias [1, 1, T, T]: position i may attend to j <= i only."""
    row = ops.arange(length)[:, None]
    col = ops.arange(length)[None, :]
    return ops.where(col <= row, 0.0, MASK_NEGATIVE)[None, None, :, :]


@keras.saving.register_keras_serializable(package="t2t_lite")
class FoldedGlorotUniform(keras.initializers.Initializer):
    """Glorot-uniform for a projection stored with its heads split out, as the 2-D matrix it is.

    A query kernel [d_model, heads, d_k] is the [d_model, heads * d_k] projection of the paper and
    tensor2tensor; Keras' GlorotUniform would take fan_in = d_model * heads for it, shrinking the
    initial weights with the head count (and confounding Table 3 row A). `input_axes` leading axes
    are the fan-in, the rest the fan-out.
    """

    def __init__(self, input_axes=1, seed=None):
        self.input_axes, self.seed = input_axes, seed

    def __call__(self, shape, dtype=None):
        fan_in = math.prod(shape[:self.input_axes])
        fan_out = math.prod(shape[self.input_axes:])
        limit = math.sqrt(6.0 / (fan_in + fan_out))
        return keras.random.uniform(shape, -limit, limit, dtype=dtype, seed=self.seed)

    def get_config(self):
        return {"input_axes": self.input_axes, "seed": self.seed}


class MultiHeadAttention(keras.layers.Layer):
    """softmax(Q K^T / sqrt(d_k) + bias) V over `num_heads` heads, then the output projection.

    One call per use:
      `call`: full attention of query positions over a source (self-attention by default);
      `call_cached`: one new position per row against a key/value cache (incremental decoding),
        starting from `initial_cache`;
      `call_packed`: full attention on packed real-token rows (layers/packing.py).

    Each projection is one 2-D matmul over all tokens ([N, d] x [d, H*d_k]; `call` and
    `call_packed` fold 1/sqrt(d_k) into the query kernel, `call_cached` scales one query row
    per step instead); scores and context
    are batched matmuls in the heads-first layout [B, H, T, d], the output projection one 2-D
    matmul again. Q, K and V are three matmuls, not one fused one: on CPU the split of a fused
    output and the concat of its gradient would copy every activation, for no gain in the matmul.

    Args:
      num_heads: H.
      key_dim: d_k, the size of each head's queries and keys.
      value_dim: d_v, the size of each head's values (default d_k).
      dropout: dropout rate on the attention weights.
      use_bias: whether the projections have biases.
    """

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.key_dim = key_dim
        self.value_dim = value_dim or key_dim
        self.dropout_rate = dropout
        self.use_bias = use_bias
        self.attention_dropout = keras.layers.Dropout(dropout)

    def build(self, query_shape, source_shape=None):
        d_model = query_shape[-1]
        d_source = (source_shape or query_shape)[-1]
        def projection(name, d_in, head_dim):
            kernel = self.add_weight(name=f"{name}_kernel", shape=(d_in, self.num_heads, head_dim),
                                     initializer=FoldedGlorotUniform(input_axes=1))
            bias = (self.add_weight(name=f"{name}_bias", shape=(self.num_heads, head_dim),
                                    initializer="zeros") if self.use_bias else None)
            return kernel, bias

        self.query_kernel, self.query_bias = projection("query", d_model, self.key_dim)
        self.key_kernel, self.key_bias = projection("key", d_source, self.key_dim)
        self.value_kernel, self.value_bias = projection("value", d_source, self.value_dim)
        self.output_kernel = self.add_weight(
            name="output_kernel", shape=(self.num_heads, self.value_dim, d_model),
            initializer=FoldedGlorotUniform(input_axes=2))
        self.output_bias = (self.add_weight(name="output_bias", shape=(d_model,),
                                            initializer="zeros") if self.use_bias else None)
        super().build(query_shape)

    # ---- the three calls -----------------------------------------------------------------------
    def call(self, query, source=None, bias=None, training=False, return_weights=False):
        """Full attention of every query position over every source position.

        Args:
          query: [B, T, d_model].
          source: [B, S, d_source] the keys and values come from; None for self-attention.
          bias: optional additive mask broadcastable to [B, H, T, S] (padding_bias, causal_bias).
          training: whether attention dropout is on.
          return_weights: also return the attention probabilities.

        Returns:
          output [B, T, d_model]; with return_weights, (output, weights [B, H, T, S]).
        """
        scale = self.key_dim ** -0.5
        if source is None:
            query, key, value = self._projections(query, [
                (self.query_kernel, self.query_bias, scale), (self.key_kernel, self.key_bias),
                (self.value_kernel, self.value_bias)])
        else:
            query = self._projections(query, [(self.query_kernel, self.query_bias, scale)])[0]
            key, value = self._project_key_value(source)
        output, weights = self._attend_heads_first(_heads_first(query), _heads_first(key),
                                                   _heads_first(value), bias, training)
        return (output, weights) if return_weights else output

    def initial_cache(self, source):
        """The key/value cache `call_cached` starts from: the keys and values of `source`.

        Encoder-decoder attention passes the encoder output once and reads the cache unchanged
        at every step; self-attention passes a zero-length prefix ([B, 0, d]) and the cache grows
        by one position per step.

        Args:
          source: [B, S, d_source].

        Returns:
          {"key": [B, H, S, d_k], "value": [B, H, S, d_v]}, heads-first so no step transposes it.
        """
        key, value = self._project_key_value(source)
        return {"key": _heads_first(key), "value": _heads_first(value)}

    def call_cached(self, query, cache, bias=None, training=False, update_cache=False,
                    queries_per_example=1):
        """Attention of one new position per row over cached keys and values.

        Args:
          query: [N, 1, d_model], the position being decoded.
          cache: {"key": [M, H, t, d_k], "value": [M, H, t, d_v]} (see `initial_cache`).
          bias: optional additive mask broadcastable to [M, 1, 1, t] (e.g. the source padding).
          training: whether attention dropout is on.
          update_cache: self-attention: append the query position's own key and value to the
            cache before attending (M = N); every cached position is visible. False: the cache
            is read only (encoder-decoder attention).
          queries_per_example: G; the cache holds M = N / G examples, and rows g * G .. g * G +
            G - 1 attend to example g's keys (a beam search's beams share their example's
            encoder keys instead of tiling them to every beam).

        Returns:
          (output [N, 1, d_model], cache), the cache with the new position when update_cache.
        """
        if not update_cache:
            query = self._projections(query, [(self.query_kernel, self.query_bias)])[0]
            return self._attend_position(query, cache["key"], cache["value"], bias,
                                         queries_per_example, training), cache
        query, key, value = self._projections(query, [(self.query_kernel, self.query_bias),
                                                      (self.key_kernel, self.key_bias),
                                                      (self.value_kernel, self.value_bias)])
        # [N, 1, H, d] is [N, H, 1, d] in memory: a reshape, not a transpose, makes it heads-first.
        rows = tf.shape(key)[0]
        heads_first = lambda t: tf.reshape(t, [rows, t.shape[2], 1, t.shape[3]])  # noqa: E731
        cache = {name: tf.concat([cache[name], heads_first(ops.cast(new, cache[name].dtype))],
                                 axis=2)
                 for name, new in (("key", key), ("value", value))}
        dtype = query.dtype
        return self._attend_position(query, ops.cast(cache["key"], dtype),
                                     ops.cast(cache["value"], dtype), bias, 1, training), cache

    def call_packed(self, rows, packing, bias=None, training=False, source_rows=None,
                    source_packing=None):
        """Full attention on packed real-token rows (layers/packing.py).

        Args:
          rows: [n, d_model], the real positions of a padded [B, T] batch in row-major order.
          packing: the Packing of those positions.
          bias: optional additive mask broadcastable to [B, H, T, S].
          training: whether attention dropout is on.
          source_rows, source_packing: the packed source [m, d_source] and its Packing, for
            encoder-decoder attention; None for self-attention.

        Returns:
          [n, d_model], the rows `call` gives at the real positions.
        """
        with tf.name_scope(self.name):  # not called through __call__: name its ops for profiles
            if source_rows is None:
                source_rows, source_packing = rows, packing
            key, value = (source_packing.unpack_heads(self._flat_projection(source_rows, *pair),
                                                      self.num_heads)
                          for pair in ((self.key_kernel, self.key_bias),
                                       (self.value_kernel, self.value_bias)))
            query = packing.unpack_heads(self._flat_projection(
                rows, self.query_kernel, self.query_bias, self.key_dim ** -0.5), self.num_heads)
            context, _ = self._context(query, key, value, bias, training)  # [B, H, T, v]
            return self._output_projection(packing.pack_heads(context))  # from [n, H*d_v]

    # ---- projections ---------------------------------------------------------------------------
    def _flat_projection(self, flat, kernel, bias, scale=1.0):
        """flat [N, d_in] -> [N, H*dim]: one 2-D matmul over every token."""
        dtype = flat.dtype
        width = kernel.shape[1] * kernel.shape[2]
        matrix = tf.reshape(tf.cast(kernel, dtype), [kernel.shape[0], width])
        if scale != 1.0:  # folded into the [d_in, H*dim] kernel, not applied to every token
            matrix = matrix * tf.cast(scale, dtype)
        y = tf.matmul(flat, matrix)
        if bias is not None:
            bias = tf.reshape(tf.cast(bias, dtype), [width])
            y = tf.nn.bias_add(y, bias * tf.cast(scale, dtype) if scale != 1.0 else bias)
        return y

    def _projections(self, x, parts):
        """x [..., d_in] -> one [..., H, dim] per (kernel, bias[, scale]) in parts."""
        kernel = parts[0][0]
        flat = tf.reshape(x, [-1, kernel.shape[0]])  # d_in from the kernel: always static
        leading = tf.shape(x)[:-1]
        return tuple(
            tf.reshape(self._flat_projection(flat, *part),
                       tf.concat([leading, [part[0].shape[1], part[0].shape[2]]], 0))
            for part in parts)

    def _project_key_value(self, source):
        """[B, S, d] -> keys [B, S, H, d_k], values [B, S, H, d_v]."""
        return self._projections(source, [(self.key_kernel, self.key_bias),
                                          (self.value_kernel, self.value_bias)])

    def _output_projection(self, flat):
        """Concatenated heads [N, H*d_v] -> [N, d_model]: one 2-D matmul."""
        kernel = tf.reshape(tf.cast(self.output_kernel, flat.dtype),
                            [self.num_heads * self.value_dim, -1])
        output = tf.matmul(flat, kernel)
        if self.output_bias is not None:
            output = tf.nn.bias_add(output, tf.cast(self.output_bias, output.dtype))
        return output

    # ---- attention -----------------------------------------------------------------------------
    def _context(self, query, key, value, bias, training):
        """The attention core every call shares: scaled q [..., T, k], k [..., S, k],
        v [..., S, v] -> (context [..., T, v], weights [..., T, S])."""
        logits = tf.matmul(query, key, transpose_b=True)
        # Softmax in float32 even under mixed precision: masked logits are ~-1e9.
        logits = tf.cast(logits, tf.float32)
        if bias is not None:
            logits = logits + tf.cast(bias, tf.float32)
        weights = tf.nn.softmax(logits, axis=-1)
        dropped = self.attention_dropout(tf.cast(weights, value.dtype), training=training)
        return tf.matmul(dropped, value), weights

    def _attend_heads_first(self, query, key, value, bias, training):
        """Scaled q [B,H,T,k], k [B,H,S,k], v [B,H,S,v] -> (output [B,T,d], weights [B,H,T,S])."""
        context, weights = self._context(query, key, value, bias, training)  # [B, H, T, v]
        context = tf.transpose(context, [0, 2, 1, 3])  # [B, T, H, v]
        shape = tf.shape(context)
        output = self._output_projection(
            tf.reshape(context, [-1, self.num_heads * self.value_dim]))
        # Explicit sizes, never -1: an empty batch must keep its shape.
        output = tf.reshape(output, tf.concat([shape[:2], [self.output_kernel.shape[-1]]], 0))
        return output, weights

    def _attend_position(self, query, key, value, bias, queries_per_example, training):
        """Unscaled q [N, 1, H, k] against heads-first k [M, H, t, k], v [M, H, t, v] with
        N = M * G -> output [N, 1, d]."""
        rows = tf.shape(query)[0]
        group = int(queries_per_example)
        query = query * tf.cast(self.key_dim ** -0.5, query.dtype)
        if group == 1:
            # With a single query position, [N, 1, H, k] and [N, H, 1, k] are the same memory:
            # neither the query, the cache nor the context is transposed.
            query = tf.reshape(query, [rows, self.num_heads, 1, self.key_dim])
            context, _ = self._context(query, key, value, bias, training)  # [N, H, 1, v]
        else:
            # The G rows of an example become its G query positions, so its keys are read once.
            query = tf.reshape(query, [tf.shape(key)[0], group, self.num_heads, self.key_dim])
            context, _ = self._context(tf.transpose(query, [0, 2, 1, 3]), key, value, bias,
                                       training)  # [M, H, G, v]
            context = tf.transpose(context, [0, 2, 1, 3])  # [M, G, H, v]
        context = tf.reshape(context, [rows, self.num_heads * self.value_dim])
        return tf.reshape(self._output_projection(context), [rows, 1, -1])

    def compute_output_shape(self, query_shape, source_shape=None):
        return query_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout_rate, "use_bias": self.use_bias}


def _heads_first(x):
    """[B, T, H, d] -> [B, H, T, d]."""
    return tf.transpose(x, [0, 2, 1, 3])
