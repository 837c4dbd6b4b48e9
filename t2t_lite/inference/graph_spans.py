"""Protected spans inside the graph: an exported SavedModel keeps format specifiers and tags itself.

protected_spans.py finds and repairs spans in Python, which the decoder, the Python API and
t2t-lite-po run. A client of TF Serving runs no Python of ours, so the text-in signatures of an
export (translation_module.py) repair their outputs with these TF string ops instead:

    repair(sources, outputs, kinds)   -> outputs whose spans agree with their source's, and a
                                         bool per output: was it changed

Finding: graph_span_finding.py (the patterns of span_finding.py rewritten for RE2, and the same
tag rule).

Repair: the rules of protected_spans (listed there above _known_tags), step for step: the same
pieces (protected spans and the loose pieces between them), the same keeping, claiming, placing and
deletion, the same tidying of spaces, the same number of rounds before the source is given back.
The one difference: the characters \\x00-\\x02, which graph_span_finding uses as marks, are removed
from the texts first. tests/inference/test_graph_spans.py runs both repairs on a table of
hypotheses and holds their outputs equal, byte for byte.
"""
import tensorflow as tf

from t2t_lite.inference import code_spans
from t2t_lite.inference import protected_spans as ps
from t2t_lite.inference import graph_span_finding as graph_finding

# Spans that may move (protected_spans' movable ones), and what takes no space before it.
_MOVABLE = (r"(?s)%%|%\(.*|%[1-9][0-9]*\$.*"       # %%, %(name)s, %1$s
            r"|\{\{|\}\}|\{|\}|\{[\pL\pN_].*"        # {{, }}, stray braces, {0}, {name}
            r"|&.*"                                  # entities
            r"|[^%{}<&].*")                          # code-like text
_NO_SPACE_BEFORE = r"(?s)[.,;:!?)\]}»].*"


def _tags(spans):
    return tf.boolean_mask(spans, tf.strings.regex_full_match(spans, "<.*"))


def _range(n):
    return tf.range(n, dtype=tf.int32)


def _rank(mask, same):
    """int [n]: for each i, how many j < i have mask[j] and same[i, j]."""
    n = tf.size(mask)
    earlier = _range(n)[None, :] < _range(n)[:, None]
    return tf.reduce_sum(tf.cast(earlier & same & mask[None, :], tf.int32), axis=1)


def _count_in(values, pool):
    """int [n]: how many times each of values [n] is in pool [k]."""
    return tf.reduce_sum(tf.cast(tf.equal(values[:, None], pool[None, :]), tf.int32), axis=1)


def _key(texts):
    return tf.strings.lower(tf.strings.regex_replace(texts, graph_finding.re2(r"\s+"), ""),
                            encoding="utf-8")


def _shape(texts):
    """protected_spans._shape, with "" for None (a code-like kind for code-like text)."""
    def starts(prefix):
        return tf.strings.regex_full_match(texts, f"(?s){prefix}.*")
    empty = tf.fill(tf.shape(texts), "")
    printf = tf.strings.regex_replace(texts, r"(?s)\A%.*(.)\z", r"%\1")
    opening = ~tf.strings.regex_full_match(texts, r"(?s).*/>")
    return tf.where(tf.equal(texts, "%%"), empty,
           tf.where(starts("%"), printf,
           tf.where(tf.equal(texts, "{") | tf.equal(texts, "{{"), empty,
           tf.where(starts(r"\{"), tf.fill(tf.shape(texts), "{}"),
           tf.where(starts("</"), tf.fill(tf.shape(texts), "</>"),
           tf.where(starts("<"), tf.where(opening, tf.fill(tf.shape(texts), "<>"),
                                          tf.fill(tf.shape(texts), "<x/>")),
           tf.where(starts("&"), tf.fill(tf.shape(texts), "&;"),
                    graph_finding.code_kinds(texts))))))))


def _prose_key(texts):
    lone_tag = tf.strings.regex_full_match(texts, graph_finding.re2(ps._LONE_TAG.pattern))
    return tf.where(lone_tag, tf.fill(tf.shape(texts), "<>"),
                    tf.where(tf.strings.regex_full_match(texts, graph_finding.re2(r"%[-+#0'\d]*")),
                             tf.fill(tf.shape(texts), "%"), texts))


