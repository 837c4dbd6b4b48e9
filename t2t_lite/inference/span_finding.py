"""Protected spans found in a line: printf specifiers, brace fields and markup, then code-like text
(code_spans.py) outside them (pure text, no TensorFlow). protected_spans.py holds the --protect
setting and the repair.

    find_spans(text, kinds)      the protected spans of a line, in order, non-overlapping
    constraint_phrases(spans)    one target phrase per occurrence, for constrained search
    scan(...)                    find_spans for checked kinds, as the repair reads an output

The patterns here are also rewritten for RE2 by graph_span_finding.py, inside exported
SavedModels.

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
import bisect
import functools
import re
from typing import NamedTuple

from t2t_lite.inference import code_spans

FORMAT_KINDS = ("printf", "brace", "markup")
KINDS = FORMAT_KINDS + code_spans.CODE_KINDS

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
# so that graph_span_finding.py, whose RE2 has no lookahead, can check the next character itself.
_PRINTF_SPACE_FLAG = r"%(?:[1-9]\d*\$)?[-+#0'I]* [-+ #0'I]*\d*[di]"
_PRINTF = f"(?:{_PRINTF_PLAIN}|{_PRINTF_SPACE_FLAG}(?![^\\W_]))"
_BRACE_FIELD = (
    r"\{\{|\}\}"
    r"|\{(?:\d+|[A-Za-z_]\w*)?(?:\.[A-Za-z_]\w*|\[[^\[\]{}\s]+\])*(?:![rsa])?"
    r"(?::(?:.?[<>=^])?(?:[^{}\s]|\{\w*\})*)?\}")
_BRACE = _BRACE_FIELD + r"|[{}]"  # a stray brace is a span too: str.format fails on it
_ENTITY = r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6});"
_TAG = re.compile(
    r"<(?P<close>/)?(?P<name>[A-Za-z][\w:.-]*)"
    r"(?P<attrs>(?:\s+[A-Za-z_:][\w:.-]*(?:\s*=\s*(?:\"[^\"<>]*\"|'[^'<>]*'|[^\s\"'<>=`]+))?)*)"
    r"\s*(?P<self>/)?>")
# Only these lone: "<link>", "<source>", "<base>", "<input>" are usage metavariables in catalogs.
_VOID_ELEMENTS = frozenset(("br", "hr", "wbr"))
_ATTRIBUTE_VALUE = re.compile(r"=")
_POSITIONAL = re.compile(r"^%[1-9]\d*\$")


class Span(NamedTuple):
    start: int
    end: int
    text: str
    kind: str
    movable: bool


def checked_kinds(kinds):
    kinds = frozenset(kinds)
    unknown = kinds - set(KINDS)
    if unknown:
        raise ValueError(f"unknown protected-span kinds {sorted(unknown)}; known: {KINDS}")
    return kinds


@functools.lru_cache(maxsize=32)
def _pattern(kinds, stray=True):
    """One regex for the kinds' spans other than tags (tags need a second look, see _tags);
    stray=False leaves out the stray braces (the repair finds those with the loose pieces)."""
    parts = []
    if "printf" in kinds:
        parts.append(f"(?P<printf>{_PRINTF})")
    if "brace" in kinds:
        parts.append(f"(?P<brace>{_BRACE if stray else _BRACE_FIELD})")
    if "markup" in kinds:
        parts.append(f"(?P<markup>{_ENTITY})")
    return re.compile("|".join(parts)) if parts else None


def is_movable(text, kind):
    """Order-bound: unnumbered printf, auto-numbered brace fields, tags and <placeholders>."""
    if kind == "printf":
        return text == "%%" or text.startswith("%(") or bool(_POSITIONAL.match(text))
    if kind == "brace":
        if text in ("{{", "}}", "{", "}"):
            return True
        return text[1:2].isalnum() or text[1:2] == "_"  # {0}, {name}; {} and {:>10} are not
    # markup: entities move, tags keep their source order; so do <placeholders>; code moves
    return not text.startswith("<")


def _tags(text, known_tags=frozenset()):
    """(start, end, text) of the tags to protect (module docstring), plus any in known_tags."""
    found = list(_TAG.finditer(text))
    closed = {m["name"] for m in found if m["close"]}
    return [(m.start(), m.end(), m[0]) for m in found
            if m["close"] or m["self"] or m[0] in known_tags
            or _ATTRIBUTE_VALUE.search(m["attrs"]) or m["name"].lower() in _VOID_ELEMENTS
            or m["name"] in closed]


def scan(text, kinds, known_tags=frozenset(), stray=True):
    """find_spans for checked kinds; known_tags: tags protected although they would not be
    (the source's, when an output is read); stray=False: without the stray braces."""
    spans = _format_spans(text, kinds, known_tags, stray)
    code = kinds & frozenset(code_spans.CODE_KINDS)
    return _with_code_spans(text, spans, code) if code else spans


def _with_code_spans(text, spans, kinds):
    """spans with the code-like spans of `kinds` found outside them, in order: the text is read
    with each span one code_spans.MASK (graph_span_finding does the same)."""
    pieces, starts, masked_starts, pos, length = [], [], [], 0, 0
    for span in spans + [None]:
        piece = text[pos:len(text) if span is None else span.start]
        starts.append(pos)
        masked_starts.append(length)
        pieces.append(piece)
        length += len(piece) + 1
        if span is not None:
            pos = span.end
    found = []
    for start, end, found_text, kind in code_spans.find(code_spans.MASK.join(pieces), kinds):
        k = bisect.bisect_right(masked_starts, start) - 1
        at = starts[k] + start - masked_starts[k]
        found.append(Span(at, at + end - start, found_text, kind, is_movable(found_text, kind)))
    return sorted(spans + found)


def _format_spans(text, kinds, known_tags, stray):
    spans = []
    pattern = _pattern(kinds, stray)
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
        spans.append(Span(match.start(), match.end(), match[0], kind, is_movable(match[0], kind)))
        pos = match.end()


def find_spans(text, kinds):
    """The protected spans of `text` for `kinds` (a subset of KINDS), in order, non-overlapping."""
    return scan(text, checked_kinds(kinds))


def constraint_phrases(spans):
    """Each span's text once per occurrence, in source order: positive constraints for the search."""
    return [span.text for span in spans]
