"""Constraint lines read, checked and encoded in the graph, the same way constraints.py reads
them in Python, so the decoder, the Python API and a served translate_constrained refuse and
count alike.

    encode(tokenizer, lines, word_ends) -> positive int32 [B, P, A, T], negative int32 [B, Q, T]
        (target ids, 0-padded, each alternative ending in phrase_matching.WORD_END unless its
        last token ends a word itself, a `*` prefix form in graph_prefixes.PREFIX_END; a
        positive alternative a negative one of its line bars has no ids), errors
        string [B] ("" for a good line, else the one-line reason constraints.py gives);
    unmet(outputs, lines) -> int32 [B]: the phrases an output does not keep as whole words
        (a positive phrase past the occurrences of its alternatives, a negative one it holds),
        as constraints.unmet_phrases counts them.

Phrases and outputs are compared, and phrases tokenized, in their normal form (normal_form, as
constraints.normal_form writes it); reasons quote a phrase as it was typed.
"""
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite.decoding.phrase_matching import WORD_END, WORD_START
from t2t_lite.ids import UNK_ID
from t2t_lite.inference import constraints as constraints_lib
from t2t_lite.inference.graph_prefixes import PREFIX_END

# A character that is part of a word, as word_pieces.is_word_character judges it.
WORD = r"[\pL\pM\pN]"
# A run of what constraints.normal_form writes as one space: Python's white space (RE2's \s is
# ASCII only) and constraints.SPACES.
SPACE_RUN = r"[\t\n\x{0B}\f\r\x{1C}-\x{1F}\x{85}\p{Z}" + constraints_lib.SPACES + "]+"


def normal_form(texts):
    """string tensor -> each text in its normal form (constraints.normal_form)."""
    texts = tf.strings.regex_replace(tf_text.normalize_utf8(texts, "NFKC"), SPACE_RUN, " ")
    return tf.strings.strip(texts)


def _strip(strings):
    return tf.ragged.map_flat_values(tf.strings.strip, strings)


def parse(lines):
    """lines string [B] -> (positive alternatives string [B, (p), (a)], negative alternatives
    string [B, (q)], their prefix forms bool [B, (q)], phrases per line int32 [B],
    alternatives per positive phrase int32 [B, (p)], empty: bool [B], a line with an empty
    phrase or alternative)."""
    blank = tf.equal(tf.strings.strip(lines), "")
    phrases = tf.strings.split(lines, constraints_lib.SEPARATOR)
    keep = tf.repeat(tf.logical_not(blank), phrases.row_lengths())
    phrases = _strip(tf.ragged.boolean_mask(phrases, phrases.with_flat_values(keep)))
    negative = tf.ragged.map_flat_values(tf.strings.regex_full_match, phrases,
                                         "(?s)" + constraints_lib.NEGATIVE + ".*")
    bodies = tf.ragged.map_flat_values(tf.strings.regex_replace, phrases,
                                       "^" + constraints_lib.NEGATIVE, "")
    alternatives = _strip(tf.strings.split(_strip(bodies), constraints_lib.ALTERNATIVES))
    positive_alternatives = tf.ragged.boolean_mask(alternatives, tf.logical_not(negative))
    negative_alternatives = tf.ragged.boolean_mask(alternatives, negative).merge_dims(1, 2)
    prefix = tf.ragged.map_flat_values(tf.strings.regex_full_match, negative_alternatives,
                                       "(?s).*\\" + constraints_lib.PREFIX)
    negative_alternatives = _strip(tf.ragged.map_flat_values(
        tf.strings.regex_replace, negative_alternatives, "\\" + constraints_lib.PREFIX + "$", ""))
    empty = (tf.reduce_any(tf.equal(alternatives, ""), axis=[1, 2])
             | tf.reduce_any(tf.equal(negative_alternatives, ""), axis=1))
    return (positive_alternatives, negative_alternatives, prefix,
            tf.cast(phrases.row_lengths(), tf.int32),
            tf.cast(positive_alternatives.row_lengths(axis=2), tf.int32), empty)


def _with_word_end(ids, word_ends, open_ended):
    """ragged ids [N, (t)] with WORD_END after each non-empty row whose last token does not end
    a word, PREFIX_END after each non-empty open_ended one (a `*` prefix form)."""
    lengths = ids.row_lengths()
    # (A 0 after the values, so that no row with tokens is no index out of range.)
    values = tf.concat([ids.flat_values, tf.zeros([1], ids.dtype)], axis=0)
    last = tf.gather(values, tf.maximum(ids.row_limits() - 1, 0))
    needs = (lengths > 0) & (open_ended | tf.logical_not(
        tf.gather(word_ends, tf.maximum(last, 0))))
    marks = tf.where(tf.boolean_mask(open_ended, needs), tf.constant(PREFIX_END, ids.dtype),
                     tf.constant(WORD_END, ids.dtype))
    ends = tf.RaggedTensor.from_row_lengths(marks, tf.cast(needs, tf.int64))
    return tf.concat([ids, ends], axis=1)


