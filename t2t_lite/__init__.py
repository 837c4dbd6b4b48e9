"""t2t_lite: the Transformer of "Attention Is All You Need" on TensorFlow 2 / Keras 3."""
import os as _os

# Keras 3 must run on TensorFlow here: tf.data, tf.distribute and SavedModel export depend on it.
_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

__version__ = "0.1.0"
