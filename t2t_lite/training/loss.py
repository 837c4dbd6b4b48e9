"""Label-smoothed cross-entropy over non-pad target tokens (paper section 5.4).

Smoothing follows Szegedy et al. (which the paper cites): the target distribution is
(1 - eps) on the true token plus eps spread uniformly over the whole vocabulary. The smoothed loss
is what training minimises; the unsmoothed negative log-likelihood gives perplexity.

The loss is one fused op pair over the [tokens, vocab] logits: log-softmax forward, and a
hand-written gradient  w * (softmax - (1 - eps) * onehot - eps / V)  that never materialises a
one-hot or the dense scatter of a gather's gradient (autodiff of `gather(log_softmax)` turns the
gather's sparse gradient into a dense [B, T, V] unsorted-segment-sum, the costliest op of the
loss). On an 8k vocabulary the logits are the largest activation of the model, so every pass over
them counts: forward is one log-softmax, a gather and a mean; backward is exp, scale and shift
(elementwise) and one scatter of the target-token term.
"""
import tensorflow as tf


def _fused_loss_and_nll(logits, targets, weights, label_smoothing):
    """Per-token (smoothed loss * weights, nll * weights) with one fused gradient.

    logits [B, T, V] float32, targets [B, T] int32, weights [B, T] float32 (0 on pads).
    d/dlogits = p * (a + b) - a * eps / V - onehot * (a * (1 - eps) + b), with a, b the weighted
    upstream gradients of the loss and the nll and p = softmax(logits).
    """
    eps = float(label_smoothing)

    @tf.custom_gradient
    def fused(logits):
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        nll = -tf.gather(log_probs, targets, batch_dims=targets.shape.rank)  # [B, T] or [n]
        if eps:
            uniform = -tf.reduce_mean(log_probs, axis=-1)  # CE against the uniform distribution
            loss = (1.0 - eps) * nll + eps * uniform
        else:
            loss = nll

        def grad(loss_upstream, nll_upstream):
            a = (loss_upstream if loss_upstream is not None else 0.0) * weights  # [B, T]
            b = (nll_upstream if nll_upstream is not None else 0.0) * weights
            vocab = tf.shape(logits)[-1]
            dlogits = tf.exp(log_probs) * (a + b)[..., None]
            if eps:
                dlogits = dlogits - (a * (eps / tf.cast(vocab, a.dtype)))[..., None]
            # The one-hot term as a scatter into the gradient at each target id.
            rows = tf.range(tf.size(targets))
            indices = tf.stack([rows, tf.reshape(targets, [-1])], axis=1)
            flat = tf.tensor_scatter_nd_sub(tf.reshape(dlogits, [-1, vocab]), indices,
                                            tf.reshape(a * (1.0 - eps) + b, [-1]))
            return tf.reshape(flat, tf.shape(logits))

        return (loss * weights, nll * weights), grad

    return fused(logits)


def model_logits(model, batch, training, packed=True):
    """(logits, targets) of a teacher-forced batch for token_statistics: the real target tokens
    only ([n, V], [n]) from a model that can pack them (Transformer.packed_logits: no work on
    pads), else the padded [B, T, V], [B, T]. packed=False for XLA (fixed shapes)."""
    if packed and hasattr(model, "packed_logits"):
        return model.packed_logits(batch, training=training)
    return model(batch, training=training), batch["targets"]


def token_statistics(logits, targets, label_smoothing):
    """Sums over the batch's non-pad target tokens.

    logits [B, T, V] float32, targets [B, T] int (0 = pad); or packed real tokens [n, V], [n].
    Returns dict of scalars: loss (smoothed CE sum), nll (sum), correct, tokens (float32).
    """
    logits = tf.cast(logits, tf.float32)
    targets = tf.cast(targets, tf.int32)
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    loss, nll = _fused_loss_and_nll(logits, targets, weights, label_smoothing)
    # Correct when the target's logit is the largest (a tie counts): a max and a gather cost
    # about half of an argmax over the vocabulary.
    target_logits = tf.gather(logits, targets, batch_dims=targets.shape.rank)
    correct = tf.cast(target_logits >= tf.reduce_max(logits, axis=-1), tf.float32)
    return {
        "loss": tf.reduce_sum(loss),
        "nll": tf.reduce_sum(nll),
        "correct": tf.reduce_sum(correct * weights),
        "tokens": tf.reduce_sum(weights),
    }
