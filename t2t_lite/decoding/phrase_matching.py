"""Matching phrases against hypotheses, for the constrained search (constrained_search.py): the
phrase tables' word marks (WORD_END, WORD_START), the suffix matches of a hypothesis' last tokens
against every phrase alternative, the progress, credit and bank they give, and the tokens a
negative phrase bars. Pure tensor functions of the generated tokens and the phrases; the
search's state and its choice of beams stay in constrained_search.py.
"""
import tensorflow as tf

# A phrase's last "token" when it must end a word: it matches any token that starts one (EOS
# included). Never a real id, never generated.
WORD_END = -2
# A negative phrase's first "token" when it is written glued to what comes before ("Ordner" in
# "»Ordner«"): it matches a token that ends a word, or the start of the sequence.
WORD_START = -3


def phrase_lengths(tokens):
    """int32, tokens' shape without the last axis: the non-padding tokens."""
    return tf.reduce_sum(tf.cast(tf.not_equal(tokens, 0), tf.int32), axis=-1)


def boundary_table(table, vocab_size):
    """bool [V]: a word_starts / word_ends argument, all True when None (every token a word)."""
    if table is None:
        return tf.ones([vocab_size], tf.bool)
    return tf.cast(table, tf.bool)


def ends_word(tokens, word_ends):
    """bool, tokens' shape: a word boundary lies after the token (-1, before the sequence:
    True)."""
    return (tokens < 0) | tf.gather(word_ends, tf.maximum(tokens, 0))


def starts_word(tokens, word_starts):
    """bool, tokens' shape: a word boundary lies before the token (-1, before the sequence: no
    token, False)."""
    return (tokens >= 0) & tf.gather(word_starts, tf.maximum(tokens, 0))


def phrase_sizes(positive):
    """int32 [B, P]: the shortest present alternative's length, 0 for an absent phrase."""
    lengths = phrase_lengths(positive)  # [B, P, A]
    big = tf.int32.max
    shortest = tf.reduce_min(tf.where(lengths > 0, lengths, big), axis=-1)
    return tf.where(shortest == big, 0, shortest)


def duplicates(positive, sizes):
    """bool [B, P, P]: [b, p, q] when q < p and phrases p and q are the same."""
    same = tf.reduce_all(tf.equal(positive[:, :, None], positive[:, None, :]), axis=[3, 4])
    phrases = tf.shape(positive)[1]
    earlier = tf.range(phrases)[None, :] < tf.range(phrases)[:, None]
    return same & earlier[None] & (sizes[:, :, None] > 0)


def windows(seqs, position, width):
    """The last `width` tokens of sequences [B, K, L+1] up to column `position` (inclusive):
    int32 [B, K, width], -1 before column 1 (column 0 is the start token, never matched)."""
    columns = position - width + 1 + tf.range(width)
    tokens = tf.gather(seqs, tf.maximum(columns, 0), axis=2)
    return tf.where(columns[None, None, :] >= 1, tokens, -1)


def suffix_matches(windows, phrases, word_starts, word_ends=None):
    """bool [B, M, ..., T]: [..., k-1] when the last k tokens of a window match the first k
    tokens of a phrase (and the phrase has at least k tokens). A phrase's WORD_END matches any
    token that starts a word (word_starts [V]), EOS included; a WORD_START any token that ends
    one (word_ends [V]), or the start of the sequence.

    windows: int32 [B, M, T] (most recent last); phrases: int32 [B, ..., T] (0-padded), the
    same phrases for every window of an example."""
    width = tf.shape(windows)[2]
    k = tf.range(1, width + 1)[:, None]  # matched length
    j = tf.range(width)[None, :]  # position within the phrase
    used = j < k  # [T, T]
    # window position of phrase token j when the match has length k
    picked = tf.gather(windows, tf.minimum(width - k + j, width - 1), axis=2)  # [B, M, T(k), T(j)]
    extra_axes = phrases.shape.rank - 2  # phrase axes between B and T
    for _ in range(extra_axes):
        picked = picked[:, :, None]
    phrase_tokens = phrases[:, None, ..., None, :]  # [B, 1, ..., 1, T(j)]
    ends_here = tf.equal(phrase_tokens, WORD_END) & starts_word(picked, word_starts)
    equal = tf.equal(picked, phrase_tokens) | ends_here | tf.logical_not(used)
    if word_ends is not None:
        equal |= tf.equal(phrase_tokens, WORD_START) & ends_word(picked, word_ends)
    long_enough = tf.expand_dims(phrase_lengths(phrases), -1) >= tf.range(1, width + 1)
    return tf.reduce_all(equal, axis=-1) & long_enough[:, None]


def progress(windows, positive, word_starts):
    """For each window and phrase alternative: (the longest proper prefix of the alternative
    that ends the window, int32 [B, M, P, A]; the whole alternative ends the window, bool;
    the suffix matches, bool [B, M, P, A, T], as suffix_matches gives them)."""
    matches = suffix_matches(windows, positive, word_starts)  # [B, M, P, A, T]
    return progress_of(matches, positive) + (matches,)


