"""Code-like text of a line (URLs, e-mail addresses, paths, options, numbers, identifiers,
<placeholders>): the patterns, shared by span_finding.py (Python) and graph_span_finding.py (RE2
inside exports), and the rule that says which lines are copied rather than translated.

A line is read after its format spans (printf, brace fields, tags, entities) are masked: each is
one MASK character, so nothing here is found inside one. CODE is then matched left to right, as
Python's re.finditer and RE2's global replace both do (leftmost, and the first alternative that
matches): a code-like span starts only after a delimiter (the line's start, white space or one of
`([{"'`=,:;<>|*$€£#+` and typographic quotes but ” and ’), and a word that is no span is consumed whole
(`\\w+`, with its `-`, `/` and apostrophe joins: "e-mail", "read-only", "and/or", "don't"), so no
span starts inside a word. The classes are ASCII: a word with other letters is never code. Which
class a match is comes from CLASSES, the first whose pattern matches it whole (the same order as
the alternation, so it is the class that matched).

    url          scheme://... or www....; not a trailing . , ; : ! ? ) ] }
    email        name@domain.tld
    path         /abs/path, ~/p, ./p, ../p, C:\\dir\\file (no spaces); not a relative "dir/file"
    option       -x, -xvf, -long, --long-option, --opt=VALUE, --opt=<value>
    number       123, 3.14, 1,000, 1.2.3, ranges and dates 1-10, 2024-01-05, 1/2 (as one span);
                 not a number glued to letters (5px, 0x1F, 1920x1080, MP3) nor after a `-` or `/`
    identifier   snake_case and UPPER_CASE (an underscore between two letters or digits),
                 __dunder__, CamelCase / camelCase (a capital after a lowercase ASCII letter:
                 ConfigFile, macOS, kB), dotted names (os.path, file.txt, v1.2), calls (name(),
                 a.b(), A::b()); not a plain word, an all-capital word (OK, USB), a word with
                 digits (utf8), a hyphenated word, an abbreviation of one- or two-letter parts
                 (e.g., i.e., Ph.D.), nor a capitalised word with one `_` (an accelerator: Re_load)
    placeholder  <word>, <file.txt>: a usage metavariable (tags are markup's); not <two words>
"""
import re

MASK = "\x03"  # a format span, as the code-like finder sees the line
CODE_KINDS = ("url", "email", "path", "option", "number", "identifier", "placeholder")

