"""Protected spans of a source line: printf specifiers, brace fields and markup, found and restored.

What the user fixed is never rewritten by the model (DESIGN.md, Conventions): a format specifier or
a tag comes out byte for byte. This module is the pure-text part of that promise (no TensorFlow):

    find_spans(text, kinds)             the protected spans of a line, in order, non-overlapping
    constraint_phrases(spans)           one target phrase per occurrence, for constrained search
    kept_exactly(source, out, kinds)    does the output keep every span exactly?
    restore(source, out, kinds)         a deterministic repair after any search: always kept_exactly
    parse_setting / resolve             the --protect flag and what "auto" means for a problem/entry

The rules (issue 43, section 3):
  - every protected span appears in the output exactly as often as in the source, byte for byte,
    and the output has no protected span the source lacks;
  - the order-bound spans appear in the same relative order as in the source (one sequence over
    all kinds). Order-bound: unnumbered printf (`%s`, `%*d`: their arguments are consumed in
    order), auto-numbered brace fields (`{}`, `{:>10}`: the same) and tags (kept in source order,
    which keeps their balance and nesting exactly as in the source). Movable: positional printf
    (`%1$s`), named printf (`%(name)s`), named or numbered brace fields (`{0}`, `{name!r}`),
    `%%`, `{{`, `}}`, stray braces and entities.

What counts as a printf directive follows gettext's format-c.c (what `msgfmt --check-format`
parses for c-format): `%`, an optional `n$`, flags `-+ #0'I`, a width (`n`, `*`, `*n$`), a
precision, a size (`hh h l ll L q j z Z t`, MS `I32 I64`), and a conversion `diouxXeEfFgGaAcCsSpnm`
or a `<PRIu64>`-style inttypes macro; plus `%%` and Python's `%(name)s` (and `%r`). One deliberate
difference: msgfmt also reads `50% of` as `% o` (space flag, octal) and `100% sure` as `% s`, which
in real catalogs are prose (c-format catalogs write `%%`). Here a space flag counts only before
`d`/`i` with a width optional and no letter or digit right after the conversion (`% d`, `% 5i`),
so prose percent signs are never protected (nor forced into a translation), and "% s" in an output
is read as a mangled `%s`, which restore repairs.

Markup: closing tags, self-closing tags, tags with an attribute value,
`<br>`, `<hr>`, `<wbr>`
and opening tags whose closing tag is in the same line. A lone `<file>` is a usage metavariable,
which translators translate ("<Datei>"), so it is not protected. Entities: `&amp;`, `&#160;`,
`&#x1F600;`. Brace fields follow Python's str.format (`{}`, `{0}`, `{name.attr[0]!r:>10}`);
`{{`, `}}` and a stray `{` or `}` are protected too, since str.format fails on a stray one.
"""
import collections
import functools
import re
from typing import NamedTuple

from t2t_lite.errors import UserError

KINDS = ("printf", "brace", "markup")

_SIZE = r"(?:hh|h|ll|l|L|q|j|z|Z|t|I64|I32)?"
_CONVERSION = r"(?:[diouxXeEfFgGaAcCsSpnmr]|<PRI[A-Za-z0-9_]+>)"
_PRINTF_PLAIN = (
    r"%(?:"
    r"%"                                                            # %% : a literal percent
    r"|\([A-Za-z_][\w.-]*\)[-+ #0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlL]?[diouxXeEfFgGcrsa]"  # %(n)s
    r"|(?:[1-9]\d*\$)?[-+#0'I]*(?:\d+|\*(?:[1-9]\d*\$)?)?"           # n$, flags, width
    r"(?:\.(?:\d+|\*(?:[1-9]\d*\$)?)?)?" + _SIZE + _CONVERSION +     # precision, size, conversion
    r")")
