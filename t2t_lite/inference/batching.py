"""Batches of source lines planned to fit: about --batch_tokens padded source tokens each, and the
memory a step of the beam search (or the scorer's forced decoding) really holds.

    Budget                 what plan_batches holds a batch to: fits(rows, width) (the budget
                           called) and check_line(width), which may refuse one line outright
    search_budget(...)     a SearchBudget: fits for the search's batches, and check_line, which
                           refuses one line too big for a step alone
    logits_budget(...)     a LogitsBudget: fits for the scorer, its logits [rows, width,
                           vocabulary]; it refuses no line
    plan_batches(...)      index lists, longest sources first, each within a Budget

A batch is held to the bytes a step of its search holds (SearchBudget.search_bytes): beams ×
vocabulary logits, the decode cache (beams × decode length × layers × 2 × d_model), attention
scores and, for lines with constraints, the constrained search's state (constraint_bytes), within
2 GiB per search step at the default batch_tokens, so a large beam, vocabulary, decode or
constraint set makes batches of fewer lines rather than more memory; one line too big for a step
alone ends in one error naming the setting to change. batch_decode.py and scoring.py plan with
these.
"""
from typing import NamedTuple

import numpy as np

from t2t_lite.decoding.constrained_search import FORCED_PER_BEAM
from t2t_lite.errors import UserError
from t2t_lite.inference.graph_prefixes import PREFIX_END

# What a batch may hold besides its source tokens, per token of batch_tokens.
#
# Bytes (SEARCH_BYTES_PER_TOKEN: 2 GiB a search step at the default --batch_tokens=4096): what a
# step of the search really holds, all float32 (search_bytes):
#   logits     2 × rows × beam × vocab × 4: a [vocabulary] row per beam, and as much again for
#              the log-softmax's work on it (exp(logits - max) is as large);
#   cache      (rows × beam × decode length + rows × source width) × layers × 2 × d_model
#              × 4: every layer's self-attention keys and values at each beam's positions, and
#              the encoder's keys and values each line's beams attend to;
#   attention  rows × beam × heads × (decode length + source width) × 4, one layer's self- and
#              encoder-decoder attention scores, + rows × heads × source width² × 4, one
#              encoder layer's.
# Beam steps (BEAM_STEPS_PER_TOKEN, as before): rows × beam × decode length, the positions of the
# hypotheses and their bookkeeping, whatever the model's width.
# Logits alone (LOGITS_PER_TOKEN): the scorer's [rows, width, vocabulary] (logits_budget); the
# search's logits, at 8 bytes each above, stay within the same share.
#
# Beam 4 at the default 4096 on the demo's model (vocabulary 8,000, 3 layers of d_model 256, 4
# heads, max_length 128, extra_length 50) holds at most ~1.6 GiB at the row cap of 1024, so its
# batches are those of the source budget alone; with a vocabulary up to 65,536 and no model
# widths known, so are beam 4's at extra_length up to 60.
#
# Constraints (constraint_bytes): a batch with any constrained line runs the constrained search
# for all its lines, over the phrases padded to the batch's largest extents (ConstraintShape: P
# phrases, A alternatives, T tokens; Q negative phrases of U tokens). Its step makes, per line,
# beyond the plain search's (K beams, M = K (3 + C) candidates, C = min(FORCED_PER_BEAM, 2 P A)
# forced ones a beam):
#   matches     M × P × A × (16 T + 16): every candidate's suffix matches of every alternative
#               (bool, ~14 temporaries of [M, P, A, T], one int32) and its progress;
#   suffixes    K × P × A × T × (4 T + 48) + 6 K × Q × U² + 32 K × (T² + U²): the alive beams'
#               matches of every window length (bool [K, P, A, T, T], [K, Q, U, U]) and the
#               phrases tiled per beam;
#   candidates  M × (12 × (decode length + 1) + 32 P + P² + 320): each candidate's sequence,
#               met phrases, the crediting of identical phrases and its scalars;
#   forced      K × P × A × (160 + 8 K) + 48 K × C: the forced tokens, their dedup and top C;
#   masks       22 K × V + 1024 K + 8192: the word rules' [K, V] masks and barred logits;
#   prefixes    per `*` prefix form, K × V × PREFIX_PAIR_BYTES (the pieces it may bar at once)
#               and a few strings (prefix_bytes).
# Each term is the sum of every tensor of its kind a step makes (measured with TensorFlow's debug
# dump: tests/inference/test_constraint_memory.py), an upper bound on what it holds at once. On
# the demo's model (beam 4, vocabulary 8,000) a line with 1-3 short phrases makes ~0.75 MiB, most
# of it the masks (its logits: 0.25 MiB), and each prefix form ~2.5 MiB; the largest shape the
# caps allow (16 phrases padded to 16 alternatives of 33 tokens, 128 negative phrases of 34)
# ~21 MiB, at beam 64 ~340 MiB. No line is refused for its constraints: one whose state alone is
# over the budget is a batch alone.
#
# One line alone may hold the bytes of max(batch_tokens, 4096) tokens (a small --batch_tokens
# makes small batches, it does not refuse lines the default decodes); a line over that is refused
# before its chunk is searched (SearchBudget.check_line), naming the setting to change. A line
# over the beam steps alone is a batch alone: limits.MAX_BEAM_STEPS bounds it.
LOGITS_PER_TOKEN = 1 << 16
BEAM_STEPS_PER_TOKEN = 64
SEARCH_BYTES_PER_TOKEN = 1 << 19
LINE_BUDGET_TOKENS = 4096  # the default --batch_tokens
FLOAT_BYTES = 4
# A tf.string element's own bytes (a text up to 22 bytes long is held inside it).
TSTRING_BYTES = 32
# What the search's ops make for each (row, token) pair a prefix form bars, summed over the ops
# (fitted to TensorFlow's debug dump: tests/inference/test_constraint_memory.py).
PREFIX_PAIR_BYTES = 80
# SentencePiece's longest piece by default (max_sentencepiece_length), in characters.
MAX_PIECE_CHARACTERS = 16


