"""Protected spans of a source line: printf specifiers, brace fields and markup, found and restored.

What the user fixed is never rewritten by the model (DESIGN.md, Conventions): a format specifier or
a tag comes out byte for byte. This module and span_finding.py are the pure-text part of that
promise (no TensorFlow); this one holds the --protect setting and the repair:

    kept_exactly(source, out, kinds)    does the output keep every span exactly?
    restore(source, out, kinds)         a deterministic repair after any search: always kept_exactly
    parse_setting / resolve             the --protect flag and what "auto" means for a problem/entry

Finding them is span_finding.py's: find_spans(text, kinds) (a line's protected spans, in order,
non-overlapping), constraint_phrases(spans) (one target phrase per occurrence, for constrained
search), KINDS and Span.

The rules (issue 43, section 3):
  - every protected span appears in the output exactly as often as in the source, byte for byte,
    and the output has no protected span the source lacks;
  - nor anything else that reads as a directive or a tag of the kinds (issue 51: a lone "%",
    "%z", "%(x)" without a conversion, "%<...", a stray brace, "</b" or "< b>"), unless the
    source has it too (a bare "%" as often as the source's prose percent signs);
  - the order-bound spans appear in the same relative order as in the source (one sequence over
    all kinds). Order-bound: unnumbered printf (`%s`, `%*d`: their arguments are consumed in
    order), auto-numbered brace fields (`{}`, `{:>10}`: the same) and tags (kept in source order,
    which keeps their balance and nesting exactly as in the source). Movable: positional printf
    (`%1$s`), named printf (`%(name)s`), named or numbered brace fields (`{0}`, `{name!r}`),
    `%%`, `{{`, `}}`, stray braces and entities.

What counts as a printf directive, a brace field or a tag: span_finding.py's docstring.
"""
import collections
import functools
import re
from typing import NamedTuple

from t2t_lite.errors import UserError
from t2t_lite.inference import code_spans
from t2t_lite.inference.span_finding import KINDS, Span, checked_kinds, is_movable, scan

# Loose pieces: what a reader (msgfmt, Python, str.format, a browser) would still take for a
# directive or a tag although it is no protected span. They are looked for only in the text
# between an output's protected spans (so they never hold one), and each is either a mangled copy
# of a missing span ("% s", "%S", "{ name }", "< / b >"), prose the source has too (a bare "%"),
# or a stray that the repair deletes ("%z", "%(x)" with no conversion, "%<Offset", a lone "{").
# A printf piece takes a conversion letter only where no letter or digit follows it ("% s," but
# not "% unbekannte"): the character after is matched too (RE2 has no lookahead) and given back.
_LOOSE_PRINTF = (
    r"(%(?:<\w*>?"                                               # %<PRIu64 fragments
    r"|\s*\([^()\n]*\)[-+#0']*\d*(?:\.\d*)?[hlLqjzZt]*"    # %(name) with no conversion
    r"|(?:[1-9]\d*\s*\$)?[-+#0']*(?:\d+|\*)?(?:\.(?:\d+|\*)?)?[hlLqjzZtI]*))"  # %, %z, %.0, %1$
    r"(?:( *[A-Za-z])([^\w%{}<&]|_|\Z))?")
_LOOSE_BRACE = r"(\{[^{}\n]*\}|[{}])"                           # { name }, a lone { or }
_LOOSE_MARKUP = (r"(</\s*[A-Za-z][\w:.-]*(?:\s*>)?"              # </b without >, </ b>
                 r"|<\s+/?\s*[A-Za-z][^<>\n]*>"                 # < b>, < / b >
                 r"|<[A-Za-z][\w:.-]*(?: [\w:.-]+)*>"          # a lone <A>, <file>
                 r"|&(?:\s+#?\s*\w+\s*|#?\s*\w+\s+|#\s+\w+\s*);)")  # & amp;, &amp ;
