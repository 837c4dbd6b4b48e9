"""Label-smoothed cross-entropy over non-pad target tokens (paper section 5.4).

Smoothing follows Szegedy et al. (which the paper cites): the target distribution is
(1 - eps) on the true token plus eps spread uniformly over the whole vocabulary. The smoothed loss
is what training minimises; the unsmoothed negative log-likelihood gives perplexity.

The loss is one fused op pair over the [tokens, vocab] logits: log-softmax forward, and a
hand-written gradient  w * (softmax - (1 - eps) * onehot - eps / V)  that never materialises a
one-hot or the dense scatter of a gather's gradient (autodiff of `gather(log_softmax)` turns the
gather's sparse gradient into a dense [B, T, V] unsorted-segment-sum, the costliest op of the
loss). With a vocabulary of thousands the logits are the largest activation of the model, so
every pass over them counts: forward is one log-softmax, a gather and a mean; backward is exp,
scale and shift (elementwise) and one scatter of the target-token term.

Training a Transformer goes one step further (`batch_statistics` -> `hidden_token_statistics`):
the loss takes the decoder's packed hidden rows and the output matrix, so the shift and the
target-token term pass through the projection as a rank-one update and n rows, and backward's
only [n, V] work is exp and scale.
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


def _hidden_loss_and_nll(hidden, matrix, targets, weights, label_smoothing):
    """Per-token (smoothed loss * weights, nll * weights, target logit, max logit) of logits
    hidden @ matrix^T, with one gradient for the projection and the loss together.

    hidden [n, d], matrix [V, d] (the compute dtype), targets [n] int32, weights [n] float32.
    With G = p * (a + b) (a, b the weighted upstream gradients of the loss and the nll), the
    logits' gradient is G - k - onehot * u (k = a * eps / V, u = a * (1 - eps) + b). Only G is a
    [n, V] tensor: the constant k and the one-hot u pass through the projection as a rank-one
    term and a gather / scatter of n rows, so no [n, V] pass subtracts or scatters them. The
    uniform term's mean logit is hidden @ mean(matrix), not a pass over the logits.
    """
    eps = float(label_smoothing)
    vocab = matrix.shape[0]

    @tf.custom_gradient
    def fused(hidden, matrix):
        logits = tf.cast(tf.matmul(hidden, matrix, transpose_b=True), tf.float32)
        log_probs = tf.nn.log_softmax(logits, axis=-1)
        target_logits = tf.gather(logits, targets, batch_dims=1)
        nll = -tf.gather(log_probs, targets, batch_dims=1)
        loss = nll
        if eps:
            mean_row = tf.reduce_mean(tf.cast(matrix, tf.float32), axis=0)
            mean_logits = tf.linalg.matvec(tf.cast(hidden, tf.float32), mean_row)
            # -mean(log_probs) = lse - mean(logits), lse = target logit + nll.
            loss = (1.0 - eps) * nll + eps * (target_logits + nll - mean_logits)
        max_logits = tf.reduce_max(logits, axis=-1)

        def grad(loss_upstream, nll_upstream, *_):
            a = (loss_upstream if loss_upstream is not None else 0.0) * weights  # [n]
            b = (nll_upstream if nll_upstream is not None else 0.0) * weights
            dense = tf.cast(tf.exp(log_probs) * (a + b)[:, None], hidden.dtype)
            d_hidden = tf.cast(tf.matmul(dense, matrix), tf.float32)
            d_matrix = tf.cast(tf.matmul(dense, hidden, transpose_a=True), tf.float32)
            u = a * (1.0 - eps) + b
            hidden32, matrix32 = tf.cast(hidden, tf.float32), tf.cast(matrix, tf.float32)
            d_hidden -= u[:, None] * tf.gather(matrix32, targets)
            d_matrix = tf.tensor_scatter_nd_sub(d_matrix, targets[:, None],
                                                u[:, None] * hidden32)
            if eps:
                k = a * (eps / vocab)
                d_hidden -= k[:, None] * tf.reduce_sum(matrix32, axis=0)[None, :]
                d_matrix -= tf.linalg.matvec(hidden32, k, transpose_a=True)[None, :]
            return tf.cast(d_hidden, hidden.dtype), tf.cast(d_matrix, matrix.dtype)

        return (loss * weights, nll * weights, target_logits, max_logits), grad

    return fused(hidden, matrix)


def batch_statistics(model, batch, training, label_smoothing, packed=True):
    """token_statistics of a teacher-forced batch. A model that can run on the real tokens
    alone (Transformer.packed_hidden: no work on pads) gives its final hidden rows and the
    output matrix, and the loss computes the logits itself (hidden_token_statistics); any other
    model, or packed=False (XLA: fixed shapes), goes through its padded logits."""
    if packed and hasattr(model, "packed_hidden"):
        hidden, targets = model.packed_hidden(batch, training=training)
        return hidden_token_statistics(hidden, model.output_matrix(hidden.dtype), targets,
                                       label_smoothing)
    return token_statistics(model(batch, training=training), batch["targets"], label_smoothing)


def hidden_token_statistics(hidden, matrix, targets, label_smoothing):
    """token_statistics of the logits hidden [n, d] @ matrix [V, d]^T for targets [n]: the same
    sums, with the projection's gradient fused into the loss's (_hidden_loss_and_nll)."""
    targets = tf.cast(targets, tf.int32)
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    loss, nll, target_logits, max_logits = _hidden_loss_and_nll(hidden, matrix, targets, weights,
                                                                label_smoothing)
    return _sums(loss, nll, target_logits >= max_logits, weights)


def _sums(loss, nll, correct, weights):
    """The statistics' dict from per-token weighted loss and nll, bool correct and weights."""
    return {
        "loss": tf.reduce_sum(loss),
        "nll": tf.reduce_sum(nll),
        "correct": tf.reduce_sum(tf.cast(correct, tf.float32) * weights),
        "tokens": tf.reduce_sum(weights),
    }


def token_statistics(logits, targets, label_smoothing):
    """Sums over the batch's non-pad target tokens.

    logits [B, T, V] float32, targets [B, T] int (0 = pad); or packed real tokens [n, V], [n].
    Returns dict of scalars: loss (smoothed CE sum), nll (sum), correct, tokens (float32).
    """
    logits = tf.cast(logits, tf.float32)
    targets = tf.cast(targets, tf.int32)
    weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
    loss, nll = _fused_loss_and_nll(logits, targets, weights, label_smoothing)
    # Correct when the target's logit is the largest (a tie counts): a max and a gather are
    # cheaper than an argmax over the vocabulary.
    target_logits = tf.gather(logits, targets, batch_dims=targets.shape.rank)
    return _sums(loss, nll, target_logits >= tf.reduce_max(logits, axis=-1), weights)
