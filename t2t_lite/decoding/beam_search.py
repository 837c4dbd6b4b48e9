"""Beam search over any `tokens_to_logits` function, in one tf.while_loop.

The search never sees a model. Each step it calls

    tokens_to_logits(ids [N] int32, index int32 scalar, cache, static) -> (logits [N, V], cache)

for the N = B*K beams of the B examples still searching, where `ids` are the tokens at position
`index` (position 0 holds the start token, pad id 0). `cache` is gathered along the surviving
beams every step, and may grow along its axes of initial size 0; `static` (e.g. encoder outputs)
is not: it is tiled to B*K once, or with tile_static=False left at B rows for a tokens_to_logits
that serves the K consecutive rows of an example from that example's one row.

An example whose n-best are final leaves the batch: sentences end at different steps, and the
search should not compute the finished ones until the longest is done. The cache's beam gather
drops its rows, and `static` is gathered only at the steps where an example leaves. Shapes
therefore change from step to step (no XLA).

Two sets of K hypotheses are kept per example, as in tensor2tensor and flax:
  alive    - sequences without EOS, ranked by raw log probability (the ones we extend);
  finished - sequences ending in EOS, ranked by log probability / GNMT length penalty.
Each step expands alive beams to the top 2K candidates, so that at least K of them do not end in
EOS (at most one EOS candidate comes from each beam). The full [B, K*V] table of candidate scores
is never built: the global top 2K lie among each beam's own top 2K tokens, so each beam row
contributes its top 2K logits (found block-wise, see _row_top_k) normalised by its log-sum-exp,
and the search ranks those K * 2K. An EOS candidate becomes a finished
hypothesis only if it ranks among the top K candidates, i.e. only if a width-K beam would really
have chosen it (as in fairseq and Hugging Face); this makes beam 1 with alpha 0 exactly greedy.

Every sequence ends with EOS: at the last position an example allows (`decode_lengths`), EOS is
the only token left, and it keeps the model's own log probability (fairseq's rule), so scores stay
true sequence probabilities. The loop stops as soon as no alive beam can still beat the worst
finished one, even at the most favourable length penalty.

With no_repeat_ngram_size n > 0, a hypothesis may not produce an n-gram of tokens it already
holds (decoding/repeats.py): those tokens leave the row before it is normalised, as CTranslate2
does, so scores are the log probabilities of the distribution the rule leaves.
"""
from typing import Any, NamedTuple

import tensorflow as tf

from t2t_lite.config import DecodeConfig, ModelConfig
from t2t_lite.decoding import repeats

# Large but finite "minus infinity": sums of it stay finite and ordered, unlike -inf (which turns
# into NaN in -inf - -inf and makes top_k ties arbitrary).
NEG_INF = -1.0e9
# Anything below this is a dead hypothesis (a descendant of a NEG_INF one), never a real one.
_DEAD = NEG_INF / 2


class _NBest(NamedTuple):
    """K finished hypotheses per example, best first."""
    seqs: tf.Tensor  # int32 [B, K, L+1], column 0 the start token
    scores: tf.Tensor  # float32 [B, K], log probability / length penalty
    flags: tf.Tensor  # bool [B, K], the slot holds a real hypothesis
    # constrained_search's per-hypothesis extras (model scores, unmet constraints); () here.
    extra: Any = ()


class _Beams(NamedTuple):
    """The examples still searching, one row each: gathered together when examples leave."""
    alive_seqs: tf.Tensor  # int32 [B, K, L+1], sequences without EOS, best first
    alive_log_probs: tf.Tensor  # float32 [B, K], their log probabilities
    finished: _NBest
    decode_lengths: tf.Tensor  # int32 [B], each example's limit (EOS included)
    max_penalty: tf.Tensor  # float32 [B], the most favourable length penalty still possible
    rows: tf.Tensor  # int32 [B], each example's row in the caller's batch
    # constrained_search's per-example constraints and per-beam progress; () here.
    constraints: Any = ()


