"""Lexically constrained beam search: dynamic beam allocation over a fixed beam (Post & Vilar
2018, vectorised as in Hu et al. 2019), in one tf.while_loop, over any `tokens_to_logits`.

Each example carries its own constraints, as 0-padded token ids:

    positive [B, P, A, T]  P phrases that must appear, each with up to A alternatives (any one
                           alternative satisfies the phrase), each up to T tokens;
    negative [B, Q, T]     Q phrases that must not appear.

Phrases are words, not token strings. An alternative that must end a word ends in WORD_END, a
"token" that only a token starting a word (word_starts [V]: a SentencePiece "▁" piece,
punctuation, EOS) meets: so a positive phrase is met only when the word ends with it, and a
negative one ending in WORD_END bars the word, not the compounds that begin with it (without
WORD_END it bars its tokens whatever follows them; a `*` prefix form also bars, through
prefix_bars, the pieces that would write a word beginning with it otherwise). While a hypothesis
holds every token of an unmet phrase's alternative but its WORD_END, it may not continue the
word (only a word-starting token, or the next token of another phrase it is matching); a
hypothesis that ends with a whole-word negative phrase may not start a new word, and one step
before its length limit the phrase's last token is barred itself (EOS cannot be refused). A
negative phrase may begin with WORD_START, met by a token that ends a word (word_ends [V]) or the
sequence start: the phrase written glued to punctuation ("»Ordner«"). Without word tables every
token is a word.

A phrase given twice must appear twice: an occurrence is credited to one phrase only (the first
unmet one of identical phrases). Nothing is added to any score: scores stay the model's log
probabilities with the GNMT length penalty, as in beam_search.

Each step, every alive beam offers (1) the top 2K model candidates over all beams, as in the
unconstrained search, (2) its forced candidates: of the tokens that continue its partial match of
an unmet phrase alternative or start one afresh, the FORCED_PER_BEAM (16) best by model score,
each token once and none that (1) already offers, and (3) its EOS. Every candidate carries the
match state of every alternative ([P, A, T]), so offering all 2 P A tokens of every beam would
make the step grow with the square of the constraint tokens; with the bound the candidates stay
K (3 + 16) at most and the step grows linearly. The bound loses no phrase for good: a phrase not
offered at one step stays unmet and competes again at the next (its first token in every beam at
every step), met phrases leave the competition, and the bank allocation below still decides
among whatever was offered. A beam with at most 16 distinct such tokens (up to 8 phrases of one
alternative) offers exactly all of them, so small constraint sets search as if unbounded. (On toy
models, 12 lines of 12 phrases of 3 alternatives each: with the bound every line met every
phrase; offering every token, 3 phrases went unmet.) A
candidate's bank counts constraint tokens as a trie of the phrases would: every met phrase its
shortest alternative's length, plus the one deepest partial match of an unmet phrase (a prefix
several phrases share counts once). The K alive beams are chosen round-robin over banks: the best
candidate of each bank, highest bank first, then the second best of each, and so on, so the beam
never grows with the number of constraints and an empty bank's slots go to the others (ranks
within banks come from stable sorts, O(M log M) in the M candidates). An EOS candidate becomes
finished when it ranks among the top K of its bank; with eos_until_met, not before every phrase
is met (fairseq's and Sockeye's rule; off by default, docs/design.md).

A finished hypothesis that has not met every positive phrase ranks below every one that has (by
how many it misses, then by score): the search returns a complete hypothesis whenever one is found
by the length limit, else the best one that meets the most, and reports per hypothesis how many
phrases it misses. An example with a positive phrase stops once no alive beam beats its worst
finished one at the length penalty of the next length (_next_length_penalty); one without stops
as in beam_search. Matching is on the generated tokens themselves (the last T of each hypothesis;
a candidate's matches extend its parent's by its one token), so no automaton has to be built
from the phrases, in the graph or outside it. The caller caps the phrases, alternatives and
tokens (inference/constraints.py). What still grows with them per step is linear in the
constraint tokens P A T times at most T (<= 33, a word end included) or P (<= 16): the alive
beams' suffix matches ([B, K, P, A, T, T], phrase_matching.suffix_matches), every candidate's
extended matches ([B, M, P, A, T]) and the crediting of identical phrases ([B, M, P, P]), with
M <= K (3 + 16).

The rule against loops (no_repeat_ngram_size, as in beam_search) bars a token before the row is
normalised, except an unmet phrase's next token: a required phrase that repeats itself, or one
asked for twice, is still written (the constraint wins, _without_loops).
"""
from typing import NamedTuple