# Quotes that open in English or German (an output is read too: »--force«); not ” or the
# apostrophe ’: "Years’-Digits" has no option "-Digits".
_DELIM = r"(^|[\s(\[{\"'`=,:;<>|*$€£#+«»“„‘‚‹›])"
_QUOTES = "\"'`«»“”„‘’‚‹›"
_W = "A-Za-z0-9_"  # the classes are ASCII (a Unicode \w in each would overflow RE2's DFA)
_SEGMENT = rf"(?:\.*[{_W}][{_W}+@~-]*(?:\.+[{_W}+@~-]+)*|\.\.)"
_NUMBER = r"[0-9]+(?:[.,][0-9]+)*"
_NAME = rf"[A-Za-z_][{_W}]*"
_EMAIL = rf"[{_W}.+-]+@[{_W}-]+(?:\.[{_W}-]+)+"
# (class, kind or None for text, pattern), in the order they are tried at a delimiter.
CLASSES = (
    ("placeholder", "placeholder", rf"<[A-Za-z][{_W}.:-]*>"),  # not "<invalid size>": prose
    ("url", "url", rf"(?:[A-Za-z][A-Za-z0-9+.-]*://|www\.)[^\s<>{_QUOTES}\x03]*"
                   rf"[^\s<>{_QUOTES}\x03.,;:!?)\]}}]"),
    ("email", "email", _EMAIL),
    ("closing tag", None, rf"/[A-Za-z][{_W}:.-]*\s*>"),  # "</b>" where markup is not protected
    ("path", "path", rf"(?:~|\.\.?)?/{_SEGMENT}(?:/{_SEGMENT})*/?"
                     rf"|[A-Za-z]:\\{_SEGMENT}(?:\\{_SEGMENT})*\\?"),
    ("option", "option", rf"--?[A-Za-z][{_W}-]*(?:=(?:<[{_W}-]+>|[{_W}./:@+,~-]*[{_W}/~]))?"),
    ("call", "identifier", rf"{_NAME}(?:(?:\.|::|->){_NAME})*\(\)"),
    ("abbreviation", None, r"(?:[A-Z][a-z]|[A-Za-z])(?:\.(?:[A-Z][a-z]|[A-Za-z]))+\."),
    ("dotted", "identifier", rf"{_NAME}(?:\.[{_W}]+)+"),
    ("accelerator", None, r"[A-Z][a-z]*_[a-z]+"),
    ("snake", "identifier", rf"[{_W}]*[A-Za-z0-9]_+[A-Za-z0-9][{_W}]*|__[{_W}]+"),
    ("camel", "identifier", rf"[A-Z]*[a-z][a-z0-9]*[A-Z][{_W}]*"),
    ("glued", None, rf"{_NUMBER}[A-Za-z_][{_W}]*"),
    ("number", "number", rf"{_NUMBER}(?:[-/–]{_NUMBER})*"),
)
_WORD = r"\w+(?:[-/'’]\w+)*"
# Group 1: the delimiter (text); 2: a class's match; 3: a word that is no span (text).
CODE = rf"{_DELIM}({'|'.join(pattern for _, _, pattern in CLASSES)})|({_WORD})"
_CODE = re.compile(CODE)
_WHOLE = [(kind, re.compile(pattern)) for _, kind, pattern in CLASSES]

# A line that is only names and their e-mail addresses ("Clemens Ladisch <clemens@ladisch.de>",
# "A. Name (a@b.org), B. Name <b@c.de>"), with an optional copyright and years before.
_PERSON = (r"[A-ZÀ-ÖØ-Þ][\w'’.-]*"
           r"(?:\s+(?:[A-ZÀ-ÖØ-Þ][\w'’.-]*|van|von|de|der|den|da|di|du|la|le))*")
_EMAIL_IN = rf"(?:<{_EMAIL}>|\({_EMAIL}\))"
AUTHOR_LINE = (r"\s*(?:(?:©|\([Cc]\)|Copyright)\s*)*(?:[0-9]{4}(?:\s*[-–,]\s*[0-9]{4})*,?\s+)?"
               rf"{_PERSON}\s*{_EMAIL_IN}(?:\s*(?:[,;&]|and)\s*{_PERSON}\s*{_EMAIL_IN})*"
               r"\s*[.,;]?\s*")
_AUTHOR_LINE = re.compile(AUTHOR_LINE)


def kind_of(text):
    """The kind of a code-like match (a CODE group 2), or None where it is text."""
    for kind, pattern in _WHOLE:
        if pattern.fullmatch(text):
            return kind
    return None


def find(masked, kinds):
    """[(start, end, text, kind)] of the code-like spans of `kinds` in a masked line."""
    found = []
    for match in _CODE.finditer(masked):
        if match.group(2) is not None:
            kind = kind_of(match.group(2))
            if kind in kinds:
                found.append((match.start(2), match.end(2), match.group(2), kind))
    return found


def is_author_line(text):
    return _AUTHOR_LINE.fullmatch(text) is not None


def copied(text, has_spans, outside, kinds):
    """Is `text` a line to copy rather than translate? has_spans: it has protected spans of
    `kinds`; outside: its text outside them. Copied: a line with spans and no letter outside
    them ("1.2.3", "https://...", "--verbose", "%s:"), or, with e-mail addresses protected, an
    author line."""
    if has_spans and not any(character.isalpha() for character in outside):
        return True
    return "email" in kinds and is_author_line(text)
