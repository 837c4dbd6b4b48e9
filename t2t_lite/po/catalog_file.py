"""A gettext catalog (PO or POT) read and written as gettext does, keeping every byte it does not
change (issue 51, points 2 and 3).

    catalog = catalog_file.read("de.po")          # or parse(data, name)
    for entry in catalog.messages():              # not the header, not obsolete entries
        if not entry.translated():
            entry.set_translation(msgstr="Hallo", fuzzy=True)   # plural={0: .., 1: ..}
    catalog.set_header_fields({"PO-Revision-Date": "2026-12-05 10:00+0000"}, fuzzy=False)
    data = catalog.to_bytes()                     # in the catalog's charset

Reading follows gettext's own lexer and grammar (read-po-lex.c, read-po-gram.y): the same
keywords, the same escapes (\\n \\t \\a \\b \\f \\r \\v \\\\ \\" \\ooo \\xhh), comments between
entries, `#~` obsolete and `#|` / `#~|` previous lines, several tokens on one line, a backslash
before a newline joining two lines. What msgfmt refuses is refused here, as one UserError
"FILE:LINE: what" (FILE:LINE:COLUMN where msgfmt gives a column) in msgfmt's words: an
unterminated string, an invalid control sequence, an unknown keyword, a token where none may
stand ("syntax error": junk between entries, a comment inside an entry, a second msgstr), a
missing msgstr / msgstr[] / msgid_plural section, plural forms out of order, inconsistent use of
#~, the context separator <EOT> in a string, bytes the header's charset cannot decode in a
string (in a comment msgfmt lets them be, and so does this), a byte order mark, and a duplicate
message definition (same domain, msgctxt and msgid; obsolete entries count, as msgfmt counts
them). An unterminated string is named at its own line (msgfmt names the next one). Not
checked here: what msgfmt checks of an entry's content (a msgstr beginning or ending with "\\n"
where the msgid does not, and with -c, formats and the header): msgfmt -c judges the output.

Every entry keeps its raw lines. Changing an entry regenerates only its msgstr lines (written as
msgmerge and msgcat write strings: 79 columns, Unicode line breaking as libunistring breaks, no
break inside a format directive, a `""` first line when the string has several lines or wraps)
and its `#,` flags line; changing the header regenerates only the lines of the fields it sets.
Everything else, the entry order, the spacing and the line ends (CRLF, a missing last newline)
included, is written back byte for byte: to_bytes() of a catalog nothing was changed in is the
file as read. A new translation the charset cannot encode raises NotEncodable (the charset is
never changed behind the caller's back).
"""
import codecs
import dataclasses
import re
import unicodedata
from typing import Dict, List, Mapping, Optional, Tuple

from t2t_lite.errors import UserError

PAGE_WIDTH = 79  # msgmerge's and msgcat's default --width
_CHARSET = re.compile(rb'"?Content-Type:[^\n]*?charset=([\w_\-:.]+)', re.IGNORECASE)
_CONTROL = {"n": "\n", "t": "\t", "b": "\b", "r": "\r", "f": "\f", "v": "\v", "a": "\a",
            "\\": "\\", '"': '"'}
_ESCAPE = {"\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v",
           "\\": "\\", '"': '"'}
_KEYWORDS = {"domain": "DOMAIN", "msgid": "MSGID", "msgid_plural": "MSGID_PLURAL",
             "msgstr": "MSGSTR", "msgctxt": "MSGCTXT"}
_PREVIOUS_KEYWORDS = {"msgid": "PREV_MSGID", "msgid_plural": "PREV_MSGID_PLURAL",
                      "msgctxt": "PREV_MSGCTXT"}
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_NUMBER = re.compile(r"[0-9]+")
_OCTAL = re.compile(r"[0-7]{1,3}")
_HEX = re.compile(r"[0-9A-Fa-f]+")
_PLAIN = re.compile(r'[^"\\\n]+')
_UNDECODED = re.compile("[\udc80-\udcff]")


class NotRewritable(ValueError):
    """An entry whose lines cannot be rewritten without changing another's or its msgid's (it
    shares a line with another entry, has its msgstr on its msgid's line, or a line continued by
    a backslash): gettext reads it, the caller leaves it as it is. Entry.rewritable says so
    beforehand."""


class NotEncodable(UserError):
    """A new translation holds characters the catalog's charset cannot write; the caller decides
    (leave the entry, or convert the catalog), nothing is changed."""


@dataclasses.dataclass
class _Token:
    kind: str  # COMMENT DOMAIN MSGCTXT MSGID MSGID_PLURAL MSGSTR PREV_* STRING PREV_STRING [ ]
    value: object  # NUMBER: int, STRING / COMMENT: str
    line: int  # 0-based line index
    end_col: int  # msgfmt's column after the token (1-based), for "syntax error"
    obsolete: bool


def _error(name, line, message, col=None):
    where = f"{name}:{line + 1}" + (f":{col}" if col is not None else "")
    return UserError(f"{where}: {message}")


# ---- the lexer (read-po-lex.c) ------------------------------------------------------------------

def _byte(value):
    """An escape's byte (gettext keeps its low 8 bits) as the text holds undecoded bytes."""
    value &= 0xFF
    return chr(value) if value < 0x80 else chr(0xDC00 + value)


