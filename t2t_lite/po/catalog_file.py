"""A gettext catalog (PO or POT) read and written as gettext does, keeping every byte it does not
change (issue 51, points 2 and 3).

    catalog = catalog_file.read("de.po")          # or parse(data, name)
    for entry in catalog.messages():              # not the header, not obsolete entries
        if not entry.translated():
            entry.set_translation(msgstr="Hallo", fuzzy=True)   # plural={0: .., 1: ..}
    catalog.set_header_fields({"PO-Revision-Date": "2026-12-05 10:00+0000"}, fuzzy=False)
    data = catalog.to_bytes()                     # in the catalog's charset

Reading follows gettext's own lexer and grammar (read-po-lex.c, read-po-gram.y; po/po_lexer.py):
what msgfmt refuses is refused, as one UserError "FILE:LINE: what" in msgfmt's words, a
duplicate message definition included (same domain, msgctxt and msgid; obsolete entries count,
as msgfmt counts them).

Every entry keeps its raw lines. Changing an entry regenerates only its msgstr lines (written as
msgmerge and msgcat write strings, po/po_strings.py: 79 columns, Unicode line breaking as
libunistring breaks, no break inside a format directive, a `""` first line when the string has
several lines or wraps) and its `#,` flags line; changing the header regenerates only the lines
of the fields it sets. Everything else, the entry order, the spacing and the line ends (CRLF, a
missing last newline) included, is written back byte for byte: to_bytes() of a catalog nothing
was changed in is the file as read. A new translation the charset cannot encode raises
NotEncodable (the charset is never changed behind the caller's back).
"""
import re
from typing import Dict, List, Mapping, Optional, Tuple

from t2t_lite.errors import UserError
from t2t_lite.po import po_strings
from t2t_lite.po.po_lexer import Lexer, Parser, encoding_of, error_at, split_lines
from t2t_lite.po.po_strings import string_lines

_ESCAPE = po_strings.ESCAPE  # the escapes strings are written with, as tests/po/ use them


class NotRewritable(ValueError):
    """An entry whose lines cannot be rewritten without changing another's or its msgid's (it
    shares a line with another entry, has its msgstr on its msgid's line, or a line continued by
    a backslash): gettext reads it, the caller leaves it as it is. Entry.rewritable says so
    beforehand."""


class NotEncodable(UserError):
    """A new translation holds characters the catalog's charset cannot write; the caller decides
    (leave the entry, or convert the catalog), nothing is changed."""


# ---- comments -----------------------------------------------------------------------------------

def _flags_of(text):
    """The flags of a `#,` comment's text (after the comma), as gettext splits them."""
    return [flag for flag in re.split(r"[,\s]+", text) if flag]


def _comment_kind(text):
    return {".": "extracted", ":": "reference", ",": "flags"}.get(text[:1], "translator")


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
        self.domain = "messages"  # the `domain` directive it stands under
        self._edits: Dict[int, List[bytes]] = {}
        self._inserts: Dict[int, List[bytes]] = {}

    def __repr__(self):
        return (f"Entry(line={self.line}, msgctxt={self.msgctxt!r}, msgid={self.msgid!r}, "
                f"obsolete={self.obsolete})")

    @property
    def span(self):
        return self._catalog._offsets[self._first], self._catalog._offsets[self._last + 1]

    @property
    def last_line(self):
        """The 1-based line where the entry ends."""
        return self._last + 1

    @property
    def eol(self):
        """The line end of the entry's msgid line, for the lines written into it (a catalog of
        mixed line ends keeps each entry's own)."""
        line = self._catalog._lines[self.msgid_line - 1]
        return b"\r\n" if line.endswith(b"\r\n") else (
            b"\n" if line.endswith(b"\n") else self._catalog.eol)

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
        eol = self.eol
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
        eol = self.eol
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
        charset = encoding_of(raw, name)
        self.encoding, self.charset = charset.reading, charset.name
        self._writing, self._header_end = charset.writing, charset.header_end
        self._lines = split_lines(raw)
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
        lexer = Lexer(self._lines, self.encoding, self.name, self._header_end)
        seen: Dict[Tuple[str, Optional[str], str], int] = {}
        owner: Dict[int, Entry] = {}
        for comments, message, domain in Parser(lexer).messages():
            if message is None:
                continue
            key = (domain, message.msgctxt, message.msgid)
            line = message.msgid_token.line
            if key in seen:
                raise error_at(self.name, line, "duplicate message definition (the first "
                                              f"definition is at line {seen[key] + 1})")
            seen[key] = line
            first = (comments or message.tokens)[0].line
            last = lexer.continued.get(message.tokens[-1].line, message.tokens[-1].line)
            entry = Entry(self, message, comments, first, last)
            entry.domain = domain
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

    def can_hold(self, text):
        """Whether the catalog's charset can write text (a translation it cannot is left)."""
        try:
            text.encode(self._writing)
        except UnicodeEncodeError:
            return False
        return True

    def _encode(self, lines, entry):
        out = []
        for line in lines:
            try:
                out.append(line.encode(self._writing) + entry.eol)
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


def read_bytes(path) -> bytes:
    """The bytes at `path`, read to their end once (a file, a pipe, a FIFO, /dev/stdin); a
    UserError naming the file for what cannot be read."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None


def read(path) -> Catalog:
    """The catalog at `path`; a UserError naming the file (and line) for what cannot be read."""
    return Catalog(read_bytes(path), str(path))