def _alternative_errors(texts, ids, tokenizer):
    """string [N]: each alternative's reason to refuse it ("" for none). A phrase whose tokens
    write another text than its normal form (a control character, "▁") could never be met."""
    real = tf.cast(ids.row_lengths(), tf.int32)
    quoted = tf.strings.join(["the phrase '", texts, "'"])
    unknown = tf.reduce_any(tf.equal(ids, UNK_ID), axis=1)
    cap = constraints_lib.MAX_PHRASE_TOKENS
    written = normal_form(tokenizer.decode(ids.to_tensor()))
    reasons = tf.where(tf.not_equal(written, normal_form(texts)), tf.strings.join(
        [quoted, " cannot be written by the model's vocabulary (its tokens write '", written,
         "')"]), "")
    reasons = tf.where(
        real > cap, tf.strings.join([quoted, " has ", tf.strings.as_string(real),
                                     f" tokens; at most {cap} per phrase"]), reasons)
    reasons = tf.where(unknown, tf.strings.join(
        [quoted, " has a token outside the model's vocabulary"]), reasons)
    reasons = tf.where(tf.equal(real, 0) & tf.not_equal(texts, ""), tf.strings.join(
        [quoted, " has no tokens in the model's vocabulary"]), reasons)
    return reasons


def _first(reasons):
    """ragged string [B, (n)] -> string [B]: each row's first non-empty reason, or ""."""
    reasons = tf.ragged.boolean_mask(reasons, tf.not_equal(reasons, ""))
    return reasons[:, :1].to_tensor(default_value="", shape=[None, 1])[:, 0]


def encode(tokenizer, lines, word_ends, glued=None):
    """See the module docstring. word_ends: bool [V] (word_pieces.boundaries). glued: a
    tokenizer(strings [N]) -> ragged ids that writes a text glued to what precedes it
    (word_pieces.glued_model); each negative alternative is then barred in that form too, after
    a WORD_START."""
    parsed = parse(lines)
    positive_texts, negative_texts, prefix, _, _, _ = parsed
    word_ends = tf.cast(word_ends, tf.bool)

    def ids(texts, open_ended):
        raw = tokenizer.encode(normal_form(texts.flat_values))
        return raw, _with_word_end(raw, word_ends, open_ended)

    positive_raw, positive_ids = ids(positive_texts, tf.zeros_like(
        positive_texts.flat_values, tf.bool))
    negative_raw, negative_ids = ids(negative_texts, prefix.flat_values)
    # An alternative its line bars is left out (no tokens): another one meets the phrase.
    bars, barred = _bars(positive_texts, negative_texts, prefix)
    positive_ids = tf.ragged.boolean_mask(positive_ids, positive_ids.with_flat_values(
        tf.repeat(tf.logical_not(barred), positive_ids.row_lengths())))
    positive = positive_texts.with_flat_values(positive_ids).to_tensor()
    negative = negative_texts.with_flat_values(negative_ids)
    if glued is not None:
        flat = negative_texts.flat_values
        pieces = tf.cast(glued(normal_form(flat)), negative_raw.dtype)
        start = tf.RaggedTensor.from_row_lengths(
            tf.fill([tf.size(flat)], tf.constant(WORD_START, pieces.dtype)),
            tf.ones([tf.size(flat)], tf.int64))
        glued_ids = _with_word_end(tf.concat([start, pieces], axis=1), word_ends,
                                   prefix.flat_values)
        negative = tf.concat([negative, negative_texts.with_flat_values(glued_ids)], axis=1)
    negative = negative.to_tensor()
    positive, negative = tf.cast(positive, tf.int32), tf.cast(negative, tf.int32)

    errors = _refusals(parsed, positive_raw, negative_raw, tokenizer, bars)
    return {"positive": positive, "negative": negative, "errors": errors}


