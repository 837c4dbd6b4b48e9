"""Multi-head scaled dot-product attention (paper section 3.2).

Projection weights use the same layout as keras.layers.MultiHeadAttention (query/key/value kernels
[d_model, heads, d_k], output kernel [heads, d_v, d_model]) so the two can be compared weight for
weight. Masks are additive biases (0 where allowed, a large negative number where not), so padding
and causal masks combine by addition.
"""
import math

import keras
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
    """softmax(Q K^T / sqrt(d_k) + bias) V over `num_heads` heads, then the output projection."""

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

    def _project(self, x, kernel, bias):
        y = ops.einsum("bsd,dhk->bshk", x, ops.cast(kernel, x.dtype))
        return y if bias is None else y + ops.cast(bias, x.dtype)

    def project_key_value(self, source):
        """[B, S, d] -> keys [B, S, H, d_k], values [B, S, H, d_v]; computed once per source."""
        return (self._project(source, self.key_kernel, self.key_bias),
                self._project(source, self.value_kernel, self.value_bias))

    def project_query(self, x):
        return self._project(x, self.query_kernel, self.query_bias)

    def attend(self, query, key, value, bias=None, training=False):
        """Projected q [B,T,H,k], k [B,S,H,k], v [B,S,H,v] -> (output [B,T,d], weights [B,H,T,S])."""
        query = query * ops.cast(self.key_dim ** -0.5, query.dtype)
        logits = ops.einsum("bthk,bshk->bhts", query, key)
        # Softmax in float32 even under mixed precision: masked logits are ~-1e9.
        logits = ops.cast(logits, "float32")
        if bias is not None:
            logits = logits + ops.cast(bias, "float32")
        weights = ops.softmax(logits, axis=-1)
        dropped = self.attention_dropout(ops.cast(weights, value.dtype), training=training)
        context = ops.einsum("bhts,bshv->bthv", dropped, value)
        output = ops.einsum("bthv,hvd->btd", context, ops.cast(self.output_kernel, context.dtype))
        if self.output_bias is not None:
            output = output + ops.cast(self.output_bias, output.dtype)
        return output, weights

    def call(self, query, source=None, bias=None, training=False, return_weights=False):
        source = query if source is None else source
        key, value = self.project_key_value(source)
        output, weights = self.attend(self.project_query(query), key, value, bias, training)
        return (output, weights) if return_weights else output

    def compute_output_shape(self, query_shape, source_shape=None):
        return query_shape

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout_rate, "use_bias": self.use_bias}
