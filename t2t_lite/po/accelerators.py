"""Keyboard accelerators (`_Open`, `&File`): taken out of a source before it is translated, and
placed on a letter of the translation, as translators do.

`msgfmt --check-accelerators=C` holds a msgstr to exactly one mark C where its msgid has exactly
one (a doubled mark, `&&`, is a literal and does not count). The model would drop a mark, move it
into a word or double it; so a source's accelerator is taken out before translation and put back
on the translation: before the letter it marked where the translation has it at the start of a
word, else before that letter anywhere, else before the translation's first letter. Letters
inside a protected span (a format directive, a tag, an entity) are never marked.
"""
from typing import NamedTuple, Optional

MARKS = ("_", "&")


class Accelerator(NamedTuple):
    mark: str  # "_" or "&"
    letter: str  # the character it marked in the source


def count(text, mark):
    """The accelerator marks in text as msgfmt counts them: a doubled mark is a literal."""
    total, i = 0, 0
    while i < len(text):
        if text[i] == mark:
            if i + 1 < len(text) and text[i + 1] == mark:
                i += 2
                continue
            total += 1
        i += 1
    return total


def _single_mark_at(text, mark):
    """The index of text's one accelerator mark (msgfmt's count 1), else None."""
    if count(text, mark) != 1:
        return None
    i = 0
    while i < len(text):
        if text[i] == mark:
            if i + 1 < len(text) and text[i + 1] == mark:
                i += 2
                continue
            return i
        i += 1
    return None


def find(text) -> Optional[Accelerator]:
    """The accelerator of a source text: one mark (msgfmt's count) right before a letter or
    digit. An `_` inside a word (`file_name`, `%s_%s`) joins an identifier, not marks a key; an
    `&` starting an entity (`&amp;`) is markup."""
    for mark in MARKS:
        at = _single_mark_at(text, mark)
        if at is None or at + 1 >= len(text) or not text[at + 1].isalnum():
            continue
        if mark == "_" and at > 0 and (text[at - 1].isalnum() or text[at - 1] in "%_"):
            continue
        if mark == "&" and _starts_entity(text, at):
            continue
        return Accelerator(mark, text[at + 1])
    return None


def _starts_entity(text, at):
    end = text.find(";", at)
    return end != -1 and end - at <= 33 and (text[at + 1:end].isalnum()
                                             or text[at + 1:end].startswith("#"))


def strip(text, accelerator):
    """text without its accelerator mark."""
    at = _single_mark_at(text, accelerator.mark)
    return text if at is None else text[:at] + text[at + 1:]


def place(translation, accelerator, protected=()):
    """translation with the accelerator's mark before one of its letters, or None where it has
    no letter outside `protected` ((start, end) spans) or already holds a mark msgfmt counts
    (one more would make two)."""
    if count(translation, accelerator.mark):
        return None
    free = [i for i, char in enumerate(translation) if char.isalnum()
            and not any(start <= i < end for start, end in protected)]
    if not free:
        return None
    wanted = accelerator.letter.casefold()
    word_starts = [i for i in free if i == 0 or not translation[i - 1].isalnum()]
    for candidates in ([i for i in word_starts if translation[i].casefold() == wanted],
                       [i for i in free if translation[i].casefold() == wanted],
                       [i for i in word_starts if translation[i].isalpha()], free):
        if candidates:
            at = candidates[0]
            placed = translation[:at] + accelerator.mark + translation[at:]
            return placed if count(placed, accelerator.mark) == 1 else None
    return None
