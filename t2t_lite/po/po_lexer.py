"""A PO or POT file's messages read as gettext reads them: the charset its header names, gettext's
lexer and grammar, and msgfmt's refusals (po/catalog_file.py makes entries of the messages).

Reading follows gettext's own lexer and grammar (read-po-lex.c, read-po-gram.y): the same
keywords, the same escapes (\\n \\t \\a \\b \\f \\r \\v \\\\ \\" \\ooo \\xhh), comments between
entries, `#~` obsolete and `#|` / `#~|` previous lines, several tokens on one line, a backslash
before a newline joining two lines. What msgfmt refuses is refused here, as one UserError
"FILE:LINE: what" (FILE:LINE:COLUMN where msgfmt gives a column) in msgfmt's words: an
unterminated string, an invalid control sequence, an unknown keyword, a token where none may
stand ("syntax error": junk between entries, a comment inside an entry, a second msgstr), a
missing msgstr / msgstr[] / msgid_plural section, plural forms out of order, inconsistent use of
#~, the context separator <EOT> in a string, bytes the header's charset cannot decode in a
string (in a comment msgfmt lets them be, and so does this), a byte order mark, and (refused
by po/catalog_file.py, in the same form) a duplicate message definition. An unterminated string
is named at its own line (msgfmt names the next one). Not checked here: what msgfmt checks of an
entry's content (a msgstr beginning or ending with "\\n" where the msgid does not, and with -c,
formats and the header): msgfmt -c judges the output.
"""
import codecs
import dataclasses
import re
from typing import Dict, List, Optional, Tuple

from t2t_lite.errors import UserError
from t2t_lite.po import iconv_codec