class _SearchState(NamedTuple):
    """What the search loop carries from one step to the next."""
    index: tf.Tensor  # int32 scalar, the position whose tokens are fed next
    beams: _Beams
    cache: Any  # tokens_to_logits' cache, one row per beam of the examples still searching
    static: Any  # tokens_to_logits' static, one row per such example (or per beam, tiled)
    results: _NBest  # every example's n-best at its original row, written when it leaves


def without_repeats(logits, alive_seqs, index, ngram_size, keep=None):
    """float32 logits [B*K, V] with the tokens the rule against loops bars (repeats.py) at
    NEG_INF; unchanged with ngram_size 0. keep(barred [N, 2]) -> bool [N]: the bars to lift
    (the constrained search's phrase tokens)."""
    logits = tf.cast(logits, tf.float32)
    if not ngram_size:
        return logits
    barred = repeats.repeated_ngram_tokens(alive_seqs, index, ngram_size)
    if keep is not None:
        barred = tf.boolean_mask(barred, tf.logical_not(keep(barred)))
    return tf.tensor_scatter_nd_update(logits, barred, tf.fill([tf.shape(barred)[0]], NEG_INF))


def length_penalty(length, alpha):
    """GNMT length penalty ((5 + length) / 6) ** alpha (Wu et al. 2016), as float32."""
    length = tf.cast(length, tf.float32)
    return tf.pow((5.0 + length) / 6.0, tf.cast(alpha, tf.float32))


def tile_beams(nested, beam_size):
    """Repeats every tensor [B, ...] -> [B*K, ...] so that row b*K + k belongs to example b, beam k."""
    return tf.nest.map_structure(lambda t: tf.repeat(t, beam_size, axis=0), nested)


def _gather_beams(nested, beam_indices):
    """Picks beams per example: tensors [B, K_old, ...] -> [B, K_new, ...] by indices [B, K_new]."""
    return tf.nest.map_structure(lambda t: tf.gather(t, beam_indices, batch_dims=1), nested)


def _gather_flat_beams(nested, beam_indices, beam_size, examples):
    """Picks beams of flattened tensors [B*K, ...] (the cache) by indices [B, K_new], keeping
    only the given examples (int32 [B_new], rows of beam_indices) -> [B_new*K_new, ...]."""
    beam_indices = tf.gather(beam_indices, examples)
    flat_indices = tf.reshape(examples[:, None] * beam_size + beam_indices, [-1])
    return tf.nest.map_structure(lambda t: tf.gather(t, flat_indices), nested)


def _examples_done(beams, early_stopping, stop_penalty):
    """bool [B]: the example's n-best are final. No alive beam is left (it reached its limit),
    or with early_stopping, none can still enter the n-best: none beats the worst finished
    score when its log probability (which can only fall) is divided by stop_penalty [B]."""
    best_alive = tf.reduce_max(beams.alive_log_probs, axis=1)
    none_alive = best_alive < _DEAD
    if not early_stopping:
        return none_alive
    best_possible = best_alive / stop_penalty
    worst_finished = tf.reduce_min(beams.finished.scores, axis=1)
    full = tf.reduce_all(beams.finished.flags, axis=1)
    return none_alive | (full & (worst_finished > best_possible))


def most_favourable_penalty(beams, index):
    """float32 [B]: the largest length penalty any future finished hypothesis can get, the
    bound that makes early stopping exact (index: the position just fed)."""
    del index
    return beams.max_penalty


def _block_size(vocab_size, k):
    """A divisor of vocab_size near 64 that leaves at least 4k blocks, or None (plain top_k)."""
    for size in (64, 50, 80, 40, 100, 32, 125, 128, 48, 96):
        if vocab_size % size == 0 and vocab_size // size >= 4 * k:
            return size
    return None


