"""Protected spans inside the graph: an exported SavedModel keeps format specifiers and tags itself.

protected_spans.py finds and repairs spans in Python, which the decoder, the Python API and
t2t-lite-po run. A client of TF Serving runs no Python of ours, so the text-in signatures of an
export (translation_module.py) repair their outputs with these TF string ops instead:

    repair(sources, outputs, kinds)   -> outputs whose spans agree with their source's, and a
                                         bool per output: was it changed

Finding: the same patterns as protected_spans.py, rewritten for RE2 (Unicode classes for \\w and
\\d; the space flag's lookahead checked on the next character), and the same tag rule (closing,
self-closing, with an attribute value, br/hr/wbr, closed in the same line, or a tag of the source).
tests/inference/test_graph_spans.py holds the two finders equal on real catalogs.

Agreement is protected_spans' rule: the same spans as often, byte for byte, and the order-bound
ones in the source's order. An output that agrees is returned unchanged. Otherwise the k-th span
of the output becomes the source's k-th span, surplus ones are dropped and missing ones go before
the final punctuation: that puts every span back in the source's order, which always agrees.
(protected_spans.restore repairs more gently: it matches mangled copies and keeps moved spans.)
Should the rewritten text still disagree (a deletion joining "%" and "d"), the source is returned.
"""
import tensorflow as tf

from t2t_lite.inference import protected_spans as ps

# Marks, removed from the texts first: where a text ends and a span ends, and where a space-flag
# specifier ends right before a character that may start the next span.
_TEXT_END = "\x00"
_SPAN_END = "\x01"
_FLAG_END = "\x02"
_MARKS = f"[{_TEXT_END}{_SPAN_END}{_FLAG_END}]"
_NEXT_SPAN_START = "%{}<&"
_MOVABLE = (r"(?s)%%|%\(.*|%[1-9][0-9]*\$.*"       # %%, %(name)s, %1$s
            r"|\{\{|\}\}|\{|\}|\{[\pL\pN_].*"        # {{, }}, stray braces, {0}, {name}
            r"|&.*")                                 # entities
_NO_SPACE_BEFORE = r"(?s)(?:[\s.,;:!?)\]}»].*)?"
_FINAL_PUNCTUATION = r"[.!?:]+$"


def _re2(pattern):
    """A Python regex of protected_spans.py in RE2's dialect: \\w, \\d and \\s as Python reads
    them in str patterns (Unicode), named groups as plain ones (RE2 numbers every group)."""
    out, i, in_class = [], 0, False
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            escape = pattern[i:i + 2]
            unicode_class = {r"\w": r"\pL\pN_", r"\d": r"\p{Nd}", r"\s": r"\s\p{Z}\x0b"}.get(escape)
            if unicode_class is None:
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


def _finder(kinds):
    """(pattern, rewrite) that turn a text into text NUL span \\x01 text NUL span \\x01 ... tail."""
    spans = []
    if "markup" in kinds:
        spans.append(_re2(ps._TAG.pattern))
    if "printf" in kinds:
        spans.append(_re2(ps._PRINTF_PLAIN))
    if "brace" in kinds:
        spans.append(_re2(ps._BRACE))
    if "markup" in kinds:
        spans.append(_re2(ps._ENTITY))
    pattern = f"(?s)(.*?)(?:({'|'.join(spans)})"
    rewrite = f"\\1{_TEXT_END}\\2"
    if "printf" in kinds:
        # A space-flag specifier counts only when no letter or digit follows: the next character
        # is matched too, and written back as the start of the following text.
        pattern += (f"|({_re2(ps._PRINTF_SPACE_FLAG)})"
                    f"(?:([^\\pL\\pN{_NEXT_SPAN_START}{_FLAG_END}]|$)|{_FLAG_END})")
        rewrite += f"\\3{_SPAN_END}\\4"
    else:
        rewrite += _SPAN_END
    return pattern + ")", rewrite


def _split(text, kinds, known_tags):
    """A scalar text -> (texts [m + 1], spans [m]): the text between the protected spans, and the
    spans. known_tags [k]: tags protected whatever the tag rule says (the source's, for outputs)."""
    pattern, rewrite = _finder(kinds)
    if "printf" in kinds:
        # "% d%s": the "%" after "% d" must stay free to start "%s", so it is not matched; a mark
        # says that "% d" is followed by no letter or digit (twice: "% d% d" chains two).
        before_span = f"({_re2(ps._PRINTF_SPACE_FLAG)})([{_NEXT_SPAN_START}])"
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


