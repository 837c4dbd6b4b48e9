"""Position-wise feed-forward network (paper section 3.3): max(0, x W1 + b1) W2 + b2."""
import keras
import tensorflow as tf


class FeedForward(keras.layers.Layer):
    """The position-wise feed-forward network, on every position independently.

    Args:
      d_model: input and output width.
      d_ff: the inner (ReLU) width.
      relu_dropout: dropout on the inner activations (tensor2tensor's; 0 in the paper).

    Called on x [..., d_model], returns [..., d_model].
    """

    def __init__(self, d_model, d_ff, relu_dropout=0.0, **kwargs):
        super().__init__(**kwargs)
        self.d_model, self.d_ff, self.relu_dropout_rate = d_model, d_ff, relu_dropout
        self.inner = keras.layers.Dense(d_ff, activation="relu", name="inner")
        self.relu_dropout = keras.layers.Dropout(relu_dropout)
        self.outer = keras.layers.Dense(d_model, name="outer")

    def build(self, input_shape):
        self.inner.build(input_shape)
        self.outer.build(tuple(input_shape[:-1]) + (self.d_ff,))
        super().build(input_shape)

    def call(self, x, training=False):
        # The Dense layers hold the weights; the computation is two 2-D matmuls over all tokens,
        # written as MatMul -> BiasAdd -> Relu so grappler fuses them into one oneDNN kernel.
        dtype = x.dtype
        shape = tf.shape(x)
        flat = tf.reshape(x, [-1, self.d_model])
        hidden = tf.nn.relu(tf.nn.bias_add(tf.matmul(flat, tf.cast(self.inner.kernel, dtype)),
                                           tf.cast(self.inner.bias, dtype)))
        hidden = self.relu_dropout(hidden, training=training)
        out = tf.nn.bias_add(tf.matmul(hidden, tf.cast(self.outer.kernel, dtype)),
                             tf.cast(self.outer.bias, dtype))
        return tf.reshape(out, shape)

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "d_model": self.d_model, "d_ff": self.d_ff,
                "relu_dropout": self.relu_dropout_rate}
