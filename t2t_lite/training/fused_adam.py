"""Adam whose per-variable update is TensorFlow's one fused kernel (ResourceApplyAdam).

Keras 3's Adam builds each variable's update from ~10 elementwise ops (casts, two assign_adds,
square, sqrt, divide, ...), each a pass over the variable; the fused kernel reads and writes the
variable, m and v once. Same formula, same slot variables (checkpoints are interchangeable):
    alpha = lr * sqrt(1 - beta2^t) / (1 - beta1^t)
    m += (1 - beta1) (g - m);  v += (1 - beta2) (g^2 - v);  var -= alpha m / (sqrt(v) + eps)
"""
import keras
import tensorflow as tf


def _handle(variable):
    if isinstance(variable, keras.Variable):  # a Keras variable wraps a tf.Variable
        variable = variable.value
    return variable.handle


class FusedAdam(keras.optimizers.Adam):
    """keras.optimizers.Adam with the update in one TensorFlow kernel per variable."""

    def update_step(self, gradient, variable, learning_rate):
        if self.amsgrad or isinstance(gradient, tf.IndexedSlices):
            return super().update_step(gradient, variable, learning_rate)
        dtype = variable.dtype
        index = self._get_variable_index(variable)
        step = tf.cast(self.iterations + 1, dtype)
        beta_1, beta_2 = tf.cast(self.beta_1, dtype), tf.cast(self.beta_2, dtype)
        tf.raw_ops.ResourceApplyAdam(
            var=_handle(variable), m=_handle(self._momentums[index]),
            v=_handle(self._velocities[index]), beta1_power=tf.pow(beta_1, step),
            beta2_power=tf.pow(beta_2, step), lr=tf.cast(learning_rate, dtype), beta1=beta_1,
            beta2=beta_2, epsilon=tf.cast(self.epsilon, dtype), grad=tf.cast(gradient, dtype))