# The space flag (% d, % 5i), only where no letter or digit follows: the lookahead is kept apart
# so that graph_spans.py, whose RE2 has no lookahead, can check the next character itself.
_PRINTF_SPACE_FLAG = r"%(?:[1-9]\d*\$)?[-+#0'I]* [-+ #0'I]*\d*[di]"
_PRINTF = f"(?:{_PRINTF_PLAIN}|{_PRINTF_SPACE_FLAG}(?![^\\W_]))"
_BRACE = (
    r"\{\{|\}\}"
    r"|\{(?:\d+|[A-Za-z_]\w*)?(?:\.[A-Za-z_]\w*|\[[^\[\]{}\s]+\])*(?:![rsa])?"
    r"(?::(?:.?[<>=^])?(?:[^{}\s]|\{\w*\})*)?\}"
    r"|[{}]")
_ENTITY = r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});"
_TAG = re.compile(
    r"<(?P<close>/)?(?P<name>[A-Za-z][\w:.-]*)"
    r"(?P<attrs>(?:\s+[A-Za-z_:][\w:.-]*(?:\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s\"'<>=`]+))?)*)"
    r"\s*(?P<self>/)?>")
# Only these lone: "<link>", "<source>", "<base>", "<input>" are usage metavariables in catalogs.
_VOID_ELEMENTS = frozenset(("br", "hr", "wbr"))
_ATTRIBUTE_VALUE = re.compile(r"=")
_POSITIONAL = re.compile(r"^%[1-9]\d*\$")

# Loose forms of a span, for mangled copies in an output: "% s", "%S", "{ name }", "< / b >".
_LOOSE = re.compile(
    r"%\s*(?:\(\s*[^()\s]+\s*\)|[1-9]\d*\s*\$)?[-+#0' ]*\d*(?:\.\d*)?\s*[hlLqjzt]*\s*[A-Za-z]"
    r"|\{[^{}\n]{0,60}\}|<\s*/?\s*[A-Za-z][^<>\n]{0,200}>|&\s*#?\s*\w+\s*;")
_SPACE = re.compile(r"\s+")
_FINAL_PUNCTUATION = re.compile(r"[.!?:]+$")
_NO_SPACE_BEFORE = ".,;:!?)]}»"
# Source text binding two specifiers together ("%s:%d", "%d.%d", "%s/%s"): kept with a missing one.
_TIGHT_GAP = re.compile(r"[^\w\s%{}<>&]{0,3}")


class Span(NamedTuple):
    start: int
    end: int
    text: str
    kind: str
    movable: bool


class Restored(NamedTuple):
    text: str
    changed: bool


# ----------------------------------------------------------------------------------- the flag

def parse_setting(value):
    """The --protect flag's value: "auto", "none", or a frozenset of KINDS (a comma list)."""
    text = (value or "").strip()
    if text in ("auto", "none"):
        return text
    kinds = [item.strip() for item in text.split(",")]
    if not text or any(kind not in KINDS for kind in kinds):
        raise UserError(f"--protect={value}: expected auto, none, or a comma list of "
                        f"{', '.join(KINDS)} (e.g. --protect=printf,markup)")
    return frozenset(kinds)


# PO format flags -> the kind that protects them. Flags for formats none of the kinds covers
# (qt-format's %1, sh-format's $VAR, boost-format's %1%) leave only markup on.
_PRINTF_FLAGS = frozenset(f"{lang}-format" for lang in (
    "c", "objc", "python", "php", "perl", "awk", "lua", "javascript", "tcl", "ruby",
    "gcc-internal", "gfc-internal", "java-printf", "object-pascal", "elisp", "librep"))
_BRACE_FLAGS = frozenset(f"{lang}-format" for lang in (
    "python-brace", "perl-brace", "java", "csharp", "rust"))