def _string(text, start, name, line, last_line, encoding):
    """(value, index after the closing quote) of the string opening at text[start]. \\ooo and
    \\xhh are bytes in the catalog's charset, as in gettext: "\\303\\244" is "ä" in UTF-8."""
    out, i, escaped_bytes = [], start + 1, False
    while True:
        if i >= len(text) or text[i] == "\n":
            where = "end-of-file" if last_line and not text.endswith("\n") else "end-of-line"
            raise _error(name, line, f"{where} within string")
        plain = _PLAIN.match(text, i)
        if plain:
            undecoded = _UNDECODED.search(plain.group())
            if undecoded:
                raise _undecodable(name, line, i + undecoded.start() + 1, encoding)
            out.append(plain.group())
            i = plain.end()
            continue
        if text[i] == '"':
            break
        nxt = text[i + 1:i + 2]
        if nxt in _CONTROL:
            out.append(_CONTROL[nxt])
            i += 2
        elif nxt and nxt in "01234567":
            digits = _OCTAL.match(text, i + 1).group()
            out.append(_byte(int(digits, 8)))
            i += 1 + len(digits)
            escaped_bytes = True
        elif nxt == "x" and _HEX.match(text, i + 2):
            digits = _HEX.match(text, i + 2).group()
            out.append(_byte(int(digits, 16)))
            i += 2 + len(digits)
            escaped_bytes = True
        else:
            col = i + (3 if nxt == "x" else 2)
            raise _error(name, line, "invalid control sequence", col)
    value = "".join(out)
    if escaped_bytes and _UNDECODED.search(value):  # bytes that may form characters
        value = value.encode(encoding, "surrogateescape").decode(encoding, "surrogateescape")
    if "\x04" in value:
        raise _error(name, line, "context separator <EOT> within string")
    return value.partition("\0")[0], i + 1  # gettext's strings end at a NUL


def _undecodable(name, line, col, encoding):
    return _error(name, line, f"invalid multibyte sequence: not valid {encoding} (the header's "
                              "charset, or UTF-8 where it gives none)", col)


def _line_tokens(text, line, name, last_line, encoding, state):
    """The tokens of one decoded line (its "\\n" included), as gettext's lexer returns them.
    state["previous"]: a comment after `#|` ends its line without leaving the `#|` mode, so
    gettext reads the next line as previous-msgid line too."""
    obsolete, previous = False, state.pop("previous", False)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\f\v\n":
            i += 1
        elif c == "#":
            nxt = text[i + 1:i + 2]
            if nxt == "~":
                obsolete = True
                i += 2
                if text[i:i + 1] == "|":
                    previous = True
                    i += 1
            elif nxt == "|":
                previous = True
                i += 2
            else:
                yield _Token("COMMENT", text[i + 1:].rstrip("\n"), line, n + 1, obsolete)
                if previous:
                    state["previous"] = True
                return
        elif c == '"':
            value, i = _string(text, i, name, line, last_line, encoding)
            yield _Token("PREV_STRING" if previous else "STRING", value, line, i + 1, obsolete)
        elif _IDENTIFIER.match(text, i):
            word = _IDENTIFIER.match(text, i).group()
            kind = (_PREVIOUS_KEYWORDS if previous else _KEYWORDS).get(word)
            if kind is None:
                raise _error(name, line, f'keyword "{word}" unknown')
            i += len(word)
            yield _Token(kind, word, line, 1 if text[i:i + 1] == "\n" else i + 1, obsolete)
        elif c.isascii() and c.isdigit():
            digits = _NUMBER.match(text, i).group()
            i += len(digits)
            yield _Token("NUMBER", int(digits), line, 1 if text[i:i + 1] == "\n" else i + 1,
                         obsolete)
        elif c in "[]":
            i += 1
            yield _Token(c, c, line, i + 1, obsolete)
        else:
            if _UNDECODED.match(c):
                raise _undecodable(name, line, i + 1, encoding)
            i += 1
            yield _Token("JUNK", c, line, i + 1, obsolete)


def _split_lines(raw):
    lines = raw.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _encoding(raw, name):
    """(python codec name, the header's charset or None), as po_catalog.read_catalog finds it."""
    match = _CHARSET.search(raw)
    charset = match.group(1).decode("ascii", "replace") if match else None
    if not charset or charset.upper() == "CHARSET":
        return "utf-8", charset
    try:
        encoding = codecs.lookup(charset).name
    except LookupError:
        line = raw.count(b"\n", 0, match.start())
        raise _error(name, line, f"unknown charset {charset!r} in the header's "
                                 "Content-Type") from None
    if "\n\"#~|".encode(encoding, "replace") != b'\n"#~|':  # UTF-16, UTF-32: not a PO charset
        line = raw.count(b"\n", 0, match.start())
        raise _error(name, line, f"charset {charset!r} is not ASCII-compatible; gettext reads "
                                 "only ASCII-compatible charsets")
    return encoding, charset