import tensorflow as tf

from t2t_lite.config import DecodeConfig, ModelConfig
from t2t_lite.decoding import phrase_matching as matching
# The phrase tables' word-end mark (phrase_matching.py defines both marks).
from t2t_lite.decoding.phrase_matching import WORD_END
# The unconstrained search's state and steps, shared so both searches leave, gather and stop
# alike.
from t2t_lite.decoding.beam_search import (
    _DEAD, NEG_INF, _gather_beams, _loop, _NBest, _start, _top_candidates, _write_position,
    _write_results, length_penalty, log_normaliser, most_favourable_penalty, without_repeats)

# Ranks a finished hypothesis that misses a phrase below any that meets all, whatever the scores
# (real scores stay far above -UNMET_PENALTY; 16 misses stay far above the search's _DEAD).
UNMET_PENALTY = 1.0e4
# The most forced candidates a beam offers per step (see the module docstring).
FORCED_PER_BEAM = 16


class _Constraints(NamedTuple):
    """Per example (rows gathered with the examples that keep searching) and per beam."""
    positive: tf.Tensor  # int32 [B, P, A, T], 0-padded
    negative: tf.Tensor  # int32 [B, Q, T], 0-padded
    sizes: tf.Tensor  # int32 [B, P], a phrase's shortest alternative (0: no phrase)
    duplicate_of_earlier: tf.Tensor  # bool [B, P, P]: [p, q] phrase q < p is the same as p
    met: tf.Tensor  # bool [B, K, P], per alive beam (an absent phrase counts as met)
    prefix_texts: tf.Tensor  # string [B, F]: prefix_bars' texts ("" to pad)


class _Extra(NamedTuple):
    """What a finished hypothesis carries besides its ranking score."""
    scores: tf.Tensor  # float32 [B, K], log probability / length penalty
    unmet: tf.Tensor  # int32 [B, K], positive phrases the hypothesis misses


def _word_rules(beams, prefix, following, negative_words, must_end, word_starts, eos_id,
                eos_until_met=False, index=None):
    """bool [B*K, V]: the tokens barred by the word rules. A row that ends with every token of
    an unmet positive phrase's alternative but its WORD_END may not continue the word (only a
    token that starts a word, or the next token of another phrase it is matching); a row in
    negative_words (see phrase_matching.banned) may not start one; with eos_until_met, a row
    with an unmet phrase may not end while its phrases still fit before its length limit
    (_room, at step `index`). EOS stays open where it is the only token left (must_end).
    prefix, following: the alive beams' progress and next tokens (phrase_matching)."""
    started = (prefix > 0) & tf.logical_not(beams.constraints.met)[..., None]
    pending = tf.reduce_any(started & tf.equal(following, WORD_END), axis=[2, 3])
    pending = tf.reshape(pending, [-1])
    starts = word_starts[None, :]
    barred = (pending[:, None] & tf.logical_not(starts)) | (negative_words[:, None] & starts)
    # Another phrase's next token stays open.
    open_ = tf.where(started & (following > 0))  # [N, 4]: b, k, p, a
    beam_size = tf.shape(prefix)[1]
    rows = tf.cast(open_[:, 0], tf.int32) * beam_size + tf.cast(open_[:, 1], tf.int32)
    barred = tf.tensor_scatter_nd_update(
        barred, tf.stack([rows, tf.gather_nd(following, open_)], axis=1),
        tf.zeros_like(rows, tf.bool))
    is_eos = tf.equal(tf.range(tf.shape(word_starts)[0]), eos_id)[None, :]
    if eos_until_met:
        unmet = tf.reduce_any(tf.logical_not(beams.constraints.met), axis=2)
        unmet = tf.reshape(unmet & _room(beams, prefix, index), [-1])
        barred |= unmet[:, None] & is_eos
    return barred & tf.logical_not(tf.repeat(must_end, beam_size)[:, None] & is_eos)