def _size(size):
    """Bytes as GiB (MiB below one GiB), one decimal."""
    if size < 2 ** 30:
        return f"{size / 2 ** 20:,.1f} MiB"
    return f"{size / 2 ** 30:,.1f} GiB"


class ConstraintShape(NamedTuple):
    """A line's constraint arrays' extents (encode_constraints' positive [P, A, T], negative
    [Q, U]) and its `*` prefix forms (negative rows ending in graph_prefixes.PREFIX_END); a
    batch's are the largest of its lines' (merged). All 0: no constraints."""
    phrases: int = 0
    alternatives: int = 0
    tokens: int = 0
    negatives: int = 0
    negative_tokens: int = 0
    prefixes: int = 0

    def merged(self, other):
        return ConstraintShape(*(max(a, b) for a, b in zip(self, other)))


def _extent(array, axis):
    """int [N]: per row, 1 + the last index along `axis` with a nonzero entry (0: none)."""
    other = tuple(a for a in range(1, array.ndim) if a != axis)
    used = array.any(axis=other) if other else array != 0
    if used.shape[1] == 0:  # an empty axis (no negative phrases in any line)
        return np.zeros(len(array), int)
    last = used.shape[1] - np.argmax(used[:, ::-1], axis=1)
    return np.where(used.any(axis=1), last, 0)


def constraint_shapes(positive, negative):
    """[ConstraintShape per row] of encode_constraints' arrays (positive [N, P, A, T], negative
    [N, Q, U]), each row's own extents, as batch_decode trims a batch's to its rows' largest."""
    extents = [_extent(positive, axis) for axis in (1, 2, 3)]
    extents += [_extent(negative, axis) for axis in (1, 2)]
    extents.append(np.sum(negative == PREFIX_END, axis=tuple(range(1, negative.ndim))))
    return [ConstraintShape(*(int(e[row]) for e in extents)) for row in range(len(positive))]