_LONE_TAG = re.compile(r"<[^\s/<>][^<>]*>")
_SPACE = re.compile(r"\s+")
_TRAILING_SPACE = re.compile(r"\s*\Z")
_LEADING_SPACE = re.compile(r"\s*")
_FINAL_PUNCTUATION = re.compile(r"[.!?:]+\Z")
_NO_SPACE_BEFORE = ".,;:!?)]}»"
# Source text binding two specifiers together ("%s:%d", "%d.%d", "%s/%s"): kept with a missing one.
_TIGHT_GAP = re.compile(r"[^\w\s%{}<>&]{0,3}")
# How many times restore repairs before it gives the source back (graph_spans does as many).
ROUNDS = 3


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


def resolve(setting, problem_name=None, *, po=None):
    """The frozenset of kinds to protect for a --protect setting (parsed or not).

    "auto": every kind for the gettext problems (their data is software messages) and for PO input
    (t2t-lite-po narrows it per entry by the entry's format flags: po/formats.protected_kinds).
    `po` says whether this is PO input; left None it is inferred: PO when there is no problem.
    """
    if isinstance(setting, str):
        setting = parse_setting(setting)
    if setting == "none":
        return frozenset()
    if setting != "auto":
        return frozenset(setting)
    if po is None:
        po = problem_name is None
    if po or (problem_name and "gettext" in problem_name):
        return frozenset(KINDS)
    # Other problems (WMT news, parsing, algorithmic) have no format strings in their data: a "%"
    # or "<" there is prose or math, and forcing it byte for byte into the output would only cost
    # search time and could override a correct translation ("50 %" in German).
    return frozenset()

# ------------------------------------------------------------------------- checking and repair
#
# One set of rules, which graph_spans.py implements again in TF string ops (a test holds the two
# equal on a table of hypotheses). An output is read as gaps of text and pieces between them
# (_segment): its protected spans, stray braces left out, and the loose pieces in the text between
# them (stray braces included). Then (_plan):
#   1. a piece that is one of the source's spans is kept, its first occurrences as many times as
#      the source has it;
#   2. for each span the output still misses (source order), a mangled copy takes its place: the
#      first free pieces that read the same without spaces and case ("% s", "%S", "{ name }");
#   3. then a free protected span of the same form ("%33d" for "%3d", "<i>" for "<b>");
#   4. a loose piece the source has too stays as prose (a bare "%" as often as the source's
#      prose percent signs); every other piece is deleted, with the spaces around it tidied;
#   5. if the kept order-bound spans are in the source's order, each missing one goes beside its
#      neighbours (tight to the span before it, "%s:%d"; a closing tag after the span it closes;
#      else before the next one); otherwise the k-th kept order-bound span becomes the source's
#      k-th; what has no place (and the missing movable spans) goes to the end, before . ! ? :
#      An added span is set off by the whitespace the source has beside it (a tab stays a tab),
#      else by a space.
# Only spaces (U+0020) are ever tidied away: tabs and other controls stay as they are.

def _known_tags(spans):
    return frozenset(span.text for span in spans if span.text.startswith("<"))


@functools.lru_cache(maxsize=16)
def _loose_pattern(kinds):
    """The loose pieces' regex for kinds, or None; with printf its last group is the character
    after the piece, matched to see that no letter follows (it belongs to the next gap)."""
    parts = [pattern for kind, pattern in (("brace", _LOOSE_BRACE), ("markup", _LOOSE_MARKUP),
                                           ("printf", _LOOSE_PRINTF)) if kind in kinds]
    return re.compile("|".join(parts)) if parts else None


