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

    Each projection is one 2-D matmul over all B*T tokens ([N, d] x [d, H*d_k], the 1/sqrt(d_k)
    folded into the query kernel); scores and context are batched matmuls in the heads-first
    layout [B, H, T, d], the output projection one 2-D matmul again. One fused Q|K|V matmul was
    measured slower on CPU (bench/PROFILE.md): the split of its output and the concat of its
    gradient copy every activation, while a 3x wider matmul gains nothing under oneDNN.
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

    # ---- projections ---------------------------------------------------------------------------
    def _projection(self, flat, leading, kernel, bias, scale=1.0):
        """flat [N, d_in] -> [*leading, H, dim]: one 2-D matmul over every token."""
        y = self._flat_projection(flat, kernel, bias, scale)
        return tf.reshape(y, tf.concat([leading, [kernel.shape[1], kernel.shape[2]]], 0))

    def _flat_projection(self, flat, kernel, bias, scale=1.0):
        """flat [N, d_in] -> [N, H*dim]."""
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
        flat = tf.reshape(x, [-1, parts[0][0].shape[0]])  # d_in from the kernel: always static
        leading = tf.shape(x)[:-1]
        return tuple(self._projection(flat, leading, *part) for part in parts)

    def project_key_value(self, source):
        """[B, S, d] -> keys [B, S, H, d_k], values [B, S, H, d_v]; computed once per source."""
        return self._projections(source, [(self.key_kernel, self.key_bias),
                                          (self.value_kernel, self.value_bias)])

    def project_query(self, x):
        return self._projections(x, [(self.query_kernel, self.query_bias)])[0]

    def project_query_key_value(self, x, scale_query=False):
        """Self-attention's three projections of x [B, T, d] (queries optionally pre-multiplied
        by 1/sqrt(d_k), folded into the kernel)."""
        scale = self.key_dim ** -0.5 if scale_query else 1.0
        return self._projections(x, [(self.query_kernel, self.query_bias, scale),
                                     (self.key_kernel, self.key_bias),
                                     (self.value_kernel, self.value_bias)])

    # ---- attention -----------------------------------------------------------------------------
    def _context(self, query, key, value, bias, training):
        """The attention core every path shares: scaled q [..., T, k], k [..., S, k],
        v [..., S, v] -> (context [..., T, v], weights [..., T, S])."""
        logits = tf.matmul(query, key, transpose_b=True)
        # Softmax in float32 even under mixed precision: masked logits are ~-1e9.
        logits = tf.cast(logits, tf.float32)
        if bias is not None:
            logits = logits + tf.cast(bias, tf.float32)
        weights = tf.nn.softmax(logits, axis=-1)
        dropped = self.attention_dropout(tf.cast(weights, value.dtype), training=training)
        return tf.matmul(dropped, value), weights

    def attend_heads_first(self, query, key, value, bias=None, training=False):
        """Scaled q [B,H,T,k], k [B,H,S,k], v [B,H,S,v] -> (output [B,T,d], weights [B,H,T,S]).

        `query` must already be multiplied by 1/sqrt(d_k).
        """
        context, weights = self._context(query, key, value, bias, training)  # [B, H, T, v]
        context = tf.transpose(context, [0, 2, 1, 3])  # [B, T, H, v]
        shape = tf.shape(context)
        output = self._output_projection(
            tf.reshape(context, [-1, self.num_heads * self.value_dim]))
        # Explicit sizes, never -1: an empty batch must keep its shape.
        output = tf.reshape(output, tf.concat([shape[:2], [self.output_kernel.shape[-1]]], 0))
        return output, weights

    def _output_projection(self, flat):
        """Concatenated heads [N, H*d_v] -> [N, d_model]: one 2-D matmul."""
        kernel = tf.reshape(tf.cast(self.output_kernel, flat.dtype),
                            [self.num_heads * self.value_dim, -1])
        output = tf.matmul(flat, kernel)
        if self.output_bias is not None:
            output = tf.nn.bias_add(output, tf.cast(self.output_bias, output.dtype))
        return output

    # ---- one decoding position -----------------------------------------------------------------
    def _scaled_query(self, query):
        # The same multiply as attend(), so a step computes the numbers of the full pass.
        return query * tf.cast(self.key_dim ** -0.5, query.dtype)

    def attend_cached(self, query, key, value, training=False):
        """One position per row against its own heads-first cache, every cached position visible:
        q [N, 1, H, k] (unscaled), k [N, H, t, k], v [N, H, t, v] -> output [N, 1, d].

        With a single query position, [N, 1, H, k] and [N, H, 1, k] are the same memory, so
        neither the query, the cache nor the context is transposed (a transpose of the cache per
        step and layer cost more than the attention itself).
        """
        rows = tf.shape(query)[0]
        query = tf.reshape(self._scaled_query(query),
                           [rows, self.num_heads, 1, self.key_dim])
        context, _ = self._context(query, key, value, None, training)  # [N, H, 1, v]
        context = tf.reshape(context, [rows, self.num_heads * self.value_dim])
        return tf.reshape(self._output_projection(context), [rows, 1, -1])

    def attend_grouped(self, query, key, value, bias, queries_per_example, training=False):
        """Several single-position rows per example against that example's one set of keys:
        q [B*G, 1, H, k] (unscaled; rows b*G .. b*G+G-1 belong to example b), heads-first
        k [B, H, S, k], v [B, H, S, v], bias [B, 1, 1, S] -> output [B*G, 1, d].

        Beam search's G = K beams share their example's encoder keys/values: the G queries of an
        example become its query positions, so the keys are read once per example instead of
        being tiled to B*K rows.
        """
        examples, rows = tf.shape(key)[0], tf.shape(query)[0]
        group = int(queries_per_example)
        query = tf.reshape(self._scaled_query(query),
                           [examples, group, self.num_heads, self.key_dim])
        query = tf.transpose(query, [0, 2, 1, 3])  # [B, H, G, k]
        context, _ = self._context(query, key, value, bias, training)  # [B, H, G, v]
        context = tf.transpose(context, [0, 2, 1, 3])  # [B, G, H, v]
        context = tf.reshape(context, [rows, self.num_heads * self.value_dim])
        return tf.reshape(self._output_projection(context), [rows, 1, -1])

    def attend(self, query, key, value, bias=None, training=False):
        """Projected q [B,T,H,k], k [B,S,H,k], v [B,S,H,v] -> (output [B,T,d], weights [B,H,T,S])."""
        query = query * tf.cast(self.key_dim ** -0.5, query.dtype)
        heads_first = lambda x: tf.transpose(x, [0, 2, 1, 3])
        return self.attend_heads_first(heads_first(query), heads_first(key), heads_first(value),
                                       bias, training)

    def call(self, query, source=None, bias=None, training=False, return_weights=False):
        heads_first = lambda x: tf.transpose(x, [0, 2, 1, 3])
        if source is None:
            q, key, value = self.project_query_key_value(query, scale_query=True)
        else:
            scale = self.key_dim ** -0.5
            q = self._projections(query, [(self.query_kernel, self.query_bias, scale)])[0]
            key, value = self.project_key_value(source)
        output, weights = self.attend_heads_first(heads_first(q), heads_first(key),
                                                  heads_first(value), bias, training)
        return (output, weights) if return_weights else output

    def call_packed(self, rows, packing, bias=None, training=False, key_value=None):
        """Attention on packed real-token rows (layers/packing.py): rows [n, d] -> [n, d].

        Self-attention by default; cross-attention with key_value, the pair
        `project_packed_key_value` returned for the source rows.
        """
        with tf.name_scope(self.name):  # not called through __call__: name its ops for profiles
            return self._call_packed(rows, packing, bias, training, key_value)

    def _call_packed(self, rows, packing, bias, training, key_value):
        query = packing.unpack_heads(
            self._flat_projection(rows, self.query_kernel, self.query_bias, self.key_dim ** -0.5),
            self.num_heads)
        key, value = key_value or self.project_packed_key_value(rows, packing)
        context, _ = self._context(query, key, value, bias, training)  # [B, H, T, v]
        return self._output_projection(packing.pack_heads(context))  # from [n, H*d_v]

    def project_packed_key_value(self, source_rows, source_packing):
        """Packed source rows [m, d] -> heads-first padded keys and values [B, H, S, d]."""
        pairs = [(self.key_kernel, self.key_bias), (self.value_kernel, self.value_bias)]
        with tf.name_scope(self.name):
            return tuple(source_packing.unpack_heads(self._flat_projection(source_rows, *pair),
                                                     self.num_heads) for pair in pairs)

    def compute_output_shape(self, query_shape, source_shape=None):
        return query_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout_rate, "use_bias": self.use_bias}