def _refusals(parsed, positive_raw, negative_raw, tokenizer, bars):
    """string [B]: why each line is refused ("" for none), the first of the reasons in the
    order constraints.py checks them. parsed: parse's tuple; positive_raw, negative_raw: the
    ragged ids of its positive and negative alternatives (flat), before any word end; bars:
    _bars' first."""
    positive_texts, negative_texts, prefix, phrase_counts, alternative_counts, empty = parsed
    reasons = [tf.where(empty, "an empty phrase or alternative", "")]
    most = constraints_lib.MAX_PHRASES
    reasons.append(tf.where(phrase_counts > most, tf.strings.join(
        [tf.strings.as_string(phrase_counts), f" phrases; at most {most} per line"]), ""))
    cap = constraints_lib.MAX_ALTERNATIVES
    too_many = tf.ragged.boolean_mask(alternative_counts, alternative_counts > cap)
    reasons.append(_first(too_many.with_flat_values(tf.strings.join(
        ["a phrase with ", tf.strings.as_string(too_many.flat_values),
         f" alternatives; at most {cap} per phrase"]))))
    reasons.append(_first(positive_texts.with_flat_values(
        _alternative_errors(positive_texts.flat_values, positive_raw, tokenizer)).merge_dims(1, 2)))
    reasons.append(_first(negative_texts.with_flat_values(
        _alternative_errors(negative_texts.flat_values, negative_raw, tokenizer))))
    tokens = (tf.reduce_sum(positive_texts.with_flat_values(
        tf.cast(positive_raw.row_lengths(), tf.int32)), axis=[1, 2])
        + tf.reduce_sum(negative_texts.with_flat_values(
            tf.cast(negative_raw.row_lengths(), tf.int32)), axis=1))
    total_cap = constraints_lib.MAX_LINE_TOKENS
    reasons.append(tf.where(tokens > total_cap, tf.strings.join(
        [tf.strings.as_string(tokens), f" constraint tokens; at most {total_cap} per line"]),
        ""))
    conflict = _contradictions(bars)
    conflicting = _first(negative_texts.with_flat_values(
        tf.where(conflict, negative_texts.flat_values, "")))
    reasons.append(tf.where(tf.not_equal(conflicting, ""), tf.strings.join(
        ["the phrase '", conflicting, "' is both required and forbidden"]), ""))
    return _first(tf.RaggedTensor.from_tensor(tf.stack(reasons, axis=1)))


def _bars(positive_texts, negative_texts, prefix):
    """(bars bool [n, (p), (a)]: negative alternative n bars alternative a of positive phrase p
    of its line, in normal form; barred bool [N]: each positive alternative (flat) that a
    negative alternative of its line bars)."""
    rows = _rows(negative_texts)
    groups = tf.gather(positive_texts, rows)  # the positive phrases of each one's line
    per_alternative = tf.cast(groups.merge_dims(1, 2).row_lengths(), tf.int32)
    held = _holds(normal_form(groups.flat_values),
                  tf.repeat(normal_form(negative_texts.flat_values), per_alternative),
                  tf.repeat(prefix.flat_values, per_alternative))
    count = tf.size(positive_texts.flat_values)
    which = tf.gather(positive_texts.with_flat_values(tf.range(count)), rows).flat_values
    barred = tf.math.unsorted_segment_max(tf.cast(held, tf.int32), which, count) > 0
    return groups.with_flat_values(held), barred


def _contradictions(bars):
    """bool [n], per negative alternative: it bars a positive phrase of its line, every
    alternative of it (constraints.contradiction). bars: _bars' first."""
    return tf.reduce_any(tf.reduce_all(bars, axis=2), axis=1)


def _rows(ragged):
    """int32 [N]: the row of each flat value of a ragged [B, (n)] or [B, (n), (m)]."""
    rows = tf.range(ragged.nrows(out_type=tf.int32))
    for lengths in ragged.nested_row_lengths():
        rows = tf.repeat(rows, tf.cast(lengths, tf.int32))
    return rows


def check(errors):
    """An op that fails with InvalidArgument naming the first refused row and its reason."""
    bad = tf.where(tf.not_equal(errors, ""))[:, 0]
    first = tf.gather(tf.concat([bad, [0]], axis=0), 0)
    message = tf.strings.join(["constraints of row ", tf.strings.as_string(first), ": ",
                               tf.gather(tf.concat([errors, [""]], axis=0), first)])
    return tf.debugging.Assert(tf.equal(tf.size(bad), 0), [message])