def _segment(text, kinds, known_tags):
    """text -> (gaps [M + 1], pieces [M] of (text, loose)): the protected spans (stray braces
    left out) and, in the text between them, the loose pieces; gaps are the text around them."""
    loose = _loose_pattern(kinds)
    next_group = loose.groups if loose is not None and "printf" in kinds else None
    gaps, pieces, pos = [], [], 0
    spans = scan(text, kinds, known_tags, stray=False)
    for span in spans + [None]:
        segment = text[pos:len(text) if span is None else span.start]
        done = at = 0
        while loose is not None:
            m = loose.search(segment, at)
            if m is None:
                break
            end = m.end() - len(m[next_group] or "") if next_group else m.end()
            gaps.append(segment[done:m.start()])
            pieces.append((segment[m.start():end], True))
            done, at = end, m.end()
        gaps.append(segment[done:])
        if span is None:
            return gaps, pieces
        pieces.append((span.text, False))
        pos = span.end


def _prose_key(text):
    """What a loose piece of the source allows in the output: a percent sign with flag or digit
    characters after it ("50%", "10%-20%") allows any such one; a lone tag (a metavariable,
    "<file>") any lone tag ("<Datei>"); anything else itself."""
    if _LONE_TAG.fullmatch(text):
        return "<>"
    return "%" if re.fullmatch(r"%[-+#0'\d]*", text) else text


def _key(text):
    return _SPACE.sub("", text).lower()


def _shape(text):
    """The form of a span that another may stand in for: a printf conversion, a brace field, an
    opening, closing or self-closing tag (a <placeholder> too), an entity, a code-like kind
    ("path", "number", ...); None for escapes and stray braces."""
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
    return code_spans.kind_of(text)


def _is_code(text):
    """Is a protected piece code-like text (a URL, a number, ...)? An output may have its own."""
    return text[:1] not in "%{}<&"


def _is_tag(text):
    return text.startswith("<")


def _is_opening_tag(text):
    return text.startswith("<") and not text.startswith("</") and not text.endswith("/>")


class _Source(NamedTuple):
    spans: list          # its protected spans (Span)
    need: collections.Counter
    order: list          # the order-bound spans' texts
    gaps: list           # gaps[j]: the text between order-bound spans j - 1 and j (gaps[0] "")
    budget: collections.Counter  # _prose_key -> how many loose pieces the source has
    known_tags: frozenset
    space_before: list   # [k]: the whitespace right before span k in the source, else " "
    space_after: list    # [j]: the whitespace right after order-bound span j, else " "
    copied: bool         # a line to copy, not translate (code_spans.copied)


def _source(source, kinds):
    """The source as the repair reads it. Its spans are those of its own segmentation: the
    protected spans and the brace pieces between them (a stray "{", or "{a b}" as one piece,
    so that the source always reads as clean against itself); its other loose pieces are prose."""
    gaps, pieces = _segment(source, kinds, frozenset())
    spans, prose, pos, outside = [], [], 0, gaps[-1]  # outside: the text outside its spans
    for gap, (text, loose) in zip(gaps, pieces):
        pos += len(gap)
        outside += gap + (text if loose else "")
        if loose and text[0] not in "{}":
            prose.append(text)
        else:
            kind = "printf" if text[0] == "%" else "brace" if text[0] in "{}" else "markup"
            spans.append(Span(pos, pos + len(text), text, kind, is_movable(text, kind)))
        pos += len(text)
    need = collections.Counter(s.text for s in spans)
    bound = [s for s in spans if not s.movable]
    gaps = [""] + [source[a.end:b.start] for a, b in zip(bound, bound[1:])]
    budget = collections.Counter(_prose_key(text) for text in prose)
    ends = [0] + [s.end for s in spans]
    before = [_TRAILING_SPACE.search(source[end:s.start])[0] or " " for end, s in zip(ends, spans)]
    starts = [s.start for s in spans[1:]] + [len(source)]
    after = [_LEADING_SPACE.match(source[s.end:start])[0] or " "
             for s, start in zip(spans, starts) if not s.movable]
    return _Source(spans, need, [s.text for s in bound], gaps, budget, _known_tags(spans),
                   before, after,
                   code_spans.copied(source, not all(loose for _, loose in pieces), outside, kinds))