def _row_top_k(logits, k, vocab_size):
    """top_k over each row of logits [N, V] -> (values [N, k], token ids [N, k]), same result.

    A top_k over a whole vocabulary row is the dearest op of a step's bookkeeping. Cut each row
    into blocks; a block holding one of the row's top k holds a value at least as large
    as the k-th, so the top k blocks by their maxima hold the top k. Only those k blocks go
    through top_k. Blocks are taken in index order, so ties resolve to the lower token id, as in
    one top_k over the row.
    """
    block = _block_size(vocab_size, k)
    if block is None:
        return tf.math.top_k(logits, k=k)
    rows = tf.shape(logits)[0]
    blocks = tf.reshape(logits, [rows, vocab_size // block, block])
    _, best_blocks = tf.math.top_k(tf.reduce_max(blocks, axis=2), k=k)
    best_blocks = tf.sort(best_blocks, axis=1)
    candidates = tf.reshape(tf.gather(blocks, best_blocks, batch_dims=1), [rows, k * block])
    values, picks = tf.math.top_k(candidates, k=k)
    tokens = tf.gather(best_blocks, picks // block, batch_dims=1) * block + picks % block
    return values, tokens


def log_normaliser(logits):
    """(row max, log sum of exp(logits - max)), each [N, 1]: log_softmax(x) = (x - max) - log_sum,
    as the LogSoftmax kernel computes it."""
    row_max = tf.reduce_max(logits, axis=1, keepdims=True)
    return row_max, tf.math.log(tf.reduce_sum(tf.exp(logits - row_max), axis=1, keepdims=True))


def _top_candidates(logits, alive_log_probs, must_end, beam_size, vocab_size, eos_id,
                    normaliser=None):
    """The top 2K (alive log prob + next-token log prob) over every beam and token.

    logits [B*K, V]; alive_log_probs [B, K]; must_end bool [B]: only EOS is allowed (with its own
    log probability). Returns log probs, beam indices and tokens, each [B, 2K], best first; the
    same as top_k over the [B, K*V] table of alive_log_probs + log_softmax(logits), ties
    included (lower beam, then lower token first). normaliser: log_normaliser of other logits
    to score with (the constrained search ranks logits with barred tokens pushed down, and
    scores them with the model's own distribution).
    """
    logits = tf.cast(logits, tf.float32)
    row_k = min(2 * beam_size, vocab_size)
    row_top, row_tokens = _row_top_k(logits, row_k, vocab_size)
    # log_softmax as the LogSoftmax kernel computes it, (x - max) - log(sum(exp(x - max))),
    # for the few entries kept.
    if normaliser is None:
        row_max = row_top[:, :1]
        log_sum = tf.math.log(tf.reduce_sum(tf.exp(logits - row_max), axis=1, keepdims=True))
    else:
        row_max, log_sum = normaliser
    row_log_probs = (row_top - row_max) - log_sum
    eos_log_probs = (logits[:, eos_id:eos_id + 1] - row_max) - log_sum

    # Rows at their example's last position: EOS first, every other slot dead (token 0).
    batch_size = tf.shape(alive_log_probs)[0]
    row_must_end = tf.reshape(tf.repeat(must_end, beam_size), [-1, 1])
    first = tf.range(row_k)[None, :] == 0
    ended_log_probs = tf.where(first, eos_log_probs, NEG_INF)
    ended_tokens = tf.where(first, eos_id, 0)
    row_log_probs = tf.where(row_must_end, ended_log_probs, row_log_probs)
    row_tokens = tf.where(row_must_end, ended_tokens, row_tokens)

    candidates = alive_log_probs[:, :, None] + tf.reshape(row_log_probs,
                                                          [batch_size, beam_size, row_k])
    top_log_probs, picks = tf.math.top_k(tf.reshape(candidates, [batch_size, beam_size * row_k]),
                                         k=2 * beam_size)
    top_tokens = tf.gather(tf.reshape(row_tokens, [batch_size, beam_size * row_k]), picks,
                           batch_dims=1)
    return top_log_probs, picks // row_k, top_tokens


def _write_results(results, beams, leaving):
    """results (an _NBest at the caller's B0 rows) with the finished n-best of the `leaving`
    examples (int32 indices into beams) written at their original rows."""
    where = tf.gather(beams.rows, leaving)[:, None]
    return tf.nest.map_structure(
        lambda buffer, values: tf.tensor_scatter_nd_update(buffer, where,
                                                           tf.gather(values, leaving)),
        results, beams.finished)


def _write_position(sequences, tokens, position):
    """sequences [B, K, L+1] with column `position` set to tokens [B, K] (no scatter)."""
    is_position = tf.equal(tf.range(tf.shape(sequences)[-1]), position)
    return tf.where(is_position[None, None, :], tokens[:, :, None], sequences)


def _no_hypotheses(batch_size, beam_size, seq_width):
    return _NBest(tf.zeros([batch_size, beam_size, seq_width], tf.int32),
                  tf.fill([batch_size, beam_size], NEG_INF),
                  tf.zeros([batch_size, beam_size], tf.bool))


def _initial_state(cache, static, batch_size, beam_size, seq_width, decode_lengths, max_penalty,
                   tile_static):
    """The search before its first step: beam 0 of each example alive at the start token."""
    cache = tile_beams(cache, beam_size)
    if tile_static:
        static = tile_beams(static, beam_size)
    # Only beam 0 starts alive; the others are dead copies until the first expansion fills them.
    initial_log_probs = tf.concat([[0.0], tf.fill([beam_size - 1], NEG_INF)], axis=0)
    beams = _Beams(alive_seqs=tf.zeros([batch_size, beam_size, seq_width], tf.int32),
                   alive_log_probs=tf.tile(initial_log_probs[None, :], [batch_size, 1]),
                   finished=_no_hypotheses(batch_size, beam_size, seq_width),
                   decode_lengths=decode_lengths, max_penalty=max_penalty,
                   rows=tf.range(batch_size))
    return _SearchState(index=tf.constant(0), beams=beams, cache=cache, static=static,
                        results=_no_hypotheses(batch_size, beam_size, seq_width))


def _next_alive(top_seqs, top_log_probs, top_beams, top_is_eos, beam_size):
    """The best K candidates that do not end in EOS (there are always at least K): their
    sequences, log probs, and the beams they extend (for the cache's gather)."""
    alive_candidates = tf.where(top_is_eos, NEG_INF, top_log_probs)
    alive_log_probs, alive_picks = tf.math.top_k(alive_candidates, k=beam_size)
    return (_gather_beams(top_seqs, alive_picks), alive_log_probs,
            _gather_beams(top_beams, alive_picks))


def _merge_finished(finished, top_seqs, top_log_probs, top_is_eos, new_length, alpha,
                    beam_size):
    """The n-best with the EOS candidates that a width-K beam would have chosen merged in."""
    is_real = top_log_probs > _DEAD
    within_beam = tf.range(2 * beam_size)[None, :] < beam_size
    newly_finished = top_is_eos & is_real & within_beam
    new_scores = top_log_probs / length_penalty(new_length, alpha)
    new_scores = tf.where(newly_finished, new_scores, NEG_INF)
    # Old entries come first, so on ties (e.g. two NEG_INF) the older hypothesis is kept.
    merged = tf.nest.map_structure(lambda old, new: tf.concat([old, new], axis=1),
                                   finished, _NBest(top_seqs, new_scores, newly_finished))
    finished_scores, finished_picks = tf.math.top_k(merged.scores, k=beam_size)
    return _NBest(_gather_beams(merged.seqs, finished_picks), finished_scores,
                  _gather_beams(merged.flags, finished_picks))


def _leave(beams, static, results, done, keep, beam_size, tile_static):
    """Writes the n-best of the `done` examples out and keeps only the others' rows (`keep`) of
    the per-example state; gathered only at the steps where an example leaves."""

    def leave():
        leaving = tf.cast(tf.where(done)[:, 0], tf.int32)
        static_rows = keep if not tile_static else tf.reshape(
            keep[:, None] * beam_size + tf.range(beam_size)[None, :], [-1])
        return (tf.nest.map_structure(lambda t: tf.gather(t, keep), beams),
                tf.nest.map_structure(lambda t: tf.gather(t, static_rows), static),
                _write_results(results, beams, leaving))

    return tf.cond(tf.reduce_any(done), leave, lambda: (beams, static, results))


def _shape_invariants(state):
    """The loop's shapes: the examples axis may shrink, the cache's time axis may grow."""

    def batch_may_shrink(tensor):
        dims = tensor.shape.as_list()
        return tf.TensorShape([None] + dims[1:] if dims else dims)

    def time_may_grow(tensor):
        # The time axis is the one that starts empty.
        return tf.TensorShape([None if size == 0 else size
                               for size in batch_may_shrink(tensor).as_list()])

    return _SearchState(
        index=tf.TensorShape([]),
        beams=tf.nest.map_structure(batch_may_shrink, state.beams),
        cache=tf.nest.map_structure(time_may_grow, state.cache),
        static=tf.nest.map_structure(batch_may_shrink, state.static),
        results=tf.nest.map_structure(lambda t: t.shape, state.results))


def _outputs(final):
    """(sequences [B, K, L], scores [B, K]) from the loop's last state."""
    # Examples still searching at the last position leave now.
    results = _write_results(final.results, final.beams, tf.range(tf.shape(final.beams.rows)[0]))
    # Every real hypothesis ends with EOS, so the finished set always holds at least one; the
    # remaining slots (only possible when a limit allows fewer than K sequences) are marked -inf.
    sequences = tf.where(results.flags[:, :, None], results.seqs[:, :, 1:], 0)
    scores = tf.where(results.flags, results.scores, float("-inf"))
    return sequences, scores


def _start(cache, static, batch_size, beam_size, alpha, max_decode_length, decode_lengths,
           tile_static):
    """The arguments both searches share, checked and cast, and the initial state:
    (beam_size, alpha, max_decode_length, state)."""
    beam_size = int(beam_size)
    if beam_size < 1:
        raise ValueError(f"beam_size must be at least 1, got {beam_size}")
    if not tf.is_tensor(max_decode_length):
        max_decode_length = int(max_decode_length)
    if decode_lengths is None:
        decode_lengths = tf.fill([batch_size], max_decode_length)
    decode_lengths = tf.clip_by_value(tf.cast(decode_lengths, tf.int32), 1, max_decode_length)
    alpha = tf.cast(alpha, tf.float32)
    # Best possible penalty for any future finished hypothesis: the penalty is monotonic in length,
    # so it is largest at the longest allowed length (alpha >= 0) or at the shortest (alpha < 0).
    max_penalty = tf.maximum(length_penalty(decode_lengths, alpha), length_penalty(1, alpha))
    seq_width = max_decode_length + 1  # column 0 holds the start token
    state = _initial_state(cache, static, batch_size, beam_size, seq_width, decode_lengths,
                           max_penalty, tile_static)
    return beam_size, alpha, max_decode_length, state


def _loop(state, tokens_to_logits, choose, beam_size, max_decode_length, early_stopping,
          tile_static, stop_penalty=most_favourable_penalty):
    """The loop both searches run; returns its last state. Each step feeds every alive beam's
    token, `choose(beams, logits, index, must_end)` returns the beams with their new alive and
    finished hypotheses and the alive ones' parent beams, and the examples that are done
    leave: with early_stopping, those whose best alive log probability divided by
    `stop_penalty(beams, index)` [B] falls below their worst finished score."""

    def not_done(state):
        # Done examples have already left: go on while any is left.
        return (state.index < max_decode_length) & (tf.shape(state.beams.rows)[0] > 0)

    def step(state):
        beams = state.beams
        ids = tf.reshape(tf.gather(beams.alive_seqs, state.index, axis=2), [-1])
        logits, cache = tokens_to_logits(ids, state.index, state.cache, state.static)
        must_end = tf.greater_equal(state.index + 1, beams.decode_lengths)
        beams, cache_beams = choose(beams, logits, state.index, must_end)
        # A done example leaves: the beam reorder's one gather of the cache keeps only the
        # examples still searching.
        done = _examples_done(beams, early_stopping, stop_penalty(beams, state.index))
        keep = tf.cast(tf.where(tf.logical_not(done))[:, 0], tf.int32)
        cache = _gather_flat_beams(cache, cache_beams, beam_size, keep)
        beams, static, results = _leave(beams, state.static, state.results, done, keep,
                                        beam_size, tile_static)
        return (_SearchState(state.index + 1, beams, cache, static, results),)

    final, = tf.while_loop(not_done, step, (state,), maximum_iterations=max_decode_length,
                           shape_invariants=(_shape_invariants(state),))
    return final


def beam_search(tokens_to_logits, cache, static, batch_size, vocab_size,
                beam_size=DecodeConfig.beam_size, alpha=DecodeConfig.alpha,
                max_decode_length=ModelConfig.max_length, decode_lengths=None, eos_id=1,
                early_stopping=True, tile_static=True, no_repeat_ngram_size=0):
    """Returns the n-best continuations for every example, best first.

    Args:
      tokens_to_logits: fn(ids [N], index, cache, static) -> (logits [N, V], new cache), N the
        beams of the examples still searching.
      cache: nested structure of tensors [B, ...]; axes of size 0 may grow from step to step.
      static: nested structure of tensors [B, ...], one row per example.
      batch_size: B (int or scalar tensor). vocab_size: V (int).
      beam_size: K (static int). alpha: length penalty exponent (float or scalar tensor).
      max_decode_length: L, the output width and the largest number of generated tokens (int
        or scalar int32 tensor).
      decode_lengths: optional int32 [B], per-example limits (EOS included), clipped to [1, L].
      eos_id: the end-of-sequence id.
      early_stopping: an example leaves once no alive beam can improve its n-best; False keeps
        it until its limit (the same outputs, for testing that rule).
      tile_static: repeat `static` to B*K rows; False passes it at B rows (tokens_to_logits then
        serves rows b*K .. b*K + K - 1 from example b).
      no_repeat_ngram_size: static int n; a hypothesis never produces an n-gram of tokens it
        already holds (decoding/repeats.py; 0: no such rule).

    Returns:
      sequences: int32 [B, K, L], each ending with EOS and padded with 0, best first.
      scores: float32 [B, K], log probability / length penalty; -inf where fewer than K
        hypotheses exist (e.g. a decode length of 1 allows only one).
    """
    beam_size, alpha, max_decode_length, state = _start(
        cache, static, batch_size, beam_size, alpha, max_decode_length, decode_lengths,
        tile_static)

    def choose(beams, logits, index, must_end):
        new_length = index + 1
        logits = without_repeats(logits, beams.alive_seqs, index, no_repeat_ngram_size)
        top_log_probs, top_beams, top_tokens = _top_candidates(
            logits, beams.alive_log_probs, must_end, beam_size, vocab_size, eos_id)
        top_seqs = _write_position(_gather_beams(beams.alive_seqs, top_beams), top_tokens,
                                   new_length)
        top_is_eos = tf.equal(top_tokens, eos_id)
        alive_seqs, alive_log_probs, cache_beams = _next_alive(
            top_seqs, top_log_probs, top_beams, top_is_eos, beam_size)
        finished = _merge_finished(beams.finished, top_seqs, top_log_probs, top_is_eos,
                                   new_length, alpha, beam_size)
        return beams._replace(alive_seqs=alive_seqs, alive_log_probs=alive_log_probs,
                              finished=finished), cache_beams

    final = _loop(state, tokens_to_logits, choose, beam_size, max_decode_length, early_stopping,
                  tile_static)
    return _outputs(final)