def _room(beams, prefix, index):
    """bool [B, K]: the tokens a beam's unmet phrases still need fit before its length limit:
    their shortest alternatives' tokens (a word end is met by the next word's first token, or
    EOS), less the deepest partial match, at most the tokens left (this step's included, EOS
    not). Where they cannot fit, eos_until_met lets the beam end, counted as unmet."""
    constraints = beams.constraints
    real = matching.phrase_sizes(tf.maximum(constraints.positive, 0))  # [B, P], no word end
    unmet = tf.logical_not(constraints.met)
    wanted = tf.reduce_sum(tf.where(unmet, real[:, None], 0), axis=2)
    partial = tf.reduce_max(tf.where(unmet[..., None], prefix, 0), axis=[2, 3])
    left = beams.decode_lengths - index - 1  # [B]
    return wanted - tf.minimum(partial, wanted) <= left[:, None]


def _barred(logits, banned, barred_words=None):
    """(logits [B*K, V] float32 with the banned tokens (and barred_words [B*K, V]) dead, to
    rank by; the model's own log_normaliser, to score with): a barred token is never taken, and
    scores stay the model's log probabilities."""
    logits = tf.cast(logits, tf.float32)
    normaliser = log_normaliser(logits)
    logits = tf.tensor_scatter_nd_update(logits, banned, tf.fill([tf.shape(banned)[0]], NEG_INF))
    if barred_words is not None:
        logits = tf.where(barred_words, NEG_INF, logits)
    return logits, normaliser


def _without_loops(logits, beams, index, following, ngram_size):
    """beam_search.without_repeats under constraints: the rule against loops never bars the
    token that takes an unmet phrase's alternative one step on (its next token after the beam's
    partial match, else its first; following [B, K, P, A]). A required phrase that repeats
    itself, or one asked for twice, is still written: the constraint wins, and its tokens are
    free only in the phrase's order."""
    unmet = tf.logical_not(beams.constraints.met)[:, :, :, None]
    tokens = tf.where(unmet, following, 0)
    rows = tf.reshape(tokens, [tf.shape(following)[0] * tf.shape(following)[1], -1])

    def keep(barred):
        phrase_tokens = tf.gather(rows, barred[:, 0])
        return tf.reduce_any(tf.equal(phrase_tokens, barred[:, 1:]) & (phrase_tokens > 0), axis=1)

    return without_repeats(logits, beams.alive_seqs, index, ngram_size, keep)


def _inverse(permutation):
    """int32 [B, M]: the inverse of each row's permutation."""
    return tf.argsort(permutation, axis=1, stable=True)


def _rank_in_bank(scores, banks, eligible):
    """int32 [B, M]: how many eligible candidates of the same bank rank before each eligible
    one (higher score, or the same score and an earlier position), as a stable sort would
    place it. Two stable sorts, O(M log M) (a candidate-by-candidate table would be O(M^2), and
    M grows with the constraints); an ineligible candidate's rank is not used."""
    by_score = tf.argsort(scores, axis=1, direction="DESCENDING", stable=True)
    groups = banks * 2 + tf.cast(tf.logical_not(eligible), tf.int32)
    order = tf.gather(by_score, tf.argsort(tf.gather(groups, by_score, batch_dims=1), axis=1,
                                           stable=True), batch_dims=1)
    sorted_groups = tf.gather(groups, order, batch_dims=1)
    first = tf.searchsorted(sorted_groups, sorted_groups, side="left", out_type=tf.int32)
    ranks = tf.range(tf.shape(scores)[1])[None, :] - first
    return tf.gather(ranks, _inverse(order), batch_dims=1)


