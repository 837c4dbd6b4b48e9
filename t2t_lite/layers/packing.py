"""Real-token rows of a padded batch, for training without work on pad positions.

A length-bucketed batch still pads every sentence to its bucket's longest. Everything in a
Transformer but the attention core is token-wise (projections, feed-forward, layer norms, residuals, logits, loss),
so it can run on the real tokens alone, packed into [n, d] rows: the "remove padding" of
FasterTransformer. Only the attention's scores and context need the padded [B, H, T, d] layout,
which `unpack_heads` builds straight from the packed projections (one gather, no transpose) and
`pack_heads` leaves again.

Pad positions of an unpacked tensor hold a copy of some real row, not zeros: attention masks pad
keys (their weights are exactly 0) and drops pad queries' outputs, so their contents never reach
a result, and the hand-written gradients below skip them.
"""
import tensorflow as tf


class Packing:
    """The real (non-zero) positions of ids [B, T], in row-major order.

    mask:       bool [B, T], True at real tokens
    rows:       [n] flat position b * T + t of each real token
    positions:  [n] its position t in the sentence (for position encodings)
    """

    def __init__(self, ids):
        ids = tf.convert_to_tensor(ids)
        shape = tf.shape(ids)
        self.batch, self.length = shape[0], shape[1]
        self.mask = tf.not_equal(ids, 0)
        flat_real = tf.reshape(self.mask, [-1])
        self.rows = tf.cast(tf.where(flat_real)[:, 0], tf.int32)
        self.count = tf.size(self.rows)
        self.positions = self.rows % self.length
        # For every padded position, the packed row that fills it: its own, or row 0 at pads.
        self._row_at = tf.scatter_nd(self.rows[:, None], tf.range(self.count),
                                     [self.batch * self.length])
        self._heads_maps = {}

    def gather(self, padded):
        """[B, T, ...] -> [n, ...] (plain autodiff: for ids and other non-differentiable input)."""
        flat = tf.reshape(padded, tf.concat([[-1], tf.shape(padded)[2:]], 0))
        return tf.gather(flat, self.rows)

    def _maps(self, heads):
        """Flat row indices for `heads` heads-first rows: (padded <- packed, padded <- packed
        with pads reading row n * H, one past the end, packed <- padded)."""
        if heads not in self._heads_maps:
            head = tf.range(heads)
            # Heads-first padded row (b, h, t) reads packed row row_at[b, t] * H + h.
            row_at = tf.reshape(self._row_at, [self.batch, 1, self.length])
            unpack = row_at * heads + head[None, :, None]
            past_end = tf.where(self.mask[:, None, :], unpack, self.count * heads)
            # Packed row r * H + h comes from padded row (b * H + h) * T + t, b, t from rows[r].
            b = (self.rows // self.length)[:, None]
            t = self.positions[:, None]
            pack = tf.reshape((b * heads + head[None, :]) * self.length + t, [-1])
            self._heads_maps[heads] = (tf.reshape(unpack, [-1]), tf.reshape(past_end, [-1]),
                                       pack)
        return self._heads_maps[heads]

    def unpack_heads(self, rows, heads):
        """Packed projections [n, H*d] -> heads-first [B, H, T, d] (pads: copies of real rows)."""
        unpack, _, pack = self._maps(heads)
        depth = rows.shape[-1] // heads
        padded_shape = tf.stack([self.batch, heads, self.length, depth])

        @tf.custom_gradient
        def unpacked(rows):
            flat = tf.gather(tf.reshape(rows, [-1, depth]), unpack)

            def grad(upstream):
                # Pads' gradients are zero (masked keys, dropped queries): read real rows only.
                return tf.reshape(tf.gather(tf.reshape(upstream, [-1, depth]), pack),
                                  [-1, heads * depth])

            return tf.reshape(flat, padded_shape), grad

        return unpacked(rows)

    def pack_heads(self, padded):
        """Heads-first [B, H, T, d] -> packed [n, H*d] (the concatenated heads of real rows)."""
        heads, depth = padded.shape[1], padded.shape[3]
        _, unpack_zeros, pack = self._maps(heads)

        @tf.custom_gradient
        def packed(padded):
            rows = tf.gather(tf.reshape(padded, [-1, depth]), pack)

            def grad(upstream):
                # Zeros at pads (a dropped output has no gradient): pads read an appended zero
                # row, a gather and a concat cheaper than a zero-filling scatter_nd.
                upstream = tf.concat([tf.reshape(upstream, [-1, depth]),
                                      tf.zeros([1, depth], upstream.dtype)], 0)
                return tf.reshape(tf.gather(upstream, unpack_zeros), tf.shape(padded))

            return tf.reshape(rows, [-1, heads * depth]), grad

        return packed(padded)