_CONTROL = {"n": "\n", "t": "\t", "b": "\b", "r": "\r", "f": "\f", "v": "\v", "a": "\a",
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


@dataclasses.dataclass
class _Token:
    kind: str  # COMMENT DOMAIN MSGCTXT MSGID MSGID_PLURAL MSGSTR PREV_* STRING PREV_STRING [ ]
    value: object  # NUMBER: int, STRING / COMMENT: str
    line: int  # 0-based line index
    end_col: int  # msgfmt's column after the token (1-based), for "syntax error"
    obsolete: bool


def error_at(name, line, message, col=None):
    """The UserError "FILE:LINE: message" (FILE:LINE:COL given `col`) for 0-based `line`."""
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
            raise error_at(name, line, f"{where} within string")
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
            raise error_at(name, line, "invalid control sequence", col)
    value = "".join(out)
    if escaped_bytes and _UNDECODED.search(value):  # bytes that may form characters
        value = value.encode(encoding, "surrogateescape").decode(encoding, "surrogateescape")
    if "\x04" in value:
        raise error_at(name, line, "context separator <EOT> within string")
    return value.partition("\0")[0], i + 1  # gettext's strings end at a NUL


def _undecodable(name, line, col, encoding):
    return error_at(name, line, f"invalid multibyte sequence: not valid {encoding} (the header's "
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
                raise error_at(name, line, f'keyword "{word}" unknown')
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


def split_lines(raw):
    lines = raw.split(b"\n")
    out = [line + b"\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


@dataclasses.dataclass
class Charset:
    """How a catalog's bytes are read and written, from the charset its header entry names."""
    name: Optional[str]  # as the header writes it; None where it names none (or CHARSET)
    reading: str  # the Python codec its strings are decoded with
    writing: str  # the codec new lines are encoded with
    header_end: int  # the last line index of the header entry (-1: none), read byte-wise


def _codec(charset):
    try:
        return codecs.lookup(charset).name
    except LookupError:
        return iconv_codec.lookup(charset)


def encoding_of(raw, name):
    """The catalog's Charset, found as msgfmt finds it (po_lex_charset_set): in the msgstr of
    the header entry (the first with msgid "", no context, not obsolete), read byte-wise as
    msgfmt reads what comes before it, the text after the first "charset=" (lower case) up to
    a space, tab or newline, wherever it stands (Content-Type split over strings, or no
    Content-Type at all). Lines through the header's are never refused for their bytes. A name
    neither Python nor iconv knows is read byte-wise and new lines written only in ASCII
    (msgfmt warns and copies its bytes)."""
    lines = split_lines(raw)
    try:
        charset, header_end = _header_charset(Lexer(lines, "latin-1", name))
    except UserError:  # before the header: the reading proper says it, in file order
        charset, header_end = None, -1
    if not charset or charset == "CHARSET":
        return Charset(charset or None, "utf-8", "utf-8", header_end)
    encoding = _codec(charset)
    if encoding is None:
        return Charset(charset, "latin-1", "ascii", header_end)
    if "\n\"#~|".encode(encoding, "replace") != b'\n"#~|':  # UTF-16, UTF-32: not a PO charset
        raise error_at(name, header_end, f"charset {charset!r} is not ASCII-compatible; gettext "
                                         "reads only ASCII-compatible charsets")
    return Charset(charset, encoding, encoding, header_end)


def _header_charset(lexer):
    """(the charset the header entry names or None, its last line index or -1)."""
    for _, message, _ in Parser(lexer).messages():
        if message is None:
            break
        if message.msgctxt is None and message.msgid == "" and message.msgstr is not None \
                and not message.msgid_token.obsolete:
            last = message.tokens[-1].line
            last = lexer.continued.get(last, last)
            found = message.msgstr.find("charset=")
            if found < 0:
                return None, last
            value = re.match(r"[^ \t\n]*", message.msgstr[found + len("charset="):]).group()
            return value or None, last
    return None, -1


def _decoded(lines, encoding, lenient_through):
    """Each line's text: the file decoded whole where it can be (one conversion), else line by
    line with undecodable bytes kept as surrogates (an error where the lexer meets them in a
    string), replaced in the lines through `lenient_through` (msgfmt reads them byte-wise)."""
    try:
        parts = b"".join(lines).decode(encoding).split("\n")
        texts = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
        if len(texts) == len(lines):
            return texts
    except UnicodeDecodeError:
        pass
    return [line.decode(encoding, "replace" if index <= lenient_through else "surrogateescape")
            for index, line in enumerate(lines)]


class Lexer:
    """Tokens of the whole file, read lazily (so errors come in file order), one lookahead."""

    def __init__(self, lines, encoding, name, lenient_through=-1):
        self.lines, self.name = lines, name
        self.encoding = encoding
        self._texts = _decoded(lines, encoding, lenient_through)
        self.continued: Dict[int, int] = {}  # first physical line -> last, of joined lines
        self._state: Dict[str, bool] = {}
        self._tokens = self._generate()
        self.peeked: Optional[_Token] = None

    def _generate(self):
        index = 0
        while index < len(self.lines):
            # Bytes the charset cannot decode are an error in a string or keyword, not in a
            # comment (as in msgfmt): they are kept as surrogates until the lexer sees them.
            text = self._texts[index]
            if index == 0 and text.startswith("\ufeff"):
                raise error_at(self.name, 0, "syntax error: the file starts with a byte order "
                                           "mark (BOM), which msgfmt does not accept; remove "
                                           "it", 2)
            first = index
            # gettext reads a backslash before a newline as no character at all (lex_getc):
            # the physical lines joined are one line for the lexer.
            while text.endswith("\\\n") and index + 1 < len(self.lines):
                index += 1
                text = text[:-2] + self._texts[index]
            if index > first:
                text = text.replace("\\\n", "")
                self.continued[first] = index
            if text.endswith("\\\n"):  # on the last line: no character, then the file's end
                text = text[:-2]
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
            return error_at(self.name, max(len(self.lines) - 1, 0),
                          "syntax error: the file ends inside an entry")
        if token.kind == "COMMENT":
            return error_at(self.name, token.line, "syntax error: a comment inside an entry")
        return error_at(self.name, token.line, "syntax error", token.end_col)


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


class Parser:
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
                raise error_at(self.name, msgid_token.line, "missing 'msgstr[]' section")
            message.first_msgstr = self.lex.peek()
            message.msgstr_plural = self._forms(tokens)
        elif self._at("MSGSTR"):
            message.first_msgstr = self.lex.take()
            tokens.append(message.first_msgstr)
            if self._at("["):
                raise error_at(self.name, msgid_token.line, "missing 'msgid_plural' section")
            start = len(tokens)
            message.msgstr = self._strings("STRING", tokens)
            message.msgstr_strings = tokens[start:]
        else:
            raise error_at(self.name, msgid_token.line, "missing 'msgstr' section")
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
                raise error_at(self.name, keyword.line, "first plural form has nonzero index"
                             if not forms else "plural form has wrong index")
            forms[number.value] = self._strings("STRING", tokens)
        return forms

    def _check_obsolete(self, message):
        obsolete = message.msgid_token.obsolete
        for token in message.tokens:
            if token.obsolete != obsolete:
                raise error_at(self.name, token.line, "inconsistent use of #~")

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
