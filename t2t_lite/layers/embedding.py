"""Shared token embedding / pre-softmax projection (section 3.4) and positional encodings (3.5)."""
import math

import keras
import numpy as np
import tensorflow as tf
from keras import ops


def sinusoid_table(length, d_model, layout="interleaved"):
    """The paper's PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d)).

    layout="concat" gives tensor2tensor's [sin | cos] halves instead of interleaving.
    Returns a float32 numpy array [length, d_model].
    """
    positions = np.arange(length, dtype=np.float64)[:, None]
    rates = np.power(10000.0, -np.arange(0, d_model, 2, dtype=np.float64) / d_model)[None, :]
    angles = positions * rates  # [length, d_model / 2]
    if layout == "interleaved":
        table = np.empty((length, d_model), dtype=np.float64)
        table[:, 0::2] = np.sin(angles)
        table[:, 1::2] = np.cos(angles)
    elif layout == "concat":
        table = np.concatenate([np.sin(angles), np.cos(angles)], axis=-1)
    else:
        raise ValueError(f"unknown sinusoid layout {layout!r}")
    return table.astype(np.float32)


class SharedEmbedding(keras.layers.Layer):
    """One [vocab, d_model] matrix for source and target embeddings and the output projection.

    Embeddings are multiplied by sqrt(d_model); the initial stddev d_model^-0.5 makes them unit scale
    after that multiplication (tensor2tensor's choice), while the pre-softmax projection uses the
    unscaled matrix.

    Args:
      vocab_size: rows of the matrix.
      d_model: its width.

    Called on int ids [...], returns their embeddings [..., d_model] times sqrt(d_model).
    """

    def __init__(self, vocab_size, d_model, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size, self.d_model = vocab_size, d_model

    def build(self, input_shape=None):
        self.embeddings = self.add_weight(
            name="embeddings", shape=(self.vocab_size, self.d_model),
            initializer=keras.initializers.RandomNormal(stddev=self.d_model ** -0.5))
        super().build(input_shape)

    def call(self, ids):
        vectors = ops.take(ops.cast(self.embeddings, self.compute_dtype), ids, axis=0)
        return vectors * ops.cast(math.sqrt(self.d_model), vectors.dtype)

    def logits(self, x):
        """[..., d_model] -> [..., vocab] with the same (unscaled) matrix, no bias."""
        # A plain 2-D matmul: an einsum with "..." broadcasts the embedding matrix over the
        # batch and its gradient materialises [batch, length, vocab, d_model].
        flat = tf.reshape(x, [-1, self.d_model])
        logits = tf.matmul(flat, tf.cast(self.embeddings, x.dtype), transpose_b=True)
        return tf.reshape(logits, tf.concat([tf.shape(x)[:-1], [self.vocab_size]], 0))

    def get_config(self):
        return {**super().get_config(), "vocab_size": self.vocab_size, "d_model": self.d_model}


class PositionEncoding(keras.layers.Layer):
    """Adds sinusoidal (fixed) or learned (Table 3 row E) position vectors to [B, T, d] inputs.

    Args:
      max_length: positions 0 .. max_length - 1 have vectors.
      d_model: their width.
      kind: "sinusoid" or "learned".
      layout: the sinusoids' layout, "interleaved" (the paper) or "concat" (tensor2tensor).

    Called on x [B, T, d_model] with an int `offset`, returns x plus the vectors of positions
    offset .. offset + T - 1.
    """

    def __init__(self, max_length, d_model, kind="sinusoid", layout="interleaved", **kwargs):
        super().__init__(**kwargs)
        self.max_length, self.d_model, self.kind, self.layout = max_length, d_model, kind, layout

    def build(self, input_shape=None):
        if self.kind == "learned":
            self.table = self.add_weight(
                name="position_embeddings", shape=(self.max_length, self.d_model),
                initializer=keras.initializers.RandomNormal(stddev=self.d_model ** -0.5))
        else:
            # Sinusoids for positions beyond max_length are well defined, but learned positions
            # end there, so one bound serves both kinds.
            self.table = ops.convert_to_tensor(
                sinusoid_table(self.max_length, self.d_model, self.layout))
        super().build(input_shape)

    def vectors(self, positions):
        """Position vectors for int positions of any shape -> [..., d_model]."""
        return ops.take(ops.cast(self.table, self.compute_dtype), positions, axis=0)

    def call(self, x, offset=0):
        length = ops.shape(x)[1]
        return x + self.vectors(ops.arange(length) + offset)[None, :, :]

    def get_config(self):
        return {**super().get_config(), "max_length": self.max_length, "d_model": self.d_model,
                "kind": self.kind, "layout": self.layout}