def resolve(setting, problem_name=None, po_flags=(), *, po=None):
    """The frozenset of kinds to protect for a --protect setting (parsed or not).

    "auto": every kind for the gettext problems (their data is software messages) and for PO input.
    A PO entry's flags narrow it: c-format / python-format (and the other printf-style formats) ->
    printf, python-brace-format (java-format, ...) -> brace, plus markup (which only matters when
    the text has tags); "no-c-format" and the like switch their kind off; an entry without format
    flags keeps every kind. `po` says whether this is PO input; left None it is inferred: PO when
    entry flags are given or when there is no problem (the PO tool).
    """
    if isinstance(setting, str):
        setting = parse_setting(setting)
    if setting == "none":
        return frozenset()
    if setting != "auto":
        return frozenset(setting)
    flags = frozenset(po_flags or ())
    if po is None:
        po = bool(flags) or problem_name is None
    if not po:
        if problem_name and "gettext" in problem_name:
            return frozenset(KINDS)
        # Other problems (WMT news, parsing, algorithmic) have no format strings in their data: a
        # "%" or "<" there is prose or math, and forcing it byte for byte into the output would
        # only cost search time and could override a correct translation ("50 %" in German).
        return frozenset()
    positive = {kind for kind, known in (("printf", _PRINTF_FLAGS), ("brace", _BRACE_FLAGS))
                if flags & known}
    if any(flag.endswith("-format") and not flag.startswith("no-") for flag in flags):
        kinds = positive | {"markup"}
    else:
        kinds = set(KINDS)
    for kind, known in (("printf", _PRINTF_FLAGS), ("brace", _BRACE_FLAGS)):
        if kind not in positive and any(f"no-{flag}" in flags for flag in known):
            kinds.discard(kind)
    return frozenset(kinds)


# ------------------------------------------------------------------------------- finding spans

def _kinds(kinds):
    kinds = frozenset(kinds)
    unknown = kinds - set(KINDS)
    if unknown:
        raise ValueError(f"unknown protected-span kinds {sorted(unknown)}; known: {KINDS}")
    return kinds


@functools.lru_cache(maxsize=16)
def _pattern(kinds):
    """One regex for the kinds' spans other than tags (tags need a second look, see _tags)."""
    parts = []
    if "printf" in kinds:
        parts.append(f"(?P<printf>{_PRINTF})")
    if "brace" in kinds:
        parts.append(f"(?P<brace>{_BRACE})")
    if "markup" in kinds:
        parts.append(f"(?P<markup>{_ENTITY})")
    return re.compile("|".join(parts)) if parts else None


def _movable(text, kind):
    if kind == "printf":
        return text == "%%" or text.startswith("%(") or bool(_POSITIONAL.match(text))
    if kind == "brace":
        if text in ("{{", "}}", "{", "}"):
            return True
        return text[1:2].isalnum() or text[1:2] == "_"  # {0}, {name}; {} and {:>10} are not
    return not text.startswith("<")  # markup: entities move, tags keep their source order


def _tags(text, known_tags=frozenset()):
    """(start, end, text) of the tags to protect (module docstring), plus any in known_tags."""
    found = list(_TAG.finditer(text))
    closed = {m["name"] for m in found if m["close"]}
    return [(m.start(), m.end(), m[0]) for m in found
            if m["close"] or m["self"] or m[0] in known_tags
            or _ATTRIBUTE_VALUE.search(m["attrs"]) or m["name"].lower() in _VOID_ELEMENTS
            or m["name"] in closed]


def _scan(text, kinds, known_tags=frozenset()):
    spans = []
    pattern = _pattern(kinds)
    tags = _tags(text, known_tags) if "markup" in kinds and "<" in text else []
    pos, next_tag = 0, 0
    while True:
        match = pattern.search(text, pos) if pattern is not None else None
        while next_tag < len(tags) and tags[next_tag][0] < pos:
            next_tag += 1
        if next_tag < len(tags) and (match is None or tags[next_tag][0] < match.start()):
            start, end, tag = tags[next_tag]
            spans.append(Span(start, end, tag, "markup", False))
            pos = end
            continue
        if match is None:
            return spans
        kind = match.lastgroup
        spans.append(Span(match.start(), match.end(), match[0], kind, _movable(match[0], kind)))
        pos = match.end()


def find_spans(text, kinds):
    """The protected spans of `text` for `kinds` (a subset of KINDS), in order, non-overlapping."""
    return _scan(text, _kinds(kinds))


def constraint_phrases(spans):
    """Each span's text once per occurrence, in source order: positive constraints for the search."""
    return [span.text for span in spans]


# ------------------------------------------------------------------------- checking and repair