def _plan(src, pieces):
    """The repair's decisions for an output's pieces (the module's rules above): (clean, new,
    before, after, appended). clean: nothing to repair. new[i]: what piece i is written as (None:
    deleted); before/after[i]: spans inserted around it; appended: spans for the end."""
    texts = [text for text, _ in pieces]
    size = len(pieces)
    movable = {s.text: s.movable for s in src.spans}
    new, seen = [None] * size, collections.Counter()
    for i, text in enumerate(texts):                          # 1. the source's own spans
        if seen[text] < src.need[text]:
            new[i] = text
        seen[text] += 1
    deficit = collections.Counter(src.need)
    deficit.subtract(text for text in new if text is not None)

    def prose():                                              # 4. loose pieces the source has
        kept, used = [False] * size, collections.Counter()
        for i, (text, loose) in enumerate(pieces):
            if new[i] is None and loose:
                kept[i] = used[_prose_key(text)] < src.budget[_prose_key(text)]
                used[_prose_key(text)] += 1
            elif new[i] is None:  # code of the output's own ("zwei" -> "2") stays
                kept[i] = _is_code(text) and not src.need[text]
        return kept

    def bound_items():
        return [i for i, text in enumerate(new) if text is not None and not movable[text]]

    if not any(deficit.values()):
        kept = prose()
        if all(n is not None or k for n, k in zip(new, kept)) and \
                [new[i] for i in bound_items()] == src.order:
            return True, texts, None, None, []
    for same in (lambda i, t: _key(texts[i]) == _key(t),      # 2. mangled copies
                 lambda i, t: (not pieces[i][1] and _shape(t) is not None  # 3. the same form
                               and _shape(texts[i]) == _shape(t))):
        for text in list(src.need):
            for i in range(size):
                if deficit[text] > 0 and new[i] is None and same(i, text):
                    new[i] = text
                    deficit[text] -= 1
    kept = prose()
    before, after = [""] * size, [""] * size
    tail = _place(src, bound_items(), new, before, after)
    count = collections.Counter(text for text in new if text is not None)
    new = [texts[i] if kept[i] else text for i, text in enumerate(new)]
    late = collections.Counter()  # the last occurrences of a missing movable span are missing
    take = [False] * len(src.spans)
    for k in range(len(src.spans) - 1, -1, -1):
        s = src.spans[k]
        if s.movable and late[s.text] < src.need[s.text] - count[s.text]:
            late[s.text] += 1
            take[k] = True
    bound_index = [k for k, s in enumerate(src.spans) if not s.movable]
    for j in tail:
        take[bound_index[j]] = True
    return False, new, before, after, [(s.text, src.space_before[k])
                                       for k, s in enumerate(src.spans) if take[k]]


def _place(src, bound, new, before, after):
    """Step 5 for the kept order-bound pieces `bound` (indices into new): fills before/after (or
    renames new[i]) and returns the indices j of the order-bound spans left for the end."""
    order = src.order
    matched, j = {}, 0
    for i in bound:  # are they a subsequence of the source's order? (greedy, earliest)
        while j < len(order) and order[j] != new[i]:
            j += 1
        if j == len(order):
            for k, item in enumerate(bound):
                new[item] = order[k]
            return list(range(len(bound), len(order)))
        matched[j] = i
        j += 1
    tight = [j > 0 and _TIGHT_GAP.fullmatch(gap) is not None for j, gap in enumerate(src.gaps)]
    after_slot, tail = dict(matched), []
    for j, text in enumerate(order):
        if j in matched:
            continue
        earlier = max((k for k in matched if k < j), default=None)
        later = min((k for k in matched if k > j), default=None)
        if j - 1 in after_slot and tight[j]:
            # tight to the span before it in the source: "%s:%d" -> "%s" + ":%d"
            after[after_slot[j - 1]] += src.gaps[j] + text
            after_slot[j] = after_slot[j - 1]
        elif (earlier is not None and not _is_opening_tag(order[earlier])
                and all(t.startswith("</") for t in order[earlier + 1:j + 1])):
            # a closing tag closes right after the span before it ("<b>%s" -> "<b>%s</b>")
            after[matched[earlier]] += text
        elif later is not None and later == j + 1 and tight[j + 1]:
            before[matched[later]] += text + src.gaps[j + 1]
        elif later is not None:
            tags = _is_tag(text) or _is_tag(order[later])
            before[matched[later]] += text if tags else text + src.space_after[j]
        else:
            tail.append(j)
    return tail