def _word_edges(texts):
    """(ends, starts) bool [N, W + 1], W the longest text's bytes: [i, b] a letter, mark or
    digit (word_pieces.is_word_character) ends at byte b of texts[i] / starts there."""
    characters, starts = tf.strings.unicode_split_with_offsets(texts, "UTF-8")
    word = tf.cast(tf.strings.regex_full_match(characters.flat_values, "(?s)" + WORD), tf.int32)
    sizes = tf.cast(tf.strings.length(texts), tf.int64)
    rows = starts.value_rowids()
    flat = starts.flat_values
    # A character ends where the next one starts, the last one at the text's end.
    last = tf.equal(tf.range(tf.size(flat, out_type=tf.int64)),
                    tf.gather(starts.row_limits(), rows) - 1)
    ends = tf.where(last, tf.gather(sizes, rows),
                    tf.concat([flat[1:], tf.zeros([1], tf.int64)], axis=0)[:tf.size(flat)])
    shape = tf.stack([tf.size(texts, out_type=tf.int64), tf.reduce_max(
        tf.concat([sizes, [0]], axis=0)) + 1])

    def table(where):
        return tf.scatter_nd(tf.stack([rows, where], axis=1), word, shape) > 0

    return table(ends), table(flat)


def _occurrences(outputs, texts, open_ended):
    """int32 [N]: how often outputs[i] holds texts[i] as whole words, as
    constraints.occurrences counts (open_ended: the start of a word), each starting byte once."""
    word_ends, word_starts = _word_edges(outputs)
    sizes = tf.strings.length(outputs)[:, None]
    lengths = tf.strings.length(texts)[:, None]
    at = tf.range(tf.shape(word_ends)[1])[None, :]  # [1, W + 1]
    whole = tf.broadcast_to(outputs[:, None], tf.shape(word_ends))
    found = tf.equal(tf.strings.substr(whole, tf.minimum(at, sizes),
                                       tf.broadcast_to(lengths, tf.shape(word_ends))),
                     texts[:, None])
    found &= (at + lengths <= sizes) & (lengths > 0)
    found &= tf.logical_not(tf.gather(word_ends, at[0], axis=1))
    after = tf.gather(word_starts, tf.minimum(at + lengths, tf.shape(word_ends)[1] - 1)
                      + tf.zeros_like(sizes), batch_dims=1)
    found &= open_ended[:, None] | tf.logical_not(after)
    return tf.reduce_sum(tf.cast(found, tf.int32), axis=1)


def _holds(outputs, texts, open_ended):
    """bool [N]: outputs[i] holds texts[i] as whole words (open_ended: a word beginning with
    it)."""
    return _occurrences(outputs, texts, open_ended) > 0


def unmet(outputs, lines):
    """int32 [B]: the phrases of each constraint line its output string does not keep as whole
    words, as constraints.unmet_phrases counts them: each positive phrase past the occurrences
    of its alternatives (each alternative once; a phrase given n times needs n), each
    alternative of a negative phrase that the output holds; in normal form."""
    positive_texts, negative_texts, prefix, _, _, _ = parse(lines)
    outputs = normal_form(outputs)
    positive_texts = positive_texts.with_flat_values(normal_form(positive_texts.flat_values))
    negative_texts = negative_texts.with_flat_values(normal_form(negative_texts.flat_values))
    counts = positive_texts.with_flat_values(_occurrences(
        tf.gather(outputs, _rows(positive_texts)), positive_texts.flat_values,
        tf.zeros_like(positive_texts.flat_values, tf.bool))).to_tensor()  # [B, P, A]
    alternatives = positive_texts.to_tensor(default_value="")  # [B, P, A]
    width = tf.shape(alternatives)[2]
    earlier = tf.range(width)[None, :] < tf.range(width)[:, None]  # [a, a']: a' < a
    repeated = tf.reduce_any(tf.equal(alternatives[..., :, None], alternatives[..., None, :])
                             & earlier, axis=-1)
    held = tf.reduce_sum(tf.where(repeated, 0, counts), axis=2)  # [B, P]
    real = tf.reduce_any(tf.not_equal(alternatives, ""), axis=2)
    same = tf.reduce_all(tf.equal(alternatives[:, :, None], alternatives[:, None]), axis=3)
    phrases = tf.shape(alternatives)[1]
    before = tf.range(phrases)[None, :] < tf.range(phrases)[:, None]  # [p, q]: q < p
    wanted = tf.reduce_sum(tf.cast(same, tf.int32), axis=2)
    first = real & tf.logical_not(tf.reduce_any(same & before, axis=2))
    missing = tf.where(first, tf.maximum(wanted - held, 0), 0)
    present = _holds(tf.gather(outputs, _rows(negative_texts)), negative_texts.flat_values,
                     prefix.flat_values)
    return (tf.reduce_sum(missing, axis=1)
            + tf.reduce_sum(tf.cast(negative_texts.with_flat_values(present), tf.int32),
                            axis=1))