def _known_tags(spans):
    return frozenset(span.text for span in spans if span.text.startswith("<"))


def _agrees(source_spans, output_spans):
    return (collections.Counter(s.text for s in source_spans)
            == collections.Counter(s.text for s in output_spans)
            and [s.text for s in source_spans if not s.movable]
            == [s.text for s in output_spans if not s.movable])


def kept_exactly(source, translation, kinds):
    """True when every protected span of source is in translation exactly as often, byte for byte,
    with no extra ones, and the order-bound ones (tags included) in the source's relative order."""
    kinds = _kinds(kinds)
    source_spans = _scan(source, kinds)
    return _agrees(source_spans, _scan(translation, kinds, _known_tags(source_spans)))


def _key(text):
    return _SPACE.sub("", text).lower()


def _lcs_pairs(a, b):
    """Index pairs (i, j) of a longest common subsequence of sequences a and b (ties: earliest)."""
    n, m = len(a), len(b)
    table = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            table[i][j] = (table[i + 1][j + 1] + 1 if a[i] == b[j]
                           else max(table[i + 1][j], table[i][j + 1]))
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        if a[i] == b[j]:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif table[i + 1][j] >= table[i][j + 1]:
            i += 1
        else:
            j += 1
    return pairs


def _shape(text):
    """The form of a span that another may stand in for: a printf conversion, a brace field, an
    opening, closing or self-closing tag, an entity; None for escapes and stray braces."""
    if text.startswith("%"):
        return None if text == "%%" else "%" + text[-1]
    if text.startswith("{"):
        return None if text in ("{", "{{") else "{}"
    if text.startswith("</"):
        return "</>"
    if text.startswith("<"):
        return "<>" if _is_opening_tag(text) else "<x/>"
    if text.startswith("&"):
        return "&;"
    return None


def _is_tag(text):
    return text.startswith("<")


def _is_opening_tag(text):
    return text.startswith("<") and not text.startswith("</") and not text.endswith("/>")


def _repair(source, source_spans, translation, kinds):
    """One round of restore's repair: the translation with its spans renamed, dropped, reordered
    and added so that they agree with the source's (restore checks the result, and repeats).

    Each span of the output is an item [start, end, text]: the text it is written as, or None to
    drop it. Items are shared by the steps below, which change their texts in place; the
    insertions of step 3 are keyed by id(item).
    """
    need = collections.Counter(s.text for s in source_spans)
    movable_of = {s.text: s.movable for s in source_spans}
    spans = _scan(translation, kinds, _known_tags(source_spans))
    have = collections.Counter(s.text for s in spans)
    deficit = {text: n - have[text] for text, n in need.items() if n > have[text]}
    items = _claim_spans(translation, source_spans, spans, need, deficit)
    _drop_surplus(items, source_spans, need, deficit, movable_of)
    bound = [item for item in items if item[2] is not None and not movable_of[item[2]]]
    insert_before, insert_after, inserted, tail = _place_order_bound(source, source_spans, bound)
    appended = _missing_at_end(source_spans, need, movable_of, items, inserted, tail)
    out = _write_items(translation, items, insert_before, insert_after)
    return _append_missing(out, appended) if appended else out


def _claim_spans(translation, source_spans, spans, need, deficit):
    """Step 1: every span of the output as [start, end, text it should have or None to drop].

    A span the source lacks may be a mangled copy ("%S" for "%s") of one the output misses: it is
    replaced in place; loose forms ("% s", "{ name }") are found the same way. `deficit` (text ->
    how many the output misses) counts down as missing spans are claimed.
    """
    by_key = collections.defaultdict(list)
    for s in source_spans:
        if s.text not in by_key[_key(s.text)]:
            by_key[_key(s.text)].append(s.text)

    def mangled_of(text):
        for wanted in by_key.get(_key(text), ()):
            if deficit.get(wanted, 0) > 0:
                deficit[wanted] -= 1
                return wanted
        return None

    items = [[s.start, s.end, s.text if s.text in need else None] for s in spans]
    if any(deficit.values()):
        for m in _LOOSE.finditer(translation):
            inside = [item for item in items if item[0] < m.end() and m.start() < item[1]]
            if any(item[2] is not None or item[0] < m.start() or item[1] > m.end()
                   for item in inside):
                continue
            wanted = mangled_of(m[0])
            if wanted is not None:
                items = [item for item in items if item not in inside]
                items.append([m.start(), m.end(), wanted])
        items.sort()
        for item in items:
            if item[2] is None:
                item[2] = mangled_of(translation[item[0]:item[1]])
        # Then a span the source lacks takes the place of a missing one of the same form:
        # "%33d" for "%3d", "%s" for "%.*s", "<i>" for "<b>" (the order is put right below).
        for item in items:
            if item[2] is None:
                item[2] = _missing_of_shape(_shape(translation[item[0]:item[1]]), source_spans,
                                            deficit)
    return items


