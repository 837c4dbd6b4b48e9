"""Keyboard accelerators (`_Open`, `&File`): found in a source's prose, taken out before it is
translated, and placed on a letter of the translation, as translators do.

Which mark a catalog uses is the catalog's own convention (`convention`): its header's
`X-Accelerator-Marker` field (KDE's and Pology's), else the mark its translated entries carry
over from their msgids, else the mark at least two of its msgids put before a letter in prose;
a catalog that shows none has no accelerators. An accelerator is a mark in prose only: a mark
inside a tag or an attribute (`target="_blank"`), a placeholder (`%(model_name)s`,
`{form_id}`), a URL, an e-mail address or an entity, or joining an identifier (`file_name`), is
text to copy, never a key. A doubled mark (`&&`) is a literal, as msgfmt counts it.

The model would drop a mark, move it into a word or double it; so a source's accelerator is taken
out before translation and put back on the translation on a letter translate-toolkit accepts as
an accelerator (`translate.filters.decoration.isvalidaccelerator`: no letter with a diacritic):
before the letter it marked where a word of the translation starts with it, else before that
letter anywhere, else at the start of a word, else before any such letter outside protected
spans and non-prose text. A translation with no such letter cannot carry it (None): the caller
tries its next hypothesis.
"""
import collections
import re
from typing import NamedTuple, Optional

from translate.filters import decoration

MARKS = ("_", "&")
HEADER_FIELD = "X-Accelerator-Marker"
# Text where a mark is never an accelerator: tags (and their attributes), printf's named and
# brace placeholders, shell variables, URLs, e-mail addresses, entities.
_NOT_PROSE = re.compile(r"<[^<>]*>|%\([^()]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]?|\$?\{[^{}]*\}"
                        r"|\$\(\w+\)|\b[a-zA-Z][\w+.-]*://\S+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
                        r"|&#?\w+;")


class Accelerator(NamedTuple):
    mark: str  # "_" or "&"
    letter: str  # the character it marked in the source


def count(text, mark):
    """The accelerator marks in text as msgfmt counts them: a doubled mark is a literal."""
    return len(_marks(text, mark))


def _marks(text, mark, skip=()):
    """Indices of the marks msgfmt counts in text, leaving out those inside `skip` spans."""
    found, i = [], 0
    while i < len(text):
        if text[i] == mark:
            if i + 1 < len(text) and text[i + 1] == mark:
                i += 2
                continue
            if not any(start <= i < end for start, end in skip):
                found.append(i)
        i += 1
    return found


def not_prose(text):
    """(start, end) spans of text where a mark is no accelerator."""
    return [match.span() for match in _NOT_PROSE.finditer(text)]


def _is_key(text, at, mark):
    """Whether the mark at `at` marks the next character as a key."""
    if at + 1 >= len(text) or not text[at + 1].isalnum():
        return False
    return not (mark == "_" and at > 0 and (text[at - 1].isalnum() or text[at - 1] in "%_"))


def _find(text, marks):
    """(the accelerator, its mark's index) of text, else (None, None)."""
    skip = not_prose(text)
    for mark in marks:
        found = _marks(text, mark, skip)
        if len(found) == 1 and _is_key(text, found[0], mark):
            return Accelerator(mark, text[found[0] + 1]), found[0]
    return None, None


def find(text, marks=MARKS) -> Optional[Accelerator]:
    """The accelerator of a source text: its one mark in prose (of the first of `marks` that
    has exactly one there), right before a letter or digit and not joining an identifier."""
    return _find(text, marks)[0]


def convention(header_fields, messages):
    """The catalog's accelerator mark, or None: its header's X-Accelerator-Marker (a value
    that is no mark says it has none), else the mark most of its translated entries carry from
    msgid to msgstr, else the mark most of its msgids (at least two) use in prose."""
    for name, value in header_fields:
        if name.lower() == HEADER_FIELD.lower():
            return value.strip() if len(value.strip()) == 1 else None
    carried, used = collections.Counter(), collections.Counter()
    for entry in messages:
        for mark in MARKS:
            if find(entry.msgid, (mark,)) is None:
                continue
            used[mark] += 1
            if entry.msgstr and not entry.fuzzy and not entry.msgid_plural:
                # A translator may mark a letter inside a word (`Ö_ffnen`).
                found = _marks(entry.msgstr, mark, not_prose(entry.msgstr))
                carried[mark] += len(found) == 1 and entry.msgstr[found[0] + 1:][:1].isalnum()
    if carried:
        return carried.most_common(1)[0][0]
    if used and used.most_common(1)[0][1] >= 2:
        return used.most_common(1)[0][0]
    return None


def strip(text, accelerator):
    """text (a msgid, or its msgid_plural) without its accelerator mark."""
    at = _find(text, (accelerator.mark,))[1]
    return text if at is None else text[:at] + text[at + 1:]


def _valid(char):
    return decoration.isvalidaccelerator(char)


def place(translation, accelerator, protected=()):
    """translation with the accelerator's mark before one of its letters, or None where it has
    no letter translate-toolkit accepts as a key outside `protected` ((start, end) spans) and
    its non-prose text, or already holds a mark in prose (one more would make two)."""
    skip = list(protected) + not_prose(translation)
    if _marks(translation, accelerator.mark, skip):
        return None
    free = [i for i, char in enumerate(translation) if char.isalnum() and _valid(char)
            and not any(start <= i < end for start, end in skip)
            and not (i and translation[i - 1] == accelerator.mark)]
    wanted = accelerator.letter.casefold()
    word_starts = [i for i in free if i == 0 or not translation[i - 1].isalnum()]
    for candidates in ([i for i in word_starts if translation[i].casefold() == wanted],
                       [i for i in free if translation[i].casefold() == wanted],
                       [i for i in word_starts if translation[i].isalpha()], free):
        if candidates:
            at = candidates[0]
            return translation[:at] + accelerator.mark + translation[at:]
    return None