class Budget:
    """What plan_batches holds each batch to besides batch_tokens: fits(rows, width,
    constraints), the budget called (constraints: the batch's ConstraintShape, or None), and
    check_line(width), which plan_batches calls on the widest line before any batch is planned.
    Here check_line refuses nothing: a row too big for the budget is a batch alone."""

    def __call__(self, rows, width, constraints=None):
        raise NotImplementedError

    def check_line(self, width):
        """Nothing: any one line may be a batch alone."""


class SearchBudget(Budget):
    """fits(rows, width) for beam search batches (see search_bytes, and the shares above);
    check_line(width) refuses one line too big for a step alone. num_layers, d_model, num_heads:
    the model's (DecodeSettings.model_dims()); None when unknown, when the cache and attention
    are not counted in bytes (the beam steps still hold them)."""

    def __init__(self, batch_tokens, beam_size, vocab_size, extra_length, max_length,
                 num_layers=None, d_model=None, num_heads=None):
        self.batch_tokens, self.beam_size, self.vocab_size = batch_tokens, beam_size, vocab_size
        self.extra_length, self.max_length = extra_length, max_length
        self.num_layers, self.d_model, self.num_heads = num_layers, d_model, num_heads
        self.limit = batch_tokens * SEARCH_BYTES_PER_TOKEN
        self.line_limit = max(batch_tokens, LINE_BUDGET_TOKENS) * SEARCH_BYTES_PER_TOKEN

    def steps(self, width):
        """The decode length of a batch `width` source tokens wide (EOS included)."""
        return max(1, min(width + self.extra_length, self.max_length))

    def search_bytes(self, rows, width, constraints=None):
        """{"logits", "cache", "attention", "constraints"}: bytes a search step of `rows` lines
        `width` wide holds at its last (longest) step; constraints: their ConstraintShape
        (None: the plain search)."""
        beams, steps = rows * self.beam_size, self.steps(width)
        logits = 2 * beams * self.vocab_size * FLOAT_BYTES
        cache = attention = 0
        if self.num_layers and self.d_model:
            cache = ((beams * steps + rows * width) * self.num_layers * 2 * self.d_model
                     * FLOAT_BYTES)
        if self.num_heads:
            attention = (beams * (steps + width) + rows * width * width) * self.num_heads \
                * FLOAT_BYTES
        return {"logits": logits, "cache": cache, "attention": attention,
                "constraints": rows * self.constraint_bytes(width, constraints)}

    def constraint_bytes(self, width, constraints):
        """Bytes one line's constrained search step makes beyond the plain search's (the terms
        above) under a batch's ConstraintShape; 0 for None or no constraints."""
        if constraints is None or not any(constraints):
            return 0
        # The search pads every axis to at least 1 (batch_decode._trimmed).
        p, a, t, q, u = (max(extent, 1) for extent in constraints[:5])
        k, alternatives = self.beam_size, p * a
        forced = min(FORCED_PER_BEAM, 2 * alternatives)
        candidates = k * (3 + forced)
        return (candidates * alternatives * (16 * t + 16)
                + k * alternatives * t * (4 * t + 48) + 6 * k * q * u * u + 32 * k * (t * t + u * u)
                + candidates * (12 * (self.steps(width) + 1) + 32 * p + p * p + 320)
                + k * alternatives * (160 + 8 * k) + 48 * k * forced
                + 22 * k * self.vocab_size + 1024 * k + 8192
                + self.prefix_bytes(constraints.prefixes, u))

    def prefix_bytes(self, prefixes, tokens):
        """Bytes the `*` prefix forms of one line add to a step (graph_prefixes.barred): per beam
        and form, the ops' bytes for each barred (row, token) pair (a form bars at most the
        vocabulary at once: the pieces that begin it begin with the word mark, those that
        complete a beginning do not) and a few strings; per beam, the window of surfaces it
        reads (a form of `tokens` tokens writes at most MAX_PIECE_CHARACTERS a token), and per
        character of it the text's endings a glued form may begin with (four strings each, and
        per form three more)."""
        if not prefixes:
            return 0
        window = MAX_PIECE_CHARACTERS * tokens + 1
        return self.beam_size * (prefixes * (PREFIX_PAIR_BYTES * self.vocab_size
                                             + 8 * TSTRING_BYTES + 4 * window * TSTRING_BYTES)
                                 + 6 * window * TSTRING_BYTES)

    def __call__(self, rows, width, constraints=None):
        return (sum(self.search_bytes(rows, width, constraints).values()) <= self.limit
                and rows * self.beam_size * self.steps(width)
                <= self.batch_tokens * BEAM_STEPS_PER_TOKEN)

    def check_line(self, width):
        """UserError, naming the setting to change, unless one line `width` source tokens wide
        (EOS included) fits a search step alone."""
        parts = self.search_bytes(1, width)
        total = sum(parts.values())
        if total <= self.line_limit:
            return
        beam = f"--beam_size={self.beam_size}"
        largest = max(parts, key=parts.get)
        if largest == "logits":
            what = (f"{beam} with a {self.vocab_size:,}-token vocabulary needs "
                    f"{_size(parts['logits'] // 2)} of logits")
            fix = "lower --beam_size"
        elif largest == "cache":
            what = (f"{beam} on a {width - 1:,}-token line decoding up to {self.steps(width):,} "
                    f"tokens with {self.num_layers} layers of d_model {self.d_model} needs "
                    f"{_size(parts['cache'])} of decode cache")
            fix = "lower --beam_size or --extra_length"
        else:
            what = (f"a {width - 1:,}-token line with {self.num_heads} heads and {beam} needs "
                    f"{_size(parts['attention'])} of attention scores")
            fix = "lower --beam_size or shorten the line"
        raise UserError(f"{what} per search step for one line ({_size(total)} in all with the "
                        f"logits' log-softmax, the decode cache and attention), more than the "
                        f"{_size(self.line_limit)} --batch_tokens={self.batch_tokens} allows one "
                        f"line; {fix}, or raise --batch_tokens")