def _source(source, kinds):
    """protected_spans._source: a dict of tensors for one scalar source."""
    source = tf.strings.regex_replace(source, graph_finding.MARKS, "")
    # its spans: the pieces of its segmentation but the loose ones other than braces (prose)
    gaps, pieces, loose = graph_finding.segment(source, kinds, tf.constant([], tf.string))
    # a line to copy (code_spans.copied): spans and no letter outside them, or an author line
    outside = tf.strings.reduce_join(tf.concat([gaps, tf.boolean_mask(pieces, loose)], 0))
    copied = (tf.reduce_any(~loose) & tf.strings.regex_full_match(outside, r"(?s)[^\pL]*"))
    if "email" in kinds:
        copied |= tf.strings.regex_full_match(source, graph_finding.re2(code_spans.AUTHOR_LINE))
    brace = tf.strings.regex_full_match(pieces, "(?s)[{}].*")
    is_span = ~loose | brace
    elements = tf.concat([tf.reshape(tf.stack([gaps[:-1], pieces], axis=1), [-1]), gaps[-1:]], 0)
    flags = tf.concat([tf.reshape(tf.stack([tf.zeros_like(is_span), is_span], axis=1), [-1]),
                       [False]], axis=0)
    flag_count = tf.cast(flags, tf.int32)
    count = tf.reduce_sum(flag_count)
    joined = tf.strings.unsorted_segment_join(
        elements, 2 * tf.cumsum(flag_count, exclusive=True) + flag_count, 2 * count + 1)
    texts, spans = joined[0::2], joined[1::2]
    prose = tf.boolean_mask(pieces, loose & ~brace)
    movable = tf.strings.regex_full_match(spans, _MOVABLE)
    # gaps[j]: the source's text between order-bound spans j - 1 and j (all in between joined)
    elements = tf.reshape(tf.stack([texts[:-1], spans], axis=1), [-1])
    elements = tf.concat([elements, texts[-1:]], axis=0)
    is_bound = tf.concat([tf.reshape(tf.stack([tf.zeros_like(movable), ~movable], axis=1), [-1]),
                          [False]], axis=0)
    n_bound = tf.reduce_sum(tf.cast(~movable, tf.int32))
    segment = tf.cumsum(tf.cast(is_bound, tf.int32), exclusive=True)
    segment = tf.where(is_bound, n_bound + 1, segment)  # the bound spans themselves: a dump
    gaps = tf.strings.unsorted_segment_join(elements, segment, n_bound + 2)[:n_bound + 1]
    gaps = tf.concat([[""], gaps[1:n_bound]], axis=0)[:n_bound]
    first = tf.equal(_rank(tf.ones_like(movable), tf.equal(spans[:, None], spans[None, :])), 0)
    space_before = tf.strings.regex_replace(texts[:-1], graph_finding.re2(r"(?s)\A.*?(\s*)\Z"),
                                            r"\1")
    space_after = tf.strings.regex_replace(texts[1:], graph_finding.re2(r"(?s)\A(\s*).*\Z"),
                                           r"\1")
    distinct = tf.boolean_mask(spans, first)
    return {"source": source, "copied": copied, "spans": spans, "movable": movable,
            "order": tf.boolean_mask(spans, ~movable), "gaps": gaps,
            "tight": tf.strings.regex_full_match(gaps, graph_finding.re2(ps._TIGHT_GAP.pattern))
            & (_range(tf.size(gaps)) > 0),
            "budget": _prose_key(prose), "known": _tags(spans), "distinct": distinct,
            "space_before": _or_space(space_before),
            "space_after": tf.boolean_mask(_or_space(space_after), ~movable),
            "distinct_key": _key(distinct), "distinct_shape": _shape(distinct)}


def _or_space(texts):
    return tf.where(tf.equal(texts, ""), " ", texts)


