"""The rule against loops: a hypothesis may not produce an n-gram of tokens it already holds.

`no_repeat_ngram_size` counts tokens as fairseq (`--no-repeat-ngram-size`), Hugging Face and
CTranslate2 (`no_repeat_ngram_size`) count them: with n, a token is barred when the last n - 1
generated tokens followed by it form an n-gram the hypothesis already generated (n = 1 bars every
token generated before; 0 turns the rule off). Only generated tokens count, not the start token,
as in CTranslate2. A barred token's logit is set to NEG_INF before the search normalises the
row, so its probability is shared among the tokens still allowed, as CTranslate2 does: both
engines then rank, score and return the same hypotheses.

The check runs inside the search's tf.while_loop, vectorised over every alive beam: the beam's
last n - 1 tokens are compared with each earlier window of n - 1 tokens (n - 1 comparisons of
[B, K, index] tensors a step), and the token after each matching window is barred by one scatter
into the [B*K, V] logits. Nothing runs in Python per step; with n = 0 nothing is traced at all.
"""
import tensorflow as tf


def repeated_ngram_tokens(alive_seqs, index, ngram_size):
    """int32 [N, 2]: the (row of the flat [B*K, V] logits, token) pairs the rule bars now.

    alive_seqs int32 [B, K, L+1] (column 0 the start token, columns 1..index generated);
    index: the position just fed (scalar int32); ngram_size: static int n >= 1. A pair may
    appear more than once (an n-gram repeated twice already)."""
    n = int(ngram_size)
    # Windows start at generated columns 1 .. index - n + 1: every n-gram within 1 .. index.
    count = tf.maximum(index - n + 1, 0)
    matches = tf.ones(tf.concat([tf.shape(alive_seqs)[:2], [count]], 0), tf.bool)
    for j in range(n - 1):
        window = alive_seqs[:, :, 1 + j:1 + j + count]
        # The beam's own last n - 1 tokens (a valid column also when count is 0).
        last = tf.gather(alive_seqs, tf.maximum(index - n + 2 + j, 0), axis=2)
        matches &= tf.equal(window, last[:, :, None])
    following = alive_seqs[:, :, n:n + count]  # the token after each window
    where = tf.cast(tf.where(matches), tf.int32)  # [N, 3]: b, k, window
    beam_size = tf.shape(alive_seqs)[1]
    rows = where[:, 0] * beam_size + where[:, 1]
    return tf.stack([rows, tf.gather_nd(following, where)], axis=1)