class _Lexer:
    """Tokens of the whole file, read lazily (so errors come in file order), one lookahead."""

    def __init__(self, lines, encoding, name):
        self.lines, self.name = lines, name
        self.encoding = encoding
        self.continued: Dict[int, int] = {}  # first physical line -> last, of joined lines
        self._state: Dict[str, bool] = {}
        self._tokens = self._generate()
        self.peeked: Optional[_Token] = None

    def _generate(self):
        index = 0
        while index < len(self.lines):
            # Bytes the charset cannot decode are an error in a string or keyword, not in a
            # comment (as in msgfmt): they are kept as surrogates until the lexer sees them.
            text = self.lines[index].decode(self.encoding, "surrogateescape")
            if index == 0 and text.startswith("\ufeff"):
                raise _error(self.name, 0, "syntax error: the file starts with a byte order "
                                           "mark (BOM), which msgfmt does not accept; remove "
                                           "it", 2)
            first = index
            # gettext reads a backslash before a newline as no character at all (lex_getc):
            # the physical lines joined are one line for the lexer.
            while text.endswith("\\\n") and index + 1 < len(self.lines):
                index += 1
                text = text[:-2] + self.lines[index].decode(self.encoding, "surrogateescape")
            if index > first:
                text = text.replace("\\\n", "")
                self.continued[first] = index
            last_line = index == len(self.lines) - 1
            yield from _line_tokens(text, first, self.name, last_line, self.encoding,
                                    self._state)
            index += 1

    def peek(self):
        if self.peeked is None:
            self.peeked = next(self._tokens, None)
        return self.peeked

    def take(self):
        token = self.peek()
        self.peeked = None
        return token

    def syntax_error(self, token=None):
        token = token or self.peek()
        if token is None:
            return _error(self.name, max(len(self.lines) - 1, 0),
                          "syntax error: the file ends inside an entry")
        if token.kind == "COMMENT":
            return _error(self.name, token.line, "syntax error: a comment inside an entry")
        return _error(self.name, token.line, "syntax error", token.end_col)


# ---- the grammar (read-po-gram.y) ---------------------------------------------------------------

@dataclasses.dataclass
class _Message:
    """One message as the grammar reads it: its values and the tokens it was read from."""
    tokens: List[_Token]
    msgid_token: _Token
    msgctxt: Optional[str] = None
    msgid: str = ""
    msgid_plural: Optional[str] = None
    msgstr: Optional[str] = None
    msgstr_plural: Optional[Dict[int, str]] = None
    previous: Tuple[Optional[str], Optional[str], Optional[str]] = (None, None, None)
    msgstr_strings: List[_Token] = dataclasses.field(default_factory=list)
    first_msgstr: Optional[_Token] = None


class _Parser:
    def __init__(self, lexer):
        self.lex, self.name = lexer, lexer.name

    def _strings(self, kind, tokens):
        """A string_list (at least one string): its concatenation."""
        if self.lex.peek() is None or self.lex.peek().kind != kind:
            raise self.lex.syntax_error()
        parts = []
        while self.lex.peek() is not None and self.lex.peek().kind == kind:
            token = self.lex.take()
            tokens.append(token)
            parts.append(token.value)
        return "".join(parts)

    def _expect(self, kind, tokens):
        token = self.lex.peek()
        if token is None or token.kind != kind:
            raise self.lex.syntax_error()
        tokens.append(self.lex.take())
        return token

    def _previous(self, tokens):
        ctxt = ident = plural = None
        if self.lex.peek().kind == "PREV_MSGCTXT":
            tokens.append(self.lex.take())
            ctxt = self._strings("PREV_STRING", tokens)
            self._expect("PREV_MSGID", tokens)
        elif self.lex.peek().kind == "PREV_MSGID":
            tokens.append(self.lex.take())
        else:
            return ctxt, ident, plural
        ident = self._strings("PREV_STRING", tokens)
        if self.lex.peek() is not None and self.lex.peek().kind == "PREV_MSGID_PLURAL":
            tokens.append(self.lex.take())
            plural = self._strings("PREV_STRING", tokens)
        return ctxt, ident, plural

    def message(self):
        tokens: List[_Token] = []
        previous = self._previous(tokens)
        ctxt = None
        if self.lex.peek() is not None and self.lex.peek().kind == "MSGCTXT":
            tokens.append(self.lex.take())
            ctxt = self._strings("STRING", tokens)
        msgid_token = self._expect("MSGID", tokens)
        message = _Message(tokens, msgid_token, msgctxt=ctxt, previous=previous)
        message.msgid = self._strings("STRING", tokens)
        if self._at("MSGID_PLURAL"):
            tokens.append(self.lex.take())
            message.msgid_plural = self._strings("STRING", tokens)
            if not self._at("MSGSTR"):
                raise _error(self.name, msgid_token.line, "missing 'msgstr[]' section")
            message.first_msgstr = self.lex.peek()
            message.msgstr_plural = self._forms(tokens)
        elif self._at("MSGSTR"):
            message.first_msgstr = self.lex.take()
            tokens.append(message.first_msgstr)
            if self._at("["):
                raise _error(self.name, msgid_token.line, "missing 'msgid_plural' section")
            start = len(tokens)
            message.msgstr = self._strings("STRING", tokens)
            message.msgstr_strings = tokens[start:]
        else:
            raise _error(self.name, msgid_token.line, "missing 'msgstr' section")
        self._check_obsolete(message)
        return message

    def _at(self, kind):
        return self.lex.peek() is not None and self.lex.peek().kind == kind

    def _forms(self, tokens):
        forms: Dict[int, str] = {}
        while self._at("MSGSTR"):
            keyword = self.lex.take()
            tokens.append(keyword)
            self._expect("[", tokens)
            number = self._expect("NUMBER", tokens)
            self._expect("]", tokens)
            if number.value != len(forms):
                raise _error(self.name, keyword.line, "first plural form has nonzero index"
                             if not forms else "plural form has wrong index")
            forms[number.value] = self._strings("STRING", tokens)
        return forms

    def _check_obsolete(self, message):
        obsolete = message.msgid_token.obsolete
        for token in message.tokens:
            if token.obsolete != obsolete:
                raise _error(self.name, token.line, "inconsistent use of #~")

    def messages(self):
        """(comments, message or None for a `domain` line, domain) in file order; then the
        comments after the last message as (comments, None, None)."""
        comments: List[_Token] = []
        domain = "messages"
        while self.lex.peek() is not None:
            token = self.lex.peek()
            if token.kind == "COMMENT":
                comments.append(self.lex.take())
            elif token.kind == "DOMAIN":
                self.lex.take()
                domain = self._expect("STRING", [])
                domain = domain.value
            elif token.kind in ("MSGCTXT", "MSGID", "PREV_MSGCTXT", "PREV_MSGID"):
                yield comments, self.message(), domain
                comments = []
            else:
                raise self.lex.syntax_error()
        yield comments, None, None