def _claim(src, assigned, new, item_values, distinct_values, eligible):
    """Steps 2 and 3: for each distinct source span with a deficit (source order), the first free
    eligible pieces whose value equals its value take its text."""
    need = _count_in(src["distinct"], src["spans"])

    def body(k, assigned, new):
        text = src["distinct"][k]
        deficit = need[k] - tf.reduce_sum(tf.cast(assigned & tf.equal(new, text), tf.int32))
        candidate = ~assigned & eligible & tf.equal(item_values, distinct_values[k])
        rank = tf.cumsum(tf.cast(candidate, tf.int32), exclusive=True)
        take = candidate & (rank < deficit)
        return k + 1, assigned | take, tf.where(take, text, new)

    _, assigned, new = tf.while_loop(lambda k, *_: k < tf.size(src["distinct"]), body,
                                     [tf.constant(0), assigned, new])
    return assigned, new


def _prose(src, pieces, loose, assigned):
    """Step 4: the free loose pieces that stay as prose."""
    free = ~assigned & loose
    keys = _prose_key(pieces)
    rank = _rank(free, tf.equal(keys[:, None], keys[None, :]))
    own_code = (~assigned & ~loose & _is_code(pieces)
                & tf.equal(_count_in(pieces, src["spans"]), 0))  # "zwei" -> "2" stays
    return (free & (rank < _count_in(keys, src["budget"]))) | own_code


def _is_code(texts):
    return tf.strings.regex_full_match(texts, "(?s)[^%{}<&].*")


def _subsequence(order, bound_texts):
    """Are bound_texts a subsequence of order (greedy, earliest)? And int [len(order)]: the index
    into bound_texts matched to each j, or -1."""
    n = tf.size(order)

    def body(b, j, ok, matched):
        later = (_range(n) >= j) & tf.equal(order, bound_texts[b])
        found = tf.reduce_any(later)
        at = tf.reduce_min(tf.where(later, _range(n), n))
        matched = tf.where(found & tf.equal(_range(n), at), b, matched)
        return b + 1, at + 1, found, matched

    _, _, ok, matched = tf.while_loop(
        lambda b, j, ok, matched: ok & (b < tf.size(bound_texts)), body,
        [tf.constant(0), tf.constant(0), tf.constant(True), -tf.ones([n], tf.int32)])
    return ok, matched


def _append_at(vector, index, piece, when):
    """vector with piece added to the end of vector[index], when `when`."""
    return tf.cond(when, lambda: tf.tensor_scatter_nd_update(vector, [[index]],
                                                             [vector[index] + piece]),
                   lambda: vector)


