"""What po/formats.py's readers share: the format languages msgfmt knows, what t2t-lite-po
does with each (FORMATS), a Directive as a reader returns it, FormatError (msgfmt's reason,
where the reader stopped) and UnsupportedFormat, and the message, end marker and name order
several readers use."""
import dataclasses
from typing import NamedTuple, Optional


class Format(NamedTuple):
    """What t2t-lite-po does with an entry msgfmt -c checks as one format language."""
    protected: Optional[str]  # the protected-span kind keeping its directives; None: no kind does
    read: bool  # po/formats.py reads it and judges a translation by it (msgfmt -c judges all)


# Every format language msgfmt 0.21 knows, in its order of checks (message.h's enum
# format_type). The one table of format flags: formats.format_flags reads an entry's flags into
# the languages msgfmt checks it as (`possible-c-format` is c, `no-c-format` and
# `impossible-c-format` turn c off), formats.protected_kinds protects by them and entries.py
# judges by them. qt's %1, sh's $VAR, boost's %1% are no protected kind's.
FORMATS = {
    "c": Format("printf", True),
    "objc": Format("printf", True),
    "python": Format("printf", True),
    "python-brace": Format("brace", True),
    "java": Format("brace", False),
    "java-printf": Format("printf", False),
    "csharp": Format("brace", False),
    "javascript": Format("printf", False),
    "scheme": Format(None, False),
    "lisp": Format(None, False),
    "elisp": Format("printf", False),
    "librep": Format("printf", False),
    "ruby": Format("printf", False),
    "sh": Format(None, False),
    "awk": Format("printf", False),
    "lua": Format("printf", False),
    "object-pascal": Format("printf", False),
    "smalltalk": Format(None, False),
    "qt": Format(None, True),
    "qt-plural": Format(None, True),
    "kde": Format(None, True),
    "kde-kuit": Format(None, False),
    "boost": Format(None, False),
    "tcl": Format("printf", False),
    "perl": Format("printf", False),
    "perl-brace": Format("brace", False),
    "php": Format("printf", False),
    "gcc-internal": Format("printf", False),
    "gfc-internal": Format("printf", False),
    "ycp": Format(None, False),
}
ALL_LANGUAGES = tuple(FORMATS)
# The languages read here, in msgfmt's order of checks; a flag for another is unsupported here.
LANGUAGES = tuple(name for name, how in FORMATS.items() if how.read)
PRETTY = {"c": "C", "objc": "Objective C", "python": "Python", "python-brace": "Python brace",
          "qt": "Qt", "qt-plural": "Qt plural", "kde": "KDE"}
END = "\0"
UNTERMINATED = "The string ends in the middle of a directive."


class FormatError(ValueError):
    """A string msgfmt does not accept as a format string of its flag. str() is msgfmt's
    reason; `position` is where the parser stopped; `directives` those read before it."""

    def __init__(self, reason, position, found=()):
        super().__init__(reason)
        self.reason = reason
        self.position = position
        self.directives = list(found)


class UnsupportedFormat(ValueError):
    """A format flag msgfmt checks but this module does not read (java-format, sh-format...)."""


@dataclasses.dataclass(frozen=True)
class Directive:
    """One directive as msgfmt reads it: text[start:end], its conversion ('d', '%',
    '<PRIu64>'; a brace field's is ''), its %m$ position or its name, and the arguments it
    takes as (position or name or None, type) pairs (a '*' width or precision is one)."""

    start: int
    end: int
    text: str
    conversion: str
    number: int = None
    name: str = None
    args: tuple = ()


def bad_conversion(number, char):
    """msgfmt's reason when directive number `number` ends in `char`, no conversion."""
    if char == END:
        return UNTERMINATED
    if " " <= char <= "~":
        return (f"In the directive number {number}, the character '{char}' is not a valid "
                "conversion specifier.")
    return (f"The character that terminates the directive number {number} is not a valid "
            "conversion specifier.")


def name_key(name):
    """The order gettext sorts argument names in: strcmp over their UTF-8 bytes."""
    return name.encode("utf-8")


class Scanner:
    """A format string as gettext's parsers read it: cut at a NUL, its directives found one by
    one from their opening character, the ones read so far kept for a FormatError."""

    def __init__(self, text):
        self.text = text.split(END, 1)[0]
        self.found = []

    def at(self, i):
        return self.text[i] if i < len(self.text) else END

    def fail(self, reason, position):
        raise FormatError(reason, position, self.found)

    def scan(self, opening, directive):
        """directive(i) -> the index after it, at each `opening` character; the rest is text."""
        i = 0
        while i < len(self.text):
            if self.text[i] != opening:
                i += 1
                continue
            i = directive(i)