# ---- comments -----------------------------------------------------------------------------------

def _flags_of(text):
    """The flags of a `#,` comment's text (after the comma), as gettext splits them."""
    return [flag for flag in re.split(r"[,\s]+", text) if flag]


def _comment_kind(text):
    return {".": "extracted", ":": "reference", ",": "flags"}.get(text[:1], "translator")


# ---- writing strings as msgmerge does (write-po.c wrap, libunistring's line breaking) -----------

_ASCII_CLASS = {" ": "SP", "!": "EX", '"': "QU", "$": "PR", "%": "PO", "'": "QU", "(": "OP",
                ")": "CP", "+": "PR", ",": "IS", "-": "HY", ".": "IS", "/": "SY", ":": "IS",
                ";": "IS", "?": "EX", "[": "OP", "\\": "PR", "]": "CP", "{": "OP", "|": "BA",
                "}": "CL", "\t": "BA"}
_SPECIAL_CLASS = {
    "\u00a0": "GL", "\u202f": "GL", "\u2007": "GL", "\u2011": "GL", "\u00ad": "BA",
    "\u2010": "BA", "\u2012": "BA", "\u2013": "BA", "\u2014": "B2", "\u2026": "IN",
    "\u2025": "IN", "\u00a1": "OP", "\u00bf": "OP", "\u201a": "OP", "\u201e": "OP",
    "\u00b0": "PO", "\u2030": "PO", "\u2032": "PO", "\u2033": "PO", "\u20ac": "PR",
    "\u00a3": "PR", "\u00a5": "PR", "\u00b1": "PR", "\u2116": "PR", "\u200b": "ZW",
    "\u2060": "WJ", "\ufeff": "WJ", "\u3000": "BA", "\u30fc": "NS", "\u3005": "NS",
    "\u301c": "NS", "\u30fb": "NS", "\uff1a": "NS", "\uff1b": "NS", "\uff01": "EX",
    "\uff1f": "EX", "\u3001": "CL", "\u3002": "CL", "\uff0c": "CL", "\uff0e": "CL",
    "\u00ab": "QU", "\u00bb": "QU", "\u2039": "QU", "\u203a": "QU", "\u0f0b": "BA",
    "\u0f0d": "EX", "\u058a": "BA", "\u05be": "BA", "\u0964": "BA", "\u0965": "BA",
    "\u060c": "IS", "\u061b": "EX", "\u061f": "EX", "\u06d4": "EX", "\uff05": "PO",
    "\uff04": "PR", "\uffe5": "PR", "\uffe6": "PR",
}
_SMALL_KANA = set("ぁぃぅぇぉっゃゅょゎゕゖァィゥェォッャュョヮヵヶㇰㇱㇲㇳㇴㇵㇶㇷㇸㇹㇺㇻㇼㇽㇾㇿ")


# libunistring's is_cjk_encoding: in these, East Asian "ambiguous" characters are wide, and the
# ambiguous symbols (class AI) break as ideographs.
_CJK_ENCODINGS = {"euc_jp", "gb2312", "gbk", "big5", "euc_kr", "cp949", "johab"}


def _lb_class(c, cjk=False):
    """UAX #14 line breaking class of a character (the classes gettext's text needs)."""
    if c.isascii():
        if c.isalpha():
            return "AL"
        if c.isdigit():
            return "NU"
        return _ASCII_CLASS.get(c, "AL" if c.isprintable() else "CM")
    if c in _SPECIAL_CLASS:
        return _SPECIAL_CLASS[c]
    if c in _SMALL_KANA:
        return "NS"
    if "\u05d0" <= c <= "\u05f2" or "\ufb1d" <= c <= "\ufb4f":
        return "HL"
    category = unicodedata.category(c)
    if category in ("Mn", "Mc", "Me") or category == "Cf" and c not in "\u200d":
        return "CM"
    if category == "Nd":
        return "NU"
    if category in ("Ps", "Pe"):
        wide = unicodedata.east_asian_width(c) in ("W", "F")
        return "OP" if category == "Ps" else ("CL" if wide or c not in ")]" else "CP")
    if category in ("Pi", "Pf"):
        return "QU"
    if category == "Zs":
        return "BA"
    if unicodedata.east_asian_width(c) in ("W", "F") or 0xAC00 <= ord(c) <= 0xD7A3:
        return "ID"
    if cjk and unicodedata.east_asian_width(c) == "A" and category in ("So", "Sm", "No"):
        return "ID"
    return "AL"


_NO_BREAK_PAIRS = {
    ("AL", "NU"), ("NU", "AL"), ("PR", "ID"), ("ID", "PO"), ("PR", "AL"), ("PO", "AL"),
    ("AL", "PR"), ("AL", "PO"), ("CL", "PO"), ("CP", "PO"), ("CL", "PR"), ("CP", "PR"),
    ("NU", "PO"), ("NU", "PR"), ("PO", "OP"), ("PO", "NU"), ("PR", "OP"), ("PR", "NU"),
    ("HY", "NU"), ("IS", "NU"), ("NU", "NU"), ("SY", "NU"), ("AL", "AL"),
    ("AL", "OP"), ("NU", "OP"), ("CP", "AL"), ("CP", "NU"), ("B2", "B2"),
}