def _place(src, bound, new, size):
    """Step 5 (protected_spans._place): bound int [b] (indices of the kept order-bound pieces) ->
    (new, before [size], after [size], tail bool [len(order)])."""
    order, gaps, tight = src["order"], src["gaps"], src["tight"]
    n = tf.size(order)
    ok, matched_b = _subsequence(order, tf.gather(new, bound))
    empty = tf.fill([size], "")
    # Not in order: the k-th kept order-bound piece becomes the source's k-th.
    b = tf.size(bound)
    renamed = tf.tensor_scatter_nd_update(new, bound[:, None], order[:b])
    # In order: each missing one goes beside its neighbours.
    matched = tf.gather(tf.concat([bound, [-1]], axis=0),
                        tf.where(matched_b >= 0, matched_b, tf.size(bound)))
    is_matched = matched >= 0
    opening = (tf.strings.regex_full_match(order, "(?s)<.*")
               & ~tf.strings.regex_full_match(order, "(?s)</.*")
               & ~tf.strings.regex_full_match(order, "(?s).*/>"))
    closing = tf.strings.regex_full_match(order, "(?s)</.*")
    is_tag = tf.strings.regex_full_match(order, "(?s)<.*")
    index = _range(n)

    def body(j, after_slot, before, after, tail):
        text = order[j]
        here = ~is_matched[j]
        earlier = tf.reduce_max(tf.where(is_matched & (index < j), index, -1))
        later = tf.reduce_min(tf.where(is_matched & (index > j), index, n))
        previous = tf.where(j > 0, after_slot[tf.maximum(j - 1, 0)], -1)
        c1 = here & (previous >= 0) & tight[j]
        closes = tf.reduce_all(tf.where((index > earlier) & (index <= j), closing, True))
        c2 = (here & ~c1 & (earlier >= 0) & ~opening[tf.maximum(earlier, 0)] & closes)
        next_tight = tight[tf.minimum(j + 1, n - 1)] & (j + 1 < n)
        c3 = here & ~c1 & ~c2 & (later < n) & tf.equal(later, j + 1) & next_tight
        c4 = here & ~c1 & ~c2 & ~c3 & (later < n)
        c5 = here & ~c1 & ~c2 & ~c3 & ~c4
        earlier_slot = matched[tf.maximum(earlier, 0)]
        later_slot = matched[tf.minimum(later, n - 1)]
        after = _append_at(after, tf.where(c1, previous, earlier_slot),
                           tf.where(c1, gaps[j] + text, text), c1 | c2)
        spaced = tf.where(is_tag[j] | is_tag[tf.minimum(later, n - 1)], text,
                          text + src["space_after"][j])
        before = _append_at(before, later_slot,
                            tf.where(c3, text + gaps[tf.minimum(j + 1, n - 1)], spaced), c3 | c4)
        after_slot = tf.where(c1 & tf.equal(index, j), previous, after_slot)
        tail = tail | (c5 & tf.equal(index, j))
        return j + 1, after_slot, before, after, tail

    def placed():  # only when in order with some missing: else there is nothing to place
        loop = tf.while_loop(lambda j, *_: j < n, body,
                             [tf.constant(0), matched, empty, empty, tf.zeros([n], tf.bool)])[2:]
        return tuple(loop)

    before, after, tail = tf.cond(ok & (b < n), placed,
                                  lambda: (empty, empty, tf.zeros([n], tf.bool)))
    return (tf.where(ok, new, renamed), tf.where(ok, before, empty), tf.where(ok, after, empty),
            tf.where(ok, tail, index >= b))


def _rstrip(text):
    return tf.strings.regex_replace(text, " +$", "")


def _lstrip(text):
    return tf.strings.regex_replace(text, "^ +", "")


def _join(out, text, after_deletion):
    """protected_spans._join on scalars."""
    space_out = tf.strings.regex_full_match(out, "(?s).* ")
    space_text = tf.strings.regex_full_match(text, "(?s) .*")
    punctuation = tf.strings.regex_full_match(text, _NO_SPACE_BEFORE)
    return tf.where(~after_deletion | tf.equal(text, ""), out + text,
           tf.where(tf.equal(out, ""), _lstrip(text),
           tf.where(space_out & space_text, out + _lstrip(text),
           tf.where(space_out & punctuation, _rstrip(out) + text, out + text))))


def _write(gaps, final, deleted, before, after):
    """protected_spans._write: final [M] the pieces' texts, deleted [M] the ones to leave out."""
    def body(i, out, was_deleted):
        out = _join(out, gaps[i], was_deleted)
        written = _join(out + before[i], final[i], was_deleted) + after[i]
        return i + 1, tf.where(deleted[i], out, written), deleted[i]

    _, out, was_deleted = tf.while_loop(lambda i, *_: i < tf.size(final), body,
                                        [tf.constant(0), tf.constant(""), tf.constant(False)])
    out = _join(out, gaps[-1], was_deleted)
    return tf.where(was_deleted, _rstrip(out), out)


def _append_missing(out, appended, spaces):
    """protected_spans._append_missing (appended [a], a > 0, and the spaces before each)."""
    closing = tf.strings.regex_full_match(appended, "(?s)</.*")
    glue_each = tf.where((_range(tf.size(appended)) > 0) & ~closing, spaces, "")
    addition = tf.strings.reduce_join(glue_each + appended)
    glue = tf.where(closing[0], "", spaces[0])
    out = _rstrip(out)
    final = tf.strings.regex_replace(out, r"(?s)\A.*?([.!?:]*)\z", r"\1")
    body_all = tf.strings.regex_replace(out, r"[.!?:]+\z", "")
    body = _rstrip(body_all)
    with_final = tf.where(tf.equal(body, ""), addition + out, body + glue + addition + final)
    return tf.where(tf.equal(out, ""), addition,
                    tf.where(tf.not_equal(final, "") & tf.not_equal(body_all, ""), with_final,
                             out + glue + addition))


