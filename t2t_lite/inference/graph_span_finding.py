"""Protected spans found inside the graph: the finding half of graph_spans.py, in TF string ops.

The same patterns as span_finding.py, rewritten for RE2 (re2: Unicode classes for \\w and \\d;
the space flag's lookahead checked on the next character), and the same tag rule (closing,
self-closing, with an attribute value, br/hr/wbr, closed in the same line, or a tag of the source);
then code_spans.CODE on the text with each of those spans masked, as span_finding does.
tests/inference/test_graph_spans.py holds the two finders equal on real catalogs.

    find(text, kinds)                     -> the protected spans of one text (the parity tests)
    segment(text, kinds, known_tags)      -> gaps, pieces and which pieces are loose, as
                                             protected_spans._segment (graph_spans' repair)

The characters \\x00-\\x02 (MARKS) are marks here: graph_spans removes them from the texts first.
"""
import re

import tensorflow as tf

from t2t_lite.inference import code_spans
from t2t_lite.inference import protected_spans as ps
from t2t_lite.inference import span_finding as finding

# Marks, removed from the texts first: where a text ends and a span ends, where a space-flag
# specifier ends right before a character that may start the next span, and a format span as
# the code-like finder sees it.
_TEXT_END = "\x00"
_SPAN_END = "\x01"
_FLAG_END = "\x02"
MARKS = f"[{_TEXT_END}{_SPAN_END}{_FLAG_END}{code_spans.MASK}]"
_NEXT_SPAN_START = "%{}<&"