def _tags(spans):
    return tf.boolean_mask(spans, tf.strings.regex_full_match(spans, "<.*"))


def _equal(a, b):
    same_size = tf.equal(tf.size(a), tf.size(b))
    k = tf.minimum(tf.size(a), tf.size(b))
    return same_size & tf.reduce_all(tf.equal(a[:k], b[:k]))


def _agrees(source_spans, output_spans):
    """The same spans as often, and the order-bound ones in the same order."""
    def counted(spans):
        return tf.sort(tf.strings.to_hash_bucket_fast(spans, 2 ** 62))

    def bound(spans):
        return tf.boolean_mask(spans, tf.logical_not(tf.strings.regex_full_match(spans, _MOVABLE)))

    return (_equal(counted(source_spans), counted(output_spans))
            & _equal(bound(source_spans), bound(output_spans)))


def _rewrite(texts, spans, source_spans):
    """texts [m + 1] and spans [m] of an output -> one text with the source's spans in order."""
    m, n = tf.size(spans), tf.size(source_spans)
    padding = tf.fill([tf.maximum(m - n, 0)], "")
    replacement = tf.concat([source_spans, padding], axis=0)[:m]
    # Where a span is dropped, no double space and no space before punctuation is left behind.
    dropped = tf.range(m) >= n
    tight = tf.strings.regex_full_match(texts[1:], _NO_SPACE_BEFORE)
    trimmed = tf.strings.regex_replace(texts[:-1], r"\s+$", "")
    heads = tf.where(dropped & tight, trimmed, texts[:-1])
    body = tf.strings.reduce_join(tf.reshape(tf.stack([heads, replacement], axis=1), [-1]))
    body = body + texts[-1]
    missing = source_spans[tf.minimum(m, n):]
    glue = tf.where(tf.strings.regex_full_match(missing, "(?s)</.*"), "", " ")
    addition = tf.strings.reduce_join(glue + missing)
    body = tf.strings.regex_replace(body, r"\s+$", "")
    final = tf.strings.regex_replace(body, r"(?s)^.*?([.!?:]*)$", r"\1")
    main = tf.strings.regex_replace(tf.strings.regex_replace(body, _FINAL_PUNCTUATION, ""),
                                    r"\s+$", "")
    with_addition = tf.strings.regex_replace(main + addition, r"^\s+", "") + final
    return tf.where(tf.size(missing) > 0, with_addition, body)


def _repair_hypotheses(source, outputs, kinds):
    """One source and its hypotheses [K]: the source's spans are found once for all of them."""
    source = tf.strings.regex_replace(source, _MARKS, "")
    _, source_spans = _split(source, kinds, tf.constant([], tf.string))
    known = _tags(source_spans)

    def repair_one(output):
        clean = tf.strings.regex_replace(output, _MARKS, "")
        texts, spans = _split(clean, kinds, known)
        if_kept = _agrees(source_spans, spans)
        rewritten = _rewrite(texts, spans, source_spans)
        _, rewritten_spans = _split(rewritten, kinds, known)
        repaired = tf.where(_agrees(source_spans, rewritten_spans), rewritten, source)
        result = tf.where(if_kept, clean, repaired)
        return result, tf.not_equal(result, output)

    return tf.map_fn(repair_one, outputs, fn_output_signature=(tf.string, tf.bool))


def repair(sources, outputs, kinds):
    """sources string [N], outputs string [N] or [N, K] (K hypotheses of each source) ->
    (outputs of the same shape whose protected spans of `kinds` agree with their source's,
    changed bool of that shape). No kinds: the outputs as they are."""
    kinds = frozenset(kinds)
    if not kinds:
        return outputs, tf.zeros_like(outputs, tf.bool)
    outputs = tf.convert_to_tensor(outputs, tf.string)
    one_each = outputs.shape.rank == 1
    rows = outputs[:, None] if one_each else outputs
    texts, changed = tf.map_fn(
        lambda pair: _repair_hypotheses(pair[0], pair[1], kinds), (sources, rows),
        fn_output_signature=(tf.TensorSpec([None], tf.string), tf.TensorSpec([None], tf.bool)))
    return (texts[:, 0], changed[:, 0]) if one_each else (texts, changed)


def find(text, kinds):
    """The protected spans of one text (a scalar string) -> string [m]; for the parity tests."""
    return _split(text, frozenset(kinds), tf.constant([], tf.string))[1]