def next_tokens(positive, prefix):
    """int32 [B, K, P, A]: the token of each alternative that follows the prefix a beam has
    matched (progress's prefix [B, K, P, A]); 0 past its end, WORD_END where only a word end is
    left."""
    per_beam = tf.broadcast_to(positive[:, None], tf.concat(
        [tf.shape(prefix), tf.shape(positive)[3:]], axis=0))
    return tf.gather(per_beam, prefix, batch_dims=4)


def progress_of(matches, positive):
    """(prefix, complete) of progress from its suffix matches."""
    lengths = phrase_lengths(positive)[:, None]  # [B, 1, P, A]
    k = tf.range(1, tf.shape(matches)[-1] + 1)
    proper = matches & (k < lengths[..., None])
    prefix = tf.reduce_max(tf.where(proper, k, 0), axis=-1)
    complete = tf.reduce_any(matches & tf.equal(k, lengths[..., None]), axis=-1) & (lengths > 0)
    return prefix, complete


def extended_matches(parent_matches, tokens, positive, word_starts):
    """The suffix matches of each candidate's window (its parent's, then its token), from the
    parent's (gathered to the candidates, bool [B, M, P, A, T]) and its token (int32 [B, M]): a
    match of length k is the parent's of length k - 1 and the token as the phrase's k-th. O(T)
    per alternative and candidate, where matching the window afresh is O(T^2)."""
    phrase = positive[:, None]  # [B, 1, P, A, T]
    token = tokens[:, :, None, None, None]
    fits = tf.equal(phrase, token) | (tf.equal(phrase, WORD_END)
                                      & starts_word(token, word_starts))
    before = tf.concat([tf.ones_like(parent_matches[..., :1]), parent_matches[..., :-1]],
                       axis=-1)
    long_enough = phrase_lengths(positive)[:, None, ..., None] >= tf.range(
        1, tf.shape(positive)[-1] + 1)
    return before & fits & long_enough


def credit(complete, met, duplicate_of_earlier):
    """met [B, M, P] after a token that completes the alternatives in `complete` [B, M, P, A]:
    an occurrence counts for the first unmet phrase among identical ones."""
    completes = tf.reduce_any(complete, axis=-1) & tf.logical_not(met)
    taken_by_earlier = tf.reduce_any(
        completes[:, :, None, :] & duplicate_of_earlier[:, None], axis=-1)
    return met | (completes & tf.logical_not(taken_by_earlier))


def bank(prefix, met, sizes):
    """int32 [B, M]: constraint tokens met, as a trie of the phrases counts them: every met
    phrase its size, plus the one deepest partial match of an unmet phrase (at most its size -
    1), so a prefix several phrases share counts once and progress never outweighs a met
    phrase's tokens."""
    partial = tf.minimum(tf.reduce_max(prefix, axis=-1), tf.maximum(sizes[:, None] - 1, 0))
    met_tokens = tf.reduce_sum(tf.where(met, sizes[:, None], 0), axis=-1)
    return met_tokens + tf.maximum(tf.reduce_max(tf.where(met, 0, partial), axis=-1), 0)


def banned(windows, negative, word_starts, word_ends, near_end):
    """What would complete a negative phrase, as (tokens: int32 [N, 2] (row, token) indices into
    the flat [B*K, V] log probs; words: bool [B*K], rows whose next token must not start a
    word, as it would end a whole-word negative phrase that the row ends with). windows
    [B, K, T] end at the current position. near_end bool [B]: the token chosen now is the last
    before EOS, so a whole-word negative's last real token is barred itself (EOS could not be
    barred after it)."""
    lengths = phrase_lengths(negative)  # [B, Q]
    matches = suffix_matches(windows, negative, word_starts, word_ends)  # [B, K, Q, T]
    k = tf.range(1, tf.shape(matches)[-1] + 1)

    def ready(matched):
        """bool [B, K, Q]: the window ends with the phrase's first `matched` [B, Q] tokens."""
        wanted = tf.equal(k, matched[:, None, :, None])
        return tf.reduce_any(matches & wanted, axis=-1) | tf.equal(matched[:, None], 0)

    last = tf.gather(negative, tf.maximum(lengths - 1, 0), batch_dims=2)  # [B, Q]
    word_end = tf.equal(last, WORD_END)[:, None]  # [B, 1, Q]
    present = lengths[:, None] > 0
    complete = ready(lengths - 1) & present  # all but the last token
    words = tf.reshape(tf.reduce_any(complete & word_end, axis=-1), [-1])
    # The token to bar: a token-level phrase's last; near the end, a word's last real token.
    before_end = tf.gather(negative, tf.maximum(lengths - 2, 0), batch_dims=2)
    barred = tf.where(word_end, before_end[:, None], last[:, None])
    barred = tf.broadcast_to(barred, tf.shape(complete))
    ready_tokens = tf.where(word_end, ready(tf.maximum(lengths - 2, 0))
                            & near_end[:, None, None], complete) & present
    ready_tokens &= barred > 0
    beam_size = tf.shape(windows)[1]
    rows = tf.range(tf.shape(windows)[0])[:, None, None] * beam_size + tf.range(beam_size)[
        None, :, None]
    where = tf.where(ready_tokens)
    tokens = tf.stack([tf.gather_nd(tf.broadcast_to(rows, tf.shape(ready_tokens)), where),
                       tf.gather_nd(barred, where)], axis=1)
    return tokens, words