def _break_before(classes, text, i):
    """Whether UAX #14 allows a line break before text[i] (text[i-1] is no space)."""
    prev, cur = classes[i - 1], classes[i]
    if cur in ("CL", "CP", "EX", "IS", "SY", "WJ", "ZW", "IN") or prev in ("WJ", "GL", "OP",
                                                                          "QU"):
        return False
    if prev == "ZW":
        return True
    if cur == "GL" and prev not in ("BA", "HY"):
        return False
    if cur in ("QU", "BA", "HY", "NS", "CM") or prev == "BB":
        return False
    if prev in ("HY", "BA") and i > 1 and classes[i - 2] == "HL" or prev == "SY" and cur == "HL":
        return False
    prev = "AL" if prev == "HL" else prev
    cur = "AL" if cur == "HL" else cur
    if cur == "OP" and unicodedata.east_asian_width(text[i]) in ("W", "F"):
        return True
    return (prev, cur) not in _NO_BREAK_PAIRS


def _possible_breaks(text, cjk=False):
    """[bool] per character: a line break is possible before it (UAX #14, as libunistring)."""
    classes = []
    for c in text:
        cls = _lb_class(c, cjk)
        if cls == "CM" and classes and classes[-1] not in ("SP", "ZW", "BA"):
            cls = classes[-1]  # a combining mark takes its base's class (LB9)
        elif cls == "CM":
            cls = "AL"  # LB10
        classes.append(cls)
    breaks = [False] * len(text)
    for i in range(1, len(text)):
        if classes[i] == "SP":
            continue
        if classes[i - 1] != "SP":
            breaks[i] = _break_before(classes, text, i)
            continue
        j = i - 1
        while j >= 0 and classes[j] == "SP":
            j -= 1
        before = classes[j] if j >= 0 else None
        breaks[i] = not (
            classes[i] in ("CL", "CP", "EX", "IS", "SY", "WJ", "ZW")
            or before == "OP" or (before == "QU" and classes[i] == "OP")
            or (before in ("CL", "CP") and classes[i] == "NS")
            or (before == "B2" and classes[i] == "B2") or before is None)
    return breaks


def _width(c, cjk=False):
    if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf"):
        return 0
    if not c.isprintable() and not c.isspace():
        return -1
    return 2 if unicodedata.east_asian_width(c) in (("W", "F", "A") if cjk else ("W", "F")) else 1


def _width_linebreaks(text, prohibited, width, start_column, cjk=False):
    """libunistring's ulc_width_linebreaks: [bool] break before each character."""
    possible = _possible_breaks(text, cjk)
    result = [False] * len(text)
    last, last_column, piece = None, start_column, 0
    for i, c in enumerate(text):
        can = possible[i] and not prohibited[i]
        if can:
            if last is not None and last_column + piece > width:
                result[last] = True
                last_column = 0
            last, last_column, piece = i, last_column + piece, 0
        w = _width(c, cjk)
        if w >= 0:
            piece += w
    if last is not None and last_column + piece > width:
        result[last] = True
    return result


_DIRECTIVES = {
    "c-format": re.compile(r"%(?:\d+\$)?[-+ #0'I]*(?:\*(?:\d+\$)?|\d+)?"
                           r"(?:\.(?:\*(?:\d+\$)?|\d+))?(?:hh|h|ll|l|L|q|j|z|Z|t)?"
                           r"(?:<PRI\w+>|[diouxXeEfFgGaAcspnCSm%])"),
    "python-format": re.compile(r"%(?:\([^)]*\))?[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?"
                                r"[diouxXeEfFgGcrsa%]"),
    "python-brace-format": re.compile(r"\{[^{}]*\}"),
}


def _inside_directives(text, formats):
    """Indexes of text's characters inside a format directive of `formats` (not its first):
    gettext never breaks a line there."""
    inside = set()
    for flag in formats:
        if flag in _DIRECTIVES:
            for match in _DIRECTIVES[flag].finditer(text):
                inside.update(range(match.start() + 1, match.end()))
    return inside


def string_lines(keyword, text, prefix="", width=PAGE_WIDTH, first_line=True, formats=(),
                 encoding="utf-8"):
    """The lines (without line ends) of `keyword "text"` as msgmerge and msgcat write them:
    escapes \\a \\b \\f \\n \\r \\t \\v \\\\ \\", a line break after each \\n, long lines broken
    where Unicode allows at `width` columns (never inside a directive of the entry's `formats`
    flags), a `""` first line when the string has several lines or wraps. `prefix` is "#~ "
    for an obsolete entry; first_line=False gives the lines of a string that continues an
    earlier one (no keyword). In a CJK `encoding` (EUC-JP, GBK, BIG5, EUC-KR ...) East Asian
    ambiguous characters count two columns, as gettext counts them."""
    cjk = codecs.lookup(encoding).name in _CJK_ENCODINGS
    if "\0" in text or "\x04" in text:
        raise ValueError("a PO string cannot hold NUL or the context separator <EOT>")
    portions = re.findall(r"[^\n]*\n|[^\n]+", text) or [""]
    inside = _inside_directives(text, formats)
    after_break = len(prefix) + 1
    wrap_width = width - 1 - after_break
    lines, offset = [], 0
    for k, portion in enumerate(portions):
        chars, prohibited = [], []
        for index, c in enumerate(portion, offset):
            if c in _ESCAPE:
                chars += ["\\", _ESCAPE[c]]
                prohibited += [index in inside, True]
            else:
                chars.append(c)
                prohibited.append(index in inside)
        offset += len(portion)
        if portion.endswith("\n"):
            prohibited[-2] = True
        escaped = "".join(chars)
        while True:
            start = len(prefix) + (len(keyword) + 1 if first_line else 0) + 1 - after_break
            breaks = _width_linebreaks(escaped, prohibited, wrap_width, start, cjk)
            if first_line and escaped and (k < len(portions) - 1 or start > wrap_width
                                           or any(breaks)):
                lines.append(f'{prefix}{keyword} ""')
                first_line = False
                continue
            break
        cuts = [0] + [i for i, cut in enumerate(breaks) if cut] + [len(escaped)]
        for a, b in zip(cuts, cuts[1:]):
            lead = f"{keyword} " if first_line else ""
            lines.append(f'{prefix}{lead}"{escaped[a:b]}"')
            first_line = False
    return lines