def search_budget(batch_tokens, beam_size, vocab_size, extra_length, max_length,
                  num_layers=None, d_model=None, num_heads=None):
    """A SearchBudget: fits(rows, width) for beam search batches, with check_line(width)."""
    return SearchBudget(batch_tokens, beam_size, vocab_size, extra_length, max_length,
                        num_layers, d_model, num_heads)


class LogitsBudget(Budget):
    """fits(rows, width) for forced decoding (scoring): its logits [rows, width, vocab_size]
    within their share of batch_tokens; no line is refused (one too big is a batch alone)."""

    def __init__(self, batch_tokens, vocab_size):
        self.batch_tokens, self.vocab_size = batch_tokens, vocab_size

    def __call__(self, rows, width, constraints=None):
        return rows * width * self.vocab_size <= self.batch_tokens * LOGITS_PER_TOKEN


def logits_budget(batch_tokens, vocab_size):
    """A LogitsBudget: fits(rows, width) for forced decoding (scoring)."""
    return LogitsBudget(batch_tokens, vocab_size)


def plan_batches(lengths, batch_tokens, max_batch_size=1024, fits=None, constraints=None):
    """Index lists, longest sources first, each with about batch_tokens padded source tokens and,
    with `fits` (a Budget: search_budget, logits_budget; or None), within its budgets. A row too
    big for them alone is a batch alone, as a source longer than batch_tokens is; but a line the
    budget refuses (check_line: the widest, first) is a UserError before any batch is planned.
    constraints: a ConstraintShape per line (constraint_shapes), or None: a batch is held to the
    state of its lines' largest extents."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    if order and fits is not None:
        fits.check_line(lengths[order[0]] + 1)
    batches, current, width, shape = [], [], 0, ConstraintShape()
    for index in order:
        row_width = lengths[index] + 1  # EOS
        row_shape = constraints[index] if constraints is not None else ConstraintShape()
        new_width, new_shape = max(width, row_width), shape.merged(row_shape)
        if current and (new_width * (len(current) + 1) > batch_tokens
                        or len(current) >= max_batch_size
                        or (fits is not None and not fits(len(current) + 1, new_width,
                                                          new_shape))):
            batches.append(current)
            current, new_width, new_shape = [], row_width, row_shape
        current.append(index)
        width, shape = new_width, new_shape
    if current:
        batches.append(current)
    return batches