def _write(gaps, new, before, after):
    """The output with its pieces written as planned, tidying the spaces a deletion leaves."""
    out, deleted = "", False
    for i, text in enumerate(new):
        out = _join(out, gaps[i], deleted)
        if text is None:
            deleted = True
        else:
            out = _join(out + before[i], text, deleted) + after[i]
            deleted = False
    out = _join(out, gaps[-1], deleted)
    return out.rstrip(" ") if deleted else out


def _append_missing(out, appended):
    """`out` with the spans still missing added at its end, before final . ! ? : if any.
    appended: (text, the whitespace before it in the source, or " ")."""
    addition = "".join((space if i and not text.startswith("</") else "") + text
                       for i, (text, space) in enumerate(appended))
    glue = "" if appended[0][0].startswith("</") else appended[0][1]
    out = out.rstrip(" ")
    final = _FINAL_PUNCTUATION.search(out)
    if not out:
        return addition
    if final and final.start() > 0:
        body = out[:final.start()].rstrip(" ")
        return f"{body}{glue}{addition}{out[final.start():]}" if body else f"{addition}{out}"
    return f"{out}{glue}{addition}"


def _join(out, text, after_deletion):
    """out + text; right after a deleted piece, no double space and no new space before
    punctuation. Only spaces are removed: a tab or other control character stays."""
    if not after_deletion or not text:
        return out + text
    if not out:
        return text.lstrip(" ")
    if out[-1] == " " and text[0] == " ":
        return out + text.lstrip(" ")
    if out[-1] == " " and text[0] in _NO_SPACE_BEFORE:
        return out.rstrip(" ") + text
    return out + text


def _clean_or_repaired(src, text, kinds):
    gaps, pieces = _segment(text, kinds, src.known_tags)
    clean, new, before, after, appended = _plan(src, pieces)
    if clean:
        return True, text
    out = _write(gaps, new, before, after)
    return False, _append_missing(out, appended) if appended else out


def kept_exactly(source, translation, kinds):
    """True when every protected span of source is in translation exactly as often, byte for byte,
    the order-bound ones (tags included) in the source's relative order, and nothing else that
    reads as a directive or a tag is there unless the source has it too (module docstring)."""
    kinds = checked_kinds(kinds)
    src = _source(source, kinds)
    if src.copied:
        return translation == source
    return _clean_or_repaired(src, translation, kinds)[0]


def restore(source, translation, kinds):
    """The translation with its protected spans repaired so that kept_exactly(...) holds.

    The rules are listed above _known_tags (graph_spans.py follows the same). An output that
    already keeps its spans is returned unchanged (changed=False), so restore is idempotent and
    restore(s, s) is s. Should a repair ever create a new piece (a deletion joining "%" and "d"),
    it is repaired again, and after ROUNDS rounds the source itself is returned: the one text that
    always keeps its spans.
    """
    kinds = checked_kinds(kinds)
    src = _source(source, kinds)
    if src.copied:
        return Restored(source, source != translation)
    text = translation
    for _ in range(ROUNDS):
        clean, text = _clean_or_repaired(src, text, kinds)
        if clean:
            return Restored(text, text != translation)
    if _clean_or_repaired(src, text, kinds)[0]:
        return Restored(text, text != translation)
    return Restored(source, source != translation)