# ---- entries ------------------------------------------------------------------------------------

class Entry:
    """One message of a catalog: its values as gettext reads them, and its raw lines.

    line: the 1-based line where the entry starts (its first comment), msgid_line: where its
    msgid keyword stands (the line msgfmt names), span: (start, end) byte offsets of its lines in
    the file as read. A header is the entry with msgid "" and no msgctxt."""

    def __init__(self, catalog, message, comments, first, last):
        self._catalog, self._message = catalog, message
        self._first, self._last = first, last  # 0-based line indexes, inclusive
        self.msgctxt, self.msgid = message.msgctxt, message.msgid
        self.msgid_plural = message.msgid_plural
        self.msgstr = message.msgstr
        self.msgstr_plural = dict(message.msgstr_plural or {})
        (self.previous_msgctxt, self.previous_msgid,
         self.previous_msgid_plural) = message.previous
        self.obsolete = message.msgid_token.obsolete
        self.msgid_line = message.msgid_token.line + 1
        self.line = first + 1
        self.translator_comments: List[str] = []
        self.extracted_comments: List[str] = []
        self.references: List[str] = []
        self.flags: List[str] = []
        self._flag_lines: List[Tuple[int, List[str]]] = []
        for token in comments:
            kind = _comment_kind(token.value)
            text = token.value.rstrip("\r")
            if kind == "translator":
                self.translator_comments.append(text[1:] if text[:1] == " " else text)
            elif kind == "extracted":
                self.extracted_comments.append(text[1:].strip())
            elif kind == "reference":
                self.references.extend(text[1:].split())
            else:
                line_flags = _flags_of(text[1:])
                self.flags.extend(line_flags)
                self._flag_lines.append((token.line, line_flags))
        self._edits: Dict[int, List[bytes]] = {}
        self._inserts: Dict[int, List[bytes]] = {}

    def __repr__(self):
        return (f"Entry(line={self.line}, msgctxt={self.msgctxt!r}, msgid={self.msgid!r}, "
                f"obsolete={self.obsolete})")

    @property
    def span(self):
        return self._catalog._offsets[self._first], self._catalog._offsets[self._last + 1]

    @property
    def fuzzy(self):
        return "fuzzy" in self.flags

    @property
    def is_header(self):
        return self.msgctxt is None and self.msgid == "" and not self.obsolete

    @property
    def changed(self):
        return bool(self._edits or self._inserts)

    def translated(self):
        """Every form has a translation (fuzzy or not)."""
        if self.msgid_plural is not None:
            return bool(self.msgstr_plural) and all(self.msgstr_plural.values())
        return bool(self.msgstr)

    def raw(self):
        """The entry's bytes as to_bytes() writes them (the bytes read if nothing changed)."""
        lines = self._catalog._lines
        out = []
        for index in range(self._first, self._last + 1):
            out.extend(self._inserts.get(index, ()))
            out.extend(self._edits.get(index, [lines[index]]))
        eol = self._catalog.eol
        out = [line if line.endswith(b"\n") else line + eol for line in out]
        if out and not lines[self._last].endswith(b"\n"):
            out[-1] = out[-1][:-len(eol)]
        return b"".join(out)

    def set_translation(self, msgstr=None, *, plural=None, nplurals=None, fuzzy=None,
                        drop_previous=False):
        """Sets the translation: `msgstr` for a singular entry, `plural` {k: text} for the
        forms of a plural entry (forms not given are kept; `nplurals` drops the forms k >=
        nplurals the language lacks). fuzzy=True adds the `fuzzy` flag (first, or a new `#,
        fuzzy` line before the previous-msgid lines and msgctxt/msgid, as msgmerge places it),
        False removes it, None leaves the flags. drop_previous removes the `#|` lines. Only the
        msgstr lines and the flags line are rewritten. NotEncodable when the catalog's charset
        cannot hold the text; ValueError for a call that does not fit the entry."""
        self._check_editable()
        if self.msgid_plural is None:
            if plural is not None or nplurals is not None or msgstr is None and fuzzy is None:
                raise ValueError(f"{self!r} is singular: give msgstr")
            forms = None
        else:
            if msgstr is not None:
                raise ValueError(f"{self!r} has plural forms: give plural={{k: text}}")
            forms = dict(self.msgstr_plural)
            forms.update(plural or {})
            if nplurals is not None:
                forms = {k: text for k, text in forms.items() if k < nplurals}
            if sorted(forms) != list(range(len(forms))) or not forms:
                raise ValueError(f"{self!r}: plural forms must be msgstr[0] .. msgstr[n-1], "
                                 f"got {sorted(forms)}")
        if msgstr is not None or forms is not None:
            lines = []
            if forms is None:
                lines += string_lines("msgstr", msgstr, formats=self.flags,
                                      encoding=self._catalog.encoding)
            else:
                for k in sorted(forms):
                    lines += string_lines(f"msgstr[{k}]", forms[k], formats=self.flags,
                                          encoding=self._catalog.encoding)
            section = self._catalog._encode(lines, self)
            start = self._message.first_msgstr.line
            self._edits.update({index: [] for index in range(start, self._last + 1)})
            self._edits[start] = section
            if forms is None:
                self.msgstr = msgstr
            else:
                self.msgstr_plural = forms
        if fuzzy is not None:
            self._set_fuzzy(fuzzy)
        if drop_previous:
            for token in self._message.tokens:
                if token.kind.startswith("PREV_"):
                    self._edits[token.line] = []
            self.previous_msgctxt = self.previous_msgid = self.previous_msgid_plural = None

    @property
    def rewritable(self):
        """set_translation can rewrite this entry's lines: not obsolete, not NotRewritable."""
        return not self.obsolete and self._why_not_rewritable() is None

    def _why_not_rewritable(self):
        if self._catalog._shared.get(self._first) or self._catalog._shared.get(self._last):
            return "shares a line with another entry"
        if any(self._first <= line <= self._last for line in self._catalog._continued):
            return "has a line continued by a backslash"
        first_msgstr = self._message.first_msgstr
        before = self._message.tokens[:self._message.tokens.index(first_msgstr)]
        if before and before[-1].line == first_msgstr.line:
            return "has its msgstr on its msgid's line"
        return None

    def _check_editable(self):
        if self.obsolete:
            raise ValueError(f"{self!r} is obsolete: msgmerge's, not a translator's")
        why = self._why_not_rewritable()
        if why:
            raise NotRewritable(f"{self._catalog.name}:{self.msgid_line}: the entry {why}: it "
                                "cannot be rewritten without changing what is not its "
                                "translation")

    def _set_fuzzy(self, fuzzy):
        """Rewrites the flags lines for fuzzy (from the lines as read, so calls can repeat)."""
        eol = self._catalog.eol
        anchor = self._message.tokens[0].line
        self._inserts.pop(anchor, None)
        flags = []
        for index, line_flags in self._flag_lines:
            self._edits.pop(index, None)
            flags += line_flags
        has_fuzzy = "fuzzy" in flags
        if fuzzy and not has_fuzzy:
            if self._flag_lines:
                index, line_flags = self._flag_lines[0]
                self._edits[index] = self._flags_line(["fuzzy"] + line_flags)
            else:
                self._inserts[anchor] = [b"#, fuzzy" + eol]
            flags = ["fuzzy"] + flags
        elif not fuzzy and has_fuzzy:
            for index, line_flags in self._flag_lines:
                if "fuzzy" in line_flags:
                    rest = [flag for flag in line_flags if flag != "fuzzy"]
                    self._edits[index] = self._flags_line(rest) if rest else []
            flags = [flag for flag in flags if flag != "fuzzy"]
        self.flags = flags

    def _flags_line(self, flags):
        return self._catalog._encode(["#, " + ", ".join(flags)], self)


