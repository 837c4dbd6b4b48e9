"""Label-smoothed cross-entropy over non-pad target tokens (paper section 5.4).

Smoothing follows Szegedy et al. (which the paper cites): the target distribution is
(1 - eps) on the true token plus eps spread uniformly over the whole vocabulary. The smoothed loss
is what training minimises; the unsmoothed negative log-likelihood gives perplexity.
"""
import tensorflow as tf


def token_statistics(logits, targets, label_smoothing):
    """Sums over the batch's non-pad target tokens.

    logits [B, T, V] float32, targets [B, T] int (0 = pad).
    Returns dict of scalars: loss (smoothed CE sum), nll (sum), correct, tokens (float32).
    """
    logits = tf.cast(logits, tf.float32)
    targets = tf.cast(targets, tf.int32)
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    log_probs = tf.nn.log_softmax(logits, axis=-1)
    nll = -tf.gather(log_probs, targets, batch_dims=2)  # [B, T]
    if label_smoothing:
        uniform = -tf.reduce_mean(log_probs, axis=-1)  # CE against the uniform distribution
        loss = (1.0 - label_smoothing) * nll + label_smoothing * uniform
    else:
        loss = nll
    correct = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), targets),
                      tf.float32)
    return {
        "loss": tf.reduce_sum(loss * weights),
        "nll": tf.reduce_sum(nll * weights),
        "correct": tf.reduce_sum(correct * weights),
        "tokens": tf.reduce_sum(weights),
    }