def _missing_of_shape(shape, source_spans, deficit):
    """The first source span still missing (deficit) with this _shape, claimed; or None."""
    for s in source_spans:
        if deficit.get(s.text, 0) > 0 and _shape(s.text) == shape:
            deficit[s.text] -= 1
            return s.text
    return None


def _drop_surplus(items, source_spans, need, deficit, movable_of):
    """Step 2: too many of a text: drop the surplus (item text None). Order-bound ones outside a
    longest common subsequence with the source's order go first, then the latest."""
    order = [s.text for s in source_spans if not s.movable]
    bound = [item for item in items if item[2] is not None and not movable_of[item[2]]]
    in_lcs = {i for i, _ in _lcs_pairs([item[2] for item in bound], order)}
    count = collections.Counter(item[2] for item in items if item[2] is not None)
    ranked = ([item for i, item in enumerate(bound) if i not in in_lcs][::-1]
              + [item for item in items[::-1] if item[2] is not None])
    for item in ranked:
        if item[2] is not None and count[item[2]] > need[item[2]]:
            count[item[2]] -= 1
            # a surplus "%s" stands in for a missing "%8s" where it is
            item[2] = _missing_of_shape(_shape(item[2]), source_spans, deficit)
            if item[2] is not None:
                count[item[2]] += 1


def _place_order_bound(source, source_spans, bound):
    """Step 3: the order-bound slots (`bound`: the items kept with an order-bound text).

    Only drops (what is left is in the source's order): a missing one goes right before the next
    slot that follows it in the source. Otherwise the k-th slot becomes the source's k-th
    order-bound span. Either way the rest go to the end.

    Returns (insert_before, insert_after: id(slot) -> what to write just before / just after it,
    inserted: a Counter of the spans in them, tail: the order-bound texts left for the end).
    """
    order = [s.text for s in source_spans if not s.movable]
    pairs = _lcs_pairs([item[2] for item in bound], order)
    insert_before, insert_after = collections.defaultdict(list), collections.defaultdict(list)
    inserted = collections.Counter()
    bound_source = [s for s in source_spans if not s.movable]

    def gap(j):  # the source's text between its order-bound spans j-1 and j, if it is tight
        between = source[bound_source[j - 1].end:bound_source[j].start]
        return between if _TIGHT_GAP.fullmatch(between) else None

    if len(pairs) != len(bound):
        for item, text in zip(bound, order):
            item[2] = text
        return insert_before, insert_after, inserted, order[len(bound):]
    matched = {j: i for i, j in pairs}
    after = {j: bound[i] for j, i in matched.items()}  # j -> the slot j is written at/after
    tail = []
    for j, text in enumerate(order):
        if j in matched:
            continue
        earlier = max((k for k in matched if k < j), default=None)
        later = [matched[k] for k in range(j + 1, len(order)) if k in matched]
        if j - 1 in after and gap(j) is not None:
            # tight to the span before it in the source: "%s:%d" -> "%s" + ":%d"
            insert_after[id(after[j - 1])].append(gap(j) + text)
            after[j] = after[j - 1]
        elif (earlier is not None and not _is_opening_tag(order[earlier])
                and all(t.startswith("</") for t in order[earlier + 1:j + 1])):
            # a closing tag closes right after the span before it ("<b>%s" -> "<b>%s</b>")
            insert_after[id(bound[matched[earlier]])].append(text)
        elif later and j + 1 in matched and gap(j + 1) is not None:
            insert_before[id(bound[later[0]])].append(text + gap(j + 1))
        elif later:
            slot = bound[later[0]]
            tight = _is_tag(text) or _is_tag(slot[2])
            insert_before[id(slot)].append(text if tight else text + " ")
        else:
            tail.append(text)
            continue
        inserted[text] += 1
    return insert_before, insert_after, inserted, tail