def _repeated(keys):
    """bool [B, M]: the key occurs at an earlier position of its row (a stable sort)."""
    order = tf.argsort(keys, axis=1, stable=True)
    sorted_keys = tf.gather(keys, order, batch_dims=1)
    again = tf.concat([tf.zeros_like(sorted_keys[:, :1], tf.bool),
                       tf.equal(sorted_keys[:, 1:], sorted_keys[:, :-1])], axis=1)
    return tf.gather(again, _inverse(order), batch_dims=1)


def _forced(logits, normaliser, must_end, beams, following, top_beams, top_tokens, beam_size,
            vocab_size):
    """Each beam's forced candidates (scores, tokens), each [B, K, C] with C = min(
    FORCED_PER_BEAM, 2 P A): of the tokens that continue or start an unmet phrase alternative,
    the distinct ones that are not among the beam's top 2K, the best C by score in the phrases'
    order (so ties rank as with every one kept); the rest dead."""
    constraints = beams.constraints
    batch_size = tf.shape(beams.alive_log_probs)[0]
    first_tokens = tf.broadcast_to(constraints.positive[:, None, :, :, 0], tf.shape(following))
    forced = tf.stack([following, first_tokens], axis=-1)  # [B, K, P, A, 2]
    usable = (forced > 0) & tf.logical_not(constraints.met)[:, :, :, None, None]
    usable &= tf.logical_not(must_end)[:, None, None, None, None]
    forced = tf.reshape(tf.maximum(forced, 0), [batch_size, beam_size, -1])  # no WORD_END
    usable = tf.reshape(usable, [batch_size, beam_size, -1])
    count = tf.shape(forced)[2]
    # Distinct per beam: an unusable entry's key is unique, so it hides no usable one.
    keys = tf.where(usable, forced, -1 - tf.range(count)[None, None, :])
    usable &= tf.logical_not(tf.reshape(_repeated(tf.reshape(keys, [-1, count])),
                                        tf.shape(keys)))
    in_top = tf.equal(forced[..., None], top_tokens[:, None, None, :]) & tf.equal(
        top_beams[:, None, None, :], tf.range(beam_size)[None, :, None, None])
    usable &= tf.logical_not(tf.reduce_any(in_top, axis=-1))
    row_max, log_sum = (tf.reshape(t, [batch_size, beam_size, 1]) for t in normaliser)
    by_beam = tf.reshape(logits, [batch_size, beam_size, vocab_size])
    log_probs = (tf.gather(by_beam, forced, batch_dims=2) - row_max) - log_sum
    scores = tf.where(usable, beams.alive_log_probs[:, :, None] + log_probs, NEG_INF)
    # An unusable entry (a met phrase's token) writes no token: it would take the (beam,
    # token) place of a usable one with the same token ("Datei" given three times) in
    # _candidates, which keeps only the first.
    forced = tf.where(usable, forced, 0)
    _, picks = tf.math.top_k(scores, k=tf.minimum(FORCED_PER_BEAM, count))
    picks = tf.sort(picks, axis=-1)
    return (tf.gather(scores, picks, batch_dims=2), tf.gather(forced, picks, batch_dims=2))


