"""A PO string written as msgmerge and msgcat write it (gettext's write-po.c wrap): escapes, a
line break after each \\n, lines broken at 79 columns where Unicode allows as libunistring
breaks them (UAX #14), never inside a format directive, a `""` first line when the string has
several lines or wraps.
"""
import codecs
import re
import unicodedata

PAGE_WIDTH = 79  # msgmerge's and msgcat's default --width
ESCAPE = {"\a": "a", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t", "\v": "v",
          "\\": "\\", '"': '"'}


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
    ambiguous characters count two columns, as gettext counts them. An entry flagged `no-wrap`
    (in `formats`) is broken only after its \\n's."""
    cjk = codecs.lookup(encoding).name in _CJK_ENCODINGS
    if "\0" in text or "\x04" in text:
        raise ValueError("a PO string cannot hold NUL or the context separator <EOT>")
    portions = re.findall(r"[^\n]*\n|[^\n]+", text) or [""]
    inside = _inside_directives(text, formats)
    after_break = len(prefix) + 1
    # An entry flagged no-wrap is broken only after its "\n"s, as msgcat writes it.
    wrap_width = width - 1 - after_break if "no-wrap" not in formats else float("inf")
    lines, offset = [], 0
    for k, portion in enumerate(portions):
        chars, prohibited = [], []
        for index, c in enumerate(portion, offset):
            if c in ESCAPE:
                chars += ["\\", ESCAPE[c]]
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