def _clean_or_repaired(src, text, kinds):
    """protected_spans._clean_or_repaired: (clean, the text repaired once if not clean)."""
    gaps, pieces, loose = graph_finding.segment(text, kinds, src["known"])
    size = tf.size(pieces)
    same = tf.equal(pieces[:, None], pieces[None, :])
    need = _count_in(pieces, src["spans"])
    assigned = _rank(tf.ones([size], tf.bool), same) < need           # 1. the source's own
    new = tf.where(assigned, pieces, "")
    movable = tf.strings.regex_full_match(new, _MOVABLE)
    bound_texts = tf.boolean_mask(new, assigned & ~movable)
    no_deficit = tf.equal(tf.reduce_sum(tf.cast(assigned, tf.int32)), tf.size(src["spans"]))
    clean = (no_deficit & tf.reduce_all(assigned | _prose(src, pieces, loose, assigned))
             & tf.equal(tf.size(bound_texts), tf.size(src["order"]))
             & tf.reduce_all(tf.equal(bound_texts, src["order"][:tf.size(bound_texts)])))

    def repaired():
        def claims():
            a, n = _claim(src, assigned, new, _key(pieces), src["distinct_key"],
                          tf.ones([size], tf.bool))                   # 2. mangled copies
            shapes = _shape(pieces)
            return _claim(src, a, n, shapes, src["distinct_shape"],
                          ~loose & tf.not_equal(shapes, ""))          # 3. the same form

        a, n = tf.cond(no_deficit, lambda: (assigned, new), claims)
        prose = _prose(src, pieces, loose, a)                         # 4. prose, deletions
        bound = tf.cast(tf.where(a & ~tf.strings.regex_full_match(n, _MOVABLE))[:, 0], tf.int32)
        n, before, after, tail = _place(src, bound, n, size)          # 5. order, placing
        # the last occurrences of a missing movable span are missing; bound ones left: the tail
        spans, movable_source = src["spans"], src["movable"]
        count = _count_in(spans, tf.boolean_mask(n, a))
        same_source = tf.equal(spans[:, None], spans[None, :])
        later = _range(tf.size(spans))[None, :] > _range(tf.size(spans))[:, None]
        from_end = tf.reduce_sum(tf.cast(same_source & later, tf.int32), axis=1)
        missing = _count_in(spans, spans) - count
        bound_j = tf.cumsum(tf.cast(~movable_source, tf.int32), exclusive=True)
        in_tail = tf.gather(tf.concat([tail, [False]], axis=0),
                            tf.minimum(bound_j, tf.size(tail)))
        take = tf.where(movable_source, from_end < missing, in_tail)
        appended = tf.boolean_mask(spans, take)
        spaces = tf.boolean_mask(src["space_before"], take)
        final = tf.where(prose, pieces, n)
        out = _write(gaps, final, ~a & ~prose, before, after)
        return tf.cond(tf.size(appended) > 0, lambda: _append_missing(out, appended, spaces),
                       lambda: out)

    return clean, tf.cond(clean, lambda: text, repaired)


def _repair_hypotheses(source, outputs, kinds):
    """One source and its hypotheses [K]: the source's spans are found once for all of them."""
    src = _source(source, kinds)

    def repair_one(output):
        # protected_spans.restore's rounds: a repair, checked, at most ROUNDS times, then a last
        # check; what is still not clean gives the source back
        def body(round_, done, text):
            clean, repaired = _clean_or_repaired(src, text, kinds)
            keep = clean | tf.equal(round_, ps.ROUNDS)
            return round_ + 1, clean, tf.where(keep, text, repaired)

        text = tf.strings.regex_replace(output, graph_finding.MARKS, "")
        _, done, text = tf.while_loop(lambda round_, done, _: ~done & (round_ <= ps.ROUNDS),
                                      body, [tf.constant(0), tf.constant(False), text])
        result = tf.where(done & ~src["copied"], text, src["source"])
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