def _candidates(logits, normaliser, must_end, beams, following, beam_size, vocab_size,
                eos_id):
    """Every candidate of this step: (scores, beams, tokens, repeated), each [B, M]; invalid
    ones dead. The top 2K come first, best first, exactly as beam_search finds them, so an
    example without constraints ranks exactly as there; then each beam's forced candidates
    (_forced), then each beam's EOS. logits, normaliser: as _barred gives them."""
    batch_size = tf.shape(beams.alive_log_probs)[0]
    top_scores, top_beams, top_tokens = _top_candidates(
        logits, beams.alive_log_probs, must_end, beam_size, vocab_size, eos_id, normaliser)
    forced_scores, forced = _forced(logits, normaliser, must_end, beams, following, top_beams,
                                    top_tokens, beam_size, vocab_size)
    forced_beams = tf.broadcast_to(tf.range(beam_size)[None, :, None], tf.shape(forced))
    row_max, log_sum = normaliser
    eos_log_probs = (logits[:, eos_id:eos_id + 1] - row_max) - log_sum
    eos_scores = beams.alive_log_probs + tf.reshape(eos_log_probs, [batch_size, beam_size])
    eos_beams = tf.broadcast_to(tf.range(beam_size)[None, :], tf.shape(eos_scores))
    scores = tf.concat([top_scores, tf.reshape(forced_scores, [batch_size, -1]), eos_scores], 1)
    cand_beams = tf.concat([top_beams, tf.reshape(forced_beams, [batch_size, -1]), eos_beams], 1)
    tokens = tf.concat([top_tokens, tf.reshape(forced, [batch_size, -1]),
                        tf.fill(tf.shape(eos_scores), eos_id)], 1)
    # The same (beam, token) twice (a phrase's token that is EOS): only its first occurrence
    # stays.
    repeated = _repeated(cand_beams * vocab_size + tokens)
    return tf.where(repeated, NEG_INF, scores), cand_beams, tokens, repeated


def _step_state(beams, cand_beams, tokens, matches, word_starts):
    """Each candidate's met phrases and bank after its token: (met [B, M, P], banks [B, M]).
    matches: the alive beams' suffix matches (phrase_matching.progress). EOS may complete a
    phrase too: it ends the phrase's last word."""
    constraints = beams.constraints
    parent_matches = tf.gather(matches, cand_beams, batch_dims=1)
    prefix, complete = matching.progress_of(
        matching.extended_matches(parent_matches, tokens, constraints.positive, word_starts),
        constraints.positive)
    parent_met = tf.gather(constraints.met, cand_beams, batch_dims=1)
    met = matching.credit(complete, parent_met, constraints.duplicate_of_earlier)
    return met, matching.bank(prefix, met, constraints.sizes)


def _choose(scores, banks, eligible, beam_size):
    """int32 [B, K]: the eligible candidates taken round-robin over banks (see the module
    docstring); ineligible ones only when fewer than K are eligible."""
    rank = _rank_in_bank(scores, banks, eligible)
    top_bank = tf.reduce_max(banks) + 1
    order = rank * (top_bank + 1) + (top_bank - banks)
    order = tf.where(eligible, order, tf.int32.max)
    _, picks = tf.math.top_k(-order, k=beam_size)
    return picks


def _merge_finished(finished, seqs, log_probs, met, finishing, new_length, alpha, beam_size):
    """The n-best with the finishing EOS candidates merged in, ranked by unmet phrases, then
    score."""
    unmet = tf.reduce_sum(tf.cast(tf.logical_not(met), tf.int32), axis=-1)
    scores = log_probs / length_penalty(new_length, alpha)
    ranking = tf.where(finishing, scores - UNMET_PENALTY * tf.cast(unmet, tf.float32), NEG_INF)
    new = _NBest(seqs, ranking, finishing, _Extra(scores, unmet))
    merged = tf.nest.map_structure(lambda old, add: tf.concat([old, add], axis=1), finished, new)
    _, picks = tf.math.top_k(merged.scores, k=beam_size)
    return tf.nest.map_structure(lambda t: tf.gather(t, picks, batch_dims=1), merged)


