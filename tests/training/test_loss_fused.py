"""The fused label-smoothed loss: same values and gradients as plain autodiff of the formula."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.training.loss import token_statistics


def _reference(logits, targets, eps):
    """The unfused formula, differentiated by TensorFlow (log-softmax, gather, mean)."""
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    nll = -tf.gather(log_probs, targets, batch_dims=2)
    loss = (1.0 - eps) * nll - eps * tf.reduce_mean(log_probs, axis=-1) if eps else nll
    return tf.reduce_sum(loss * weights), tf.reduce_sum(nll * weights)


def _case(seed=0, batch=3, length=6, vocab=11):
    rng = np.random.default_rng(seed)
    logits = tf.constant(rng.normal(size=(batch, length, vocab)).astype("float32") * 3)
    targets = rng.integers(1, vocab, size=(batch, length)).astype("int32")
    targets[0, 4:] = 0  # padding
    targets[2, 1:] = 0
    return logits, tf.constant(targets)


@pytest.mark.parametrize("eps", [0.0, 0.1, 0.3])
@pytest.mark.parametrize("which", ["loss", "nll", "both"])
def test_fused_loss_values_and_gradients_equal_autodiff(eps, which):
    logits, targets = _case()
    coefficients = {"loss": (1.0, 0.0), "nll": (0.0, 1.0), "both": (0.7, -0.4)}[which]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(logits)
        stats = token_statistics(logits, targets, eps)
        ours = coefficients[0] * stats["loss"] + coefficients[1] * stats["nll"]
        ref_loss, ref_nll = _reference(logits, targets, eps)
        ref = coefficients[0] * ref_loss + coefficients[1] * ref_nll
    np.testing.assert_allclose(float(stats["loss"]), float(ref_loss), rtol=1e-6)
    np.testing.assert_allclose(float(stats["nll"]), float(ref_nll), rtol=1e-6)
    grad, ref_grad = tape.gradient(ours, logits), tape.gradient(ref, logits)
    np.testing.assert_allclose(grad.numpy(), ref_grad.numpy(), atol=1e-6)
    # Pad positions get exactly no gradient.
    assert np.all(grad.numpy()[0, 4:] == 0) and np.all(grad.numpy()[2, 1:] == 0)


def test_fused_loss_gradient_inside_tf_function_and_xla():
    logits, targets = _case(seed=1, vocab=37)

    def gradient(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = token_statistics(logits, targets, 0.1)["loss"]
        return tape.gradient(loss, logits)

    def reference(logits):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = _reference(logits, targets, 0.1)[0]
        return tape.gradient(loss, logits)

    expected = reference(logits).numpy()
    for jit in (False, True):
        got = tf.function(gradient, jit_compile=jit)(logits).numpy()
        np.testing.assert_allclose(got, expected, atol=1e-6)


@pytest.mark.parametrize("eps", [0.0, 0.1])
@pytest.mark.parametrize("which", ["loss", "nll", "both"])
def test_loss_from_hidden_rows_equals_autodiff_of_projection_and_formula(eps, which):
    """hidden_token_statistics fuses the output projection's gradient into the loss's (the
    one-hot and uniform terms as n-row and rank-one updates): same sums, the same gradients
    for the hidden rows and the matrix as autodiff of matmul + the unfused formula."""
    from t2t_lite.training.loss import hidden_token_statistics

    rng = np.random.default_rng(3)
    hidden = tf.constant(rng.normal(size=(9, 6)).astype("float32"))
    matrix = tf.constant(rng.normal(size=(13, 6)).astype("float32"))
    targets = tf.constant([3, 5, 5, 12, 1, 7, 5, 2, 0], tf.int32)  # repeats, and a pad (0)
    coefficients = {"loss": (1.0, 0.0), "nll": (0.0, 1.0), "both": (0.7, -0.4)}[which]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([hidden, matrix])
        stats = hidden_token_statistics(hidden, matrix, targets, eps)
        ours = coefficients[0] * stats["loss"] + coefficients[1] * stats["nll"]
        logits = tf.matmul(hidden, matrix, transpose_b=True)[None]
        ref_loss, ref_nll = _reference(logits, targets[None], eps)
        ref = coefficients[0] * ref_loss + coefficients[1] * ref_nll
        plain = token_statistics(logits, targets[None], eps)
    np.testing.assert_allclose(float(stats["loss"]), float(ref_loss), rtol=1e-5)
    np.testing.assert_allclose(float(stats["nll"]), float(ref_nll), rtol=1e-5)
    assert float(stats["correct"]) == float(plain["correct"])
    assert float(stats["tokens"]) == 8.0
    for ours_grad, ref_grad in zip(tape.gradient(ours, [hidden, matrix]),
                                   tape.gradient(ref, [hidden, matrix])):
        np.testing.assert_allclose(ours_grad.numpy(), ref_grad.numpy(), atol=1e-5)