def _missing_at_end(source_spans, need, movable_of, items, inserted, tail):
    """Step 4: missing movable spans (and the order-bound tail) in source order, for the end."""
    count = collections.Counter(item[2] for item in items if item[2] is not None)
    count.update(inserted)
    missing_movable = collections.Counter()
    for text, n in need.items():
        if movable_of[text] and n > count[text]:
            missing_movable[text] = n - count[text]
    appended = []
    late = collections.Counter()  # the last n occurrences of a missing movable text are the ones
    for s in reversed(source_spans):
        if s.movable and late[s.text] < missing_movable[s.text]:
            late[s.text] += 1
            appended.append((s.start, s.text))
    bound_spans = [s for s in source_spans if not s.movable]
    for s in bound_spans[len(bound_spans) - len(tail):]:
        appended.append((s.start, s.text))
    return [text for _, text in sorted(appended)]


def _write_items(translation, items, insert_before, insert_after):
    """Step 5: the translation with its items written out (and step 3's insertions around them),
    tidying the whitespace a deletion leaves behind."""
    out, pos, deleted = "", 0, False
    for item in items:
        start, end, text = item
        out = _join(out, translation[pos:start], deleted)
        if text is None:
            deleted = True
        else:
            out += "".join(insert_before.get(id(item), ()))
            out = _join(out, text, deleted)
            out += "".join(insert_after.get(id(item), ()))
            deleted = False
        pos = end
    out = _join(out, translation[pos:], deleted)
    return out.rstrip() if deleted else out


def _append_missing(out, appended):
    """`out` with the spans still missing added at its end, before final . ! ? : if any."""
    addition = "".join((" " if i and not text.startswith("</") else "") + text
                       for i, text in enumerate(appended))
    glue = "" if appended[0].startswith("</") else " "
    out = out.rstrip()
    final = _FINAL_PUNCTUATION.search(out)
    if not out:
        return addition
    if final and final.start() > 0:
        body = out[:final.start()].rstrip()
        return f"{body}{glue}{addition}{out[final.start():]}" if body else f"{addition}{out}"
    return f"{out}{glue}{addition}"


def _join(out, text, after_deletion):
    """out + text; right after a deleted span, no double space and no new space before punctuation."""
    if not after_deletion or not text:
        return out + text
    if not out:
        return text.lstrip()
    if out[-1].isspace() and text[0].isspace():
        return out + text.lstrip()
    if out[-1].isspace() and text[0] in _NO_SPACE_BEFORE:
        return out.rstrip() + text
    return out + text


def restore(source, translation, kinds):
    """The translation with its protected spans repaired so that kept_exactly(...) holds.

    Spans the source lacks (or has fewer of) are dropped, mangled copies ("% s", "%S") are
    restored in place, the order-bound spans are put back into the source's order, and missing
    spans are appended (before final . ! ? :). An output that already keeps its spans is returned
    unchanged (changed=False), so restore is idempotent and restore(s, s) is s. Should a repair
    ever create a new span (a deletion joining "%" and "d"), it is repaired again, and after three
    rounds the source itself is returned: the one text that always keeps its spans.
    """
    kinds = _kinds(kinds)
    source_spans = _scan(source, kinds)
    text = translation
    for _ in range(3):
        if _agrees(source_spans, _scan(text, kinds, _known_tags(source_spans))):
            return Restored(text, text != translation)
        text = _repair(source, source_spans, text, kinds)
    if _agrees(source_spans, _scan(text, kinds, _known_tags(source_spans))):
        return Restored(text, text != translation)
    return Restored(source, source != translation)