def _next_length_penalty(alpha):
    """The constrained search's stop_penalty (beam_search._loop): an example with a positive
    phrase divides by the length penalty of the next length a hypothesis can finish at, an
    example without one by the most favourable penalty, so that it stops exactly as in
    beam_search. Exact for alpha <= 0 (the penalty cannot grow); for alpha > 0 it is Hugging
    Face's default bound: a hypothesis that met its phrases late scores low, and the exact bound
    would keep the example searching to its length limit for alive beams that can only win if
    their next tokens all cost nothing (docs/design.md has the numbers both ways)."""

    def stop_penalty(beams, index):
        has_phrase = tf.reduce_any(beams.constraints.sizes > 0, axis=1)
        return tf.where(has_phrase, length_penalty(index + 2, alpha),
                        most_favourable_penalty(beams, index))

    return stop_penalty


def _at_least_one_token(phrases):
    """phrases int32 [..., T] padded to T >= 1, so windows and matches always have a width."""
    phrases = tf.cast(phrases, tf.int32)
    missing = tf.maximum(1 - tf.shape(phrases)[-1], 0)
    padding = tf.concat([tf.zeros([phrases.shape.rank - 1, 2], tf.int32), [[0, missing]]], 0)
    return tf.pad(phrases, padding)


def _with_constraints(state, positive, negative, prefix_bars, batch_size, beam_size):
    """The search's initial state with the constraints and empty extras added."""
    positive, negative = _at_least_one_token(positive), _at_least_one_token(negative)
    sizes = matching.phrase_sizes(positive)
    met = tf.broadcast_to(tf.equal(sizes, 0)[:, None, :],
                          [batch_size, beam_size, tf.shape(positive)[1]])
    prefix_texts = (tf.fill([batch_size, 0], "") if prefix_bars is None
                    else tf.convert_to_tensor(prefix_bars[0], tf.string))
    constraints = _Constraints(positive, negative, sizes, matching.duplicates(positive, sizes),
                               met, prefix_texts)

    def no_extra(nbest):
        shape = tf.shape(nbest.scores)
        return nbest._replace(extra=_Extra(tf.fill(shape, NEG_INF), tf.zeros(shape, tf.int32)))

    return state._replace(beams=state.beams._replace(
        constraints=constraints, finished=no_extra(state.beams.finished)),
        results=no_extra(state.results))


def _next_beams(beams, logits, normaliser, must_end, index, matches, following, beam_size,
                vocab_size, alpha, eos_id, word_starts):
    """One step's choice: (beams with the new alive and finished hypotheses, the alive ones'
    parent beams for the cache's gather). matches, following: the alive beams' suffix matches
    (phrase_matching.progress) and next tokens (phrase_matching.next_tokens)."""
    new_length = index + 1
    scores, cand_beams, tokens, repeated = _candidates(logits, normaliser, must_end, beams,
                                                       following, beam_size, vocab_size, eos_id)
    met, banks = _step_state(beams, cand_beams, tokens, matches, word_starts)
    seqs = _write_position(_gather_beams(beams.alive_seqs, cand_beams), tokens, new_length)
    is_eos = tf.equal(tokens, eos_id)
    real = scores > _DEAD
    # An EOS finishes when its bank would keep it in a width-K beam.
    finishing = is_eos & real & (
        _rank_in_bank(scores, banks, tf.logical_not(repeated)) < beam_size)
    finished = _merge_finished(beams.finished, seqs, scores, met, finishing, new_length, alpha,
                               beam_size)
    # The top 2K stay eligible even when dead, as in beam_search; other candidates only when
    # they are real.
    top = tf.range(tf.shape(scores)[1])[None, :] < 2 * beam_size
    picks = _choose(scores, banks, tf.logical_not(is_eos) & (top | real), beam_size)
    beams = beams._replace(
        alive_seqs=tf.gather(seqs, picks, batch_dims=1),
        alive_log_probs=tf.gather(scores, picks, batch_dims=1), finished=finished,
        constraints=beams.constraints._replace(met=tf.gather(met, picks, batch_dims=1)))
    return beams, tf.gather(cand_beams, picks, batch_dims=1)