def re2(pattern):
    """A Python regex of protected_spans.py in RE2's dialect: \\w, \\d and \\s as Python reads
    them in str patterns (Unicode), \\Z as \\z, named groups as plain ones (RE2 numbers every
    group)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escape = pattern[i:i + 2]
            unicode_class = {r"\w": r"\pL\pN_", r"\d": r"\p{Nd}",
                             r"\s": r"\s\p{Z}\x0b\x1c-\x1f\x85"}.get(escape)
            if escape == r"\Z":
                out.append(r"\z")
            elif unicode_class is None:
                out.append(escape)
            else:
                out.append(unicode_class if in_class else f"[{unicode_class}]")
            i += 2
            continue
        if not in_class and pattern.startswith("(?P<", i):
            i = pattern.index(">", i) + 1
            out.append("(?:")
            continue
        if not in_class and pattern.startswith("(?!", i):
            raise ValueError(f"RE2 has no lookahead: {pattern}")
        if char == "[" and not in_class:
            in_class = True
        elif char == "]" and in_class:
            in_class = False
        out.append(char)
        i += 1
    return "".join(out)


def _finder(kinds, stray=True):
    """(pattern, rewrite) that turn a text into text NUL span \\x01 text NUL span \\x01 ... tail."""
    spans = []
    if "markup" in kinds:
        spans.append(re2(finding._TAG.pattern))
    if "printf" in kinds:
        spans.append(re2(finding._PRINTF_PLAIN))
    if "brace" in kinds:
        spans.append(re2(finding._BRACE if stray else finding._BRACE_FIELD))
    if "markup" in kinds:
        spans.append(re2(finding._ENTITY))
    pattern = f"(?s)(.*?)(?:({'|'.join(spans)})"
    rewrite = f"\\1{_TEXT_END}\\2"
    if "printf" in kinds:
        # A space-flag specifier counts only when no letter or digit follows: the next character
        # is matched too, and written back as the start of the following text.
        pattern += (f"|({re2(finding._PRINTF_SPACE_FLAG)})"
                    f"(?:([^\\pL\\pN{_NEXT_SPAN_START}{_FLAG_END}]|$)|{_FLAG_END})")
        rewrite += f"\\3{_SPAN_END}\\4"
    else:
        rewrite += _SPAN_END
    return pattern + ")", rewrite


def _split(text, kinds, known_tags, stray=True):
    """A scalar text -> (texts [m + 1], spans [m]): the text between the protected spans, and the
    spans. known_tags [k]: tags protected whatever the tag rule says (the source's, for outputs).
    stray=False: stray braces are left in the texts (the loose pieces find them)."""
    if frozenset(kinds) & frozenset(finding.FORMAT_KINDS):
        texts, spans = _format_split(text, kinds, known_tags, stray)
    else:
        texts, spans = tf.reshape(text, [1]), tf.constant([], tf.string)
    code = frozenset(kinds) & frozenset(code_spans.CODE_KINDS)
    return _with_code(texts, spans, code) if code else (texts, spans)


def _code_finder():
    """(pattern, rewrite): code_spans.CODE's matches marked text NUL match \x01, the delimiter
    and a word that is no span written as text (the word's "match" is then "")."""
    return (f"(?s)(.*?)(?:{re2(code_spans.CODE)})",
            f"\\1\\2\\4{_TEXT_END}\\3{_SPAN_END}")


def code_kinds(texts):
    """string [n]: the kind of each code-like match (code_spans.kind_of), "" for text."""
    kinds = tf.fill(tf.shape(texts), "")
    done = tf.zeros(tf.shape(texts), tf.bool)
    for _, kind, pattern in code_spans.CLASSES:
        whole = tf.strings.regex_full_match(texts, re2(pattern)) & ~done
        kinds = tf.where(whole, kind or "", kinds)
        done |= whole
    return kinds


def _with_code(texts, spans, kinds):
    """(texts, spans) of the format spans -> the same with the code-like spans of `kinds` found
    outside them (span_finding._with_code_spans: the text read with each span one MASK)."""
    pattern, rewrite = _code_finder()
    marked = tf.strings.regex_replace(tf.strings.reduce_join(texts, separator=code_spans.MASK),
                                      pattern, rewrite)
    parts = tf.strings.split(marked, _SPAN_END)
    pairs = tf.strings.split(parts[:-1], _TEXT_END).flat_values
    between, found = pairs[0::2], pairs[1::2]
    found_kinds = code_kinds(found)
    keep = tf.zeros(tf.shape(found), tf.bool)
    for kind in kinds:
        keep |= tf.equal(found_kinds, kind)
    wrapped = tf.where(keep, tf.strings.join([_TEXT_END, found, _SPAN_END]), found)
    joined = tf.strings.reduce_join(tf.concat(
        [tf.reshape(tf.stack([between, wrapped], axis=1), [-1]), parts[-1:]], axis=0))
    # each MASK a span again, given back its format span's text
    joined = tf.strings.regex_replace(joined, code_spans.MASK,
                                      f"{_TEXT_END}{code_spans.MASK}{_SPAN_END}")
    parts = tf.strings.split(joined, _SPAN_END)
    pairs = tf.strings.split(parts[:-1], _TEXT_END).flat_values
    all_spans = pairs[1::2]
    is_mask = tf.equal(all_spans, code_spans.MASK)
    index = tf.cumsum(tf.cast(is_mask, tf.int32), exclusive=True)
    all_spans = tf.where(is_mask, tf.gather(tf.concat([spans, [""]], axis=0),
                                            tf.minimum(index, tf.size(spans))), all_spans)
    return tf.concat([pairs[0::2], parts[-1:]], axis=0), all_spans


def _format_split(text, kinds, known_tags, stray):
    pattern, rewrite = _finder(kinds, stray)
    if "printf" in kinds:
        # "% d%s": the "%" after "% d" must stay free to start "%s", so it is not matched; a mark
        # says that "% d" is followed by no letter or digit (twice: "% d% d" chains two).
        before_span = f"({re2(finding._PRINTF_SPACE_FLAG)})([{_NEXT_SPAN_START}])"
        for _ in range(2):
            text = tf.strings.regex_replace(text, before_span, f"\\1{_FLAG_END}\\2")
    marked = tf.strings.regex_replace(text, pattern, rewrite)
    parts = tf.strings.split(marked, _SPAN_END)
    pairs = tf.strings.split(parts[:-1], _TEXT_END).flat_values  # text, span, text, span, ...
    texts, spans = pairs[0::2], pairs[1::2]
    if "printf" in kinds:
        texts = tf.strings.regex_replace(texts, _FLAG_END, "")
        spans = tf.strings.regex_replace(spans, _FLAG_END, "")
    kept = _kept_tags(spans, known_tags) if "markup" in kinds else tf.ones_like(spans, tf.bool)
    # A tag the rule does not protect ("<file>", a usage metavariable) is text again.
    elements = tf.reshape(tf.stack([texts, spans], axis=1), [-1])
    tail = tf.strings.regex_replace(parts[-1:], _FLAG_END, "")
    elements = tf.concat([elements, tail], axis=0)
    is_span = tf.reshape(tf.stack([tf.zeros_like(kept), kept], axis=1), [-1])
    is_span = tf.concat([is_span, [False]], axis=0)
    before = tf.cumsum(tf.cast(is_span, tf.int32), exclusive=True)
    segments = 2 * before + tf.cast(is_span, tf.int32)
    count = tf.reduce_sum(tf.cast(kept, tf.int32))
    joined = tf.strings.unsorted_segment_join(elements, segments, 2 * count + 1)
    return joined[0::2], joined[1::2]


def _kept_tags(spans, known_tags):
    """bool [m]: which spans stay spans (everything but tags the rule does not protect)."""
    is_tag = tf.strings.regex_full_match(spans, "<.*")
    closing = tf.strings.regex_full_match(spans, "(?s)</.*")
    names = tf.strings.regex_replace(spans, r"(?s)^</?([^\s/>]+).*$", r"\1")
    closed_names = tf.boolean_mask(names, closing)
    closed = tf.reduce_any(tf.equal(names[:, None], closed_names[None, :]), axis=1)
    known = tf.reduce_any(tf.equal(spans[:, None], known_tags[None, :]), axis=1)
    rule = (closing | tf.strings.regex_full_match(spans, r"(?s).*/>")
            | tf.strings.regex_full_match(spans, r"(?s)<[^=]*=.*")
            | tf.strings.regex_full_match(spans, r"(?is)<(?:br|hr|wbr)[\s/>].*")
            | closed | known)
    return tf.logical_not(is_tag) | rule


def _loose(kinds):
    """(pattern, rewrite) that mark each loose piece of a text: text NUL piece \\x01 text ..."""
    parts, groups, next_group = [], [], None
    group = 2  # group 1 is the text before the piece
    for kind, pattern in (("brace", ps._LOOSE_BRACE), ("markup", ps._LOOSE_MARKUP),
                          ("printf", ps._LOOSE_PRINTF)):
        if kind in kinds:
            parts.append(re2(pattern))
            count = re.compile(pattern).groups
            groups += range(group, group + count)
            group += count
    if "printf" in kinds:
        next_group = groups.pop()
    rewrite = ("\\1" + _TEXT_END + "".join(f"\\{g}" for g in groups) + _SPAN_END
               + (f"\\{next_group}" if next_group else ""))
    return f"(?s)(.*?)(?:{'|'.join(parts)})", rewrite


def segment(text, kinds, known_tags):
    """A scalar text -> (gaps [M + 1], pieces [M], loose bool [M]), as protected_spans._segment."""
    texts, spans = _split(text, kinds, known_tags, stray=False)
    if not frozenset(kinds) & frozenset(finding.FORMAT_KINDS):  # no loose pieces to look for
        return texts, spans, tf.zeros(tf.shape(spans), tf.bool)
    m = tf.size(spans, out_type=tf.int64)
    pattern, rewrite = _loose(kinds)
    marked = tf.strings.regex_replace(texts, pattern, rewrite)
    rows = tf.strings.split(tf.strings.split(marked, _SPAN_END), _TEXT_END).merge_dims(1, 2)
    positions = tf.ragged.range(rows.row_lengths())
    loose = tf.equal(positions % 2, 1)
    lengths = tf.concat([tf.ones([m], tf.int64), tf.zeros([1], tf.int64)], axis=0)
    span_column = tf.RaggedTensor.from_row_lengths(spans, lengths)
    elements = tf.concat([rows, span_column], axis=1).flat_values
    loose = tf.concat([loose, tf.RaggedTensor.from_row_lengths(tf.zeros([m], tf.bool), lengths)],
                      axis=1).flat_values
    return elements[0::2], elements[1::2], loose[1::2]


def find(text, kinds):
    """The protected spans of one text (a scalar string) -> string [m]; for the parity tests."""
    return _split(text, frozenset(kinds), tf.constant([], tf.string))[1]