# ---- the catalog --------------------------------------------------------------------------------

class Catalog:
    """A PO file as read: entries (header and obsolete ones included, in file order), and its
    lines, so that to_bytes() writes back every byte that was not changed."""

    def __init__(self, raw, name="<catalog>"):
        self.name = name
        self.encoding, self.charset = _encoding(raw, name)
        self._lines = _split_lines(raw)
        self._offsets = [0]
        for line in self._lines:
            self._offsets.append(self._offsets[-1] + len(line))
        self.eol = b"\r\n" if self._lines and self._lines[0].endswith(b"\r\n") else b"\n"
        self.entries: List[Entry] = []
        self._shared: Dict[int, bool] = {}
        self._header_changes: Dict[str, str] = {}
        self._continued: Dict[int, int] = {}
        self._read()

    def _read(self):
        lexer = _Lexer(self._lines, self.encoding, self.name)
        seen: Dict[Tuple[str, Optional[str], str], int] = {}
        owner: Dict[int, Entry] = {}
        for comments, message, domain in _Parser(lexer).messages():
            if message is None:
                continue
            key = (domain, message.msgctxt, message.msgid)
            line = message.msgid_token.line
            if key in seen:
                raise _error(self.name, line, "duplicate message definition (the first "
                                              f"definition is at line {seen[key] + 1})")
            seen[key] = line
            first = (comments or message.tokens)[0].line
            last = lexer.continued.get(message.tokens[-1].line, message.tokens[-1].line)
            entry = Entry(self, message, comments, first, last)
            for index in (entry._first, entry._last):
                if index in owner and owner[index] is not entry:
                    self._shared[index] = True
                owner[index] = entry
            self.entries.append(entry)
        self._continued = lexer.continued

    @property
    def header(self) -> Optional[Entry]:
        return next((entry for entry in self.entries if entry.is_header), None)

    def messages(self):
        """The entries a translator works on: not the header, not obsolete."""
        return [entry for entry in self.entries if not entry.obsolete and not entry.is_header]

    def _encode(self, lines, entry):
        out = []
        for line in lines:
            try:
                out.append(line.encode(self.encoding) + self.eol)
            except UnicodeEncodeError as error:
                raise NotEncodable(
                    f"{self.name}:{entry.msgid_line}: {line[error.start:error.end]!r} cannot be "
                    f"written in the catalog's charset {self.charset or self.encoding}") from None
        return out

    def to_bytes(self) -> bytes:
        """The catalog's bytes, in its charset: the file as read where nothing changed."""
        out, index = [], 0
        for entry in self.entries:
            out.append(b"".join(self._lines[index:entry._first]))
            if entry.changed:  # never one that shares a line: it cannot be changed
                out.append(entry.raw())
            else:  # a line shared with the entry before is written once
                out.append(b"".join(self._lines[max(index, entry._first):entry._last + 1]))
            index = entry._last + 1
        out.append(b"".join(self._lines[index:]))
        return b"".join(out)

    # ---- the header -----------------------------------------------------------------------------

    def header_fields(self) -> List[Tuple[str, str]]:
        """The header's fields in order, (name, value) as `Name: value` lines of its msgstr."""
        header = self.header
        fields = []
        for line in (header.msgstr or "").split("\n") if header else ():
            name, colon, value = line.partition(":")
            if colon and name.strip():
                fields.append((name.strip(), value.strip()))
        return fields

    def set_header_fields(self, fields: Mapping[str, str], fuzzy: Optional[bool] = None):
        """Sets header fields: a field the header has gets its lines rewritten where they stand,
        a new one is appended after the last; fuzzy=False drops the header's fuzzy flag. Lines of
        other fields stay as read. A header whose field lines do not stand one field per string
        (a hand-written one-line msgstr) is rewritten whole, as msgmerge writes it."""
        header = self.header
        if header is None:
            raise ValueError(f"{self.name} has no header entry to set {sorted(fields)} in")
        header._check_editable()
        changes = {**self._header_changes, **fields}
        text = _with_fields(header._message.msgstr, changes)
        try:
            edits = self._field_edits(header, changes)
        except _Unaligned:
            edits = {index: [] for index in range(header._message.first_msgstr.line,
                                                  header._last + 1)}
            edits[header._message.first_msgstr.line] = self._encode(
                string_lines("msgstr", text, encoding=self.encoding), header)
        self._header_changes, header.msgstr = changes, text  # nothing changed before here
        header._edits = {index: lines for index, lines in header._edits.items()
                         if index in dict(header._flag_lines)}
        header._edits.update(edits)
        if fuzzy is not None:
            header._set_fuzzy(fuzzy)

    def _field_edits(self, header, changes):
        """{line index: new lines} replacing each changed field's lines, appending new ones."""
        tokens = header._message.msgstr_strings
        bounds, offset = [], 0
        for token in tokens:
            bounds.append((offset, offset + len(token.value)))
            offset += len(token.value)
        text = header._message.msgstr
        edits: Dict[int, List[bytes]] = {}
        remaining = dict(changes)
        start = 0
        for line in re.findall(r"[^\n]*\n|[^\n]+", text):
            name = line.partition(":")[0].strip()
            end = start + len(line)
            if name in remaining and line.partition(":")[1]:
                first = [i for i, (a, _) in enumerate(bounds) if a == start]
                last = [i for i, (_, b) in enumerate(bounds) if b == end]
                if not first or not last or not self._own_lines(header, tokens, first[0],
                                                                 last[-1]):
                    raise _Unaligned()
                value = f"{name}: {remaining.pop(name)}" + ("\n" if line.endswith("\n") else "")
                for token in tokens[first[0]:last[-1] + 1]:
                    edits[token.line] = []
                edits[tokens[first[0]].line] = self._encode(
                    string_lines("msgstr", value, first_line=False, encoding=self.encoding),
                    header)
            start = end
        if remaining:
            if text and not text.endswith("\n"):
                raise _Unaligned()
            new = "".join(f"{name}: {value}\n" for name, value in remaining.items())
            last_line = header._last
            kept = edits.get(last_line, [self._lines[last_line]])
            edits[last_line] = kept + self._encode(
                string_lines("msgstr", new, first_line=False, encoding=self.encoding), header)
        return edits

    @staticmethod
    def _own_lines(header, tokens, first, last):
        """Whether tokens[first..last] stand alone on their lines."""
        lines = {token.line for token in tokens[first:last + 1]}
        others = [token for token in header._message.tokens
                  if token.line in lines and token not in tokens[first:last + 1]]
        return not others


class _Unaligned(Exception):
    """A header field does not stand in strings of its own."""


def _with_fields(text, changes):
    """The header msgstr `text` with the fields of `changes` set (new ones appended)."""
    lines, remaining = [], dict(changes)
    for line in re.findall(r"[^\n]*\n|[^\n]+", text or ""):
        name, colon, _ = line.partition(":")
        if colon and name.strip() in remaining:
            line = f"{name.strip()}: {remaining.pop(name.strip())}" + (
                "\n" if line.endswith("\n") else "")
        lines.append(line)
    if remaining and lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    lines += [f"{name}: {value}\n" for name, value in remaining.items()]
    return "".join(lines)


# ---- reading ------------------------------------------------------------------------------------

def parse(raw: bytes, name="<catalog>") -> Catalog:
    """The catalog in `raw` (bytes of a PO or POT file); `name` names it in errors."""
    return Catalog(raw, name)


def read(path) -> Catalog:
    """The catalog at `path`; a UserError naming the file (and line) for what cannot be read."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    return Catalog(raw, str(path))