def constrained_beam_search(tokens_to_logits, cache, static, batch_size, vocab_size, positive,
                            negative, beam_size=DecodeConfig.beam_size, alpha=DecodeConfig.alpha,
                            max_decode_length=ModelConfig.max_length, decode_lengths=None, eos_id=1,
                            early_stopping=True, tile_static=True, word_starts=None, word_ends=None,
                            eos_until_met=False, prefix_bars=None, no_repeat_ngram_size=0):
    """beam_search's n-best under per-example constraints (see the module docstring).

    positive: int32 [B, P, A, T] phrases that must appear (0-padded); negative: int32 [B, Q, T]
    phrases that must not; either may end in WORD_END. word_starts: bool [V], the tokens that
    start a word (inference/word_pieces.py; None: every token); word_ends: those that end one
    (for a negative phrase's WORD_START). eos_until_met: a hypothesis may not end before it meets
    every phrase (fairseq's and Sockeye's rule) but at its length limit; off by default
    (docs/design.md). prefix_bars: None, or (texts [B, F], barred): per-example values the search
    carries with its examples, and barred(seqs, index, texts, word_starts, word_ends) -> int32
    [N, 2] (row, token) indices into the flat [B*K, V] log probs of the tokens barred now, given
    the alive hypotheses seqs [B, K, L+1] up to column index: the pieces that would write a word a
    `*` prefix form bars (inference/graph_prefixes.py). The other arguments are beam_search's.

    Returns sequences int32 [B, K, L], scores float32 [B, K] (log probability / length penalty,
    -inf for empty slots) and unmet int32 [B, K] (positive phrases each hypothesis misses).
    """
    beam_size, alpha, max_decode_length, state = _start(
        cache, static, batch_size, beam_size, alpha, max_decode_length, decode_lengths,
        tile_static)
    state = _with_constraints(state, positive, negative, prefix_bars, batch_size, beam_size)
    word_starts = matching.boundary_table(word_starts, vocab_size)
    word_ends = matching.boundary_table(word_ends, vocab_size)

    def choose(beams, logits, index, must_end):
        constraints = beams.constraints
        negative = constraints.negative
        banned, negative_words = matching.banned(
            matching.windows(beams.alive_seqs, index, tf.shape(negative)[2]), negative,
            word_starts, word_ends, index + 2 >= beams.decode_lengths)
        if prefix_bars is not None:
            texts = constraints.prefix_texts
            # A batch without prefix forms (texts [B, 0]) skips the bars' string work.
            banned = tf.concat([banned, tf.cond(
                tf.size(texts) > 0,
                lambda: prefix_bars[1](beams.alive_seqs, index, texts, word_starts, word_ends),
                lambda: tf.zeros([0, 2], tf.int32))], axis=0)
        positive = constraints.positive
        prefix, _, matches = matching.progress(
            matching.windows(beams.alive_seqs, index, tf.shape(positive)[3]), positive,
            word_starts)
        following = matching.next_tokens(positive, prefix)  # [B, K, P, A]
        barred = _word_rules(beams, prefix, following, negative_words, must_end, word_starts,
                             eos_id, eos_until_met, index)
        logits = _without_loops(logits, beams, index, following, no_repeat_ngram_size)
        logits, normaliser = _barred(logits, banned, barred)
        return _next_beams(beams, logits, normaliser, must_end, index, matches, following,
                           beam_size, vocab_size, alpha, eos_id, word_starts)

    final = _loop(state, tokens_to_logits, choose, beam_size, max_decode_length, early_stopping,
                  tile_static, stop_penalty=_next_length_penalty(alpha))
    results = _write_results(final.results, final.beams, tf.range(tf.shape(final.beams.rows)[0]))
    sequences = tf.where(results.flags[:, :, None], results.seqs[:, :, 1:], 0)
    scores = tf.where(results.flags, results.extra.scores, float("-inf"))
    unmet = tf.where(results.flags, results.extra.unmet, 0)
    return sequences, scores, unmet
