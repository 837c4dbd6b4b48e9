"""Format strings read as GNU msgfmt (gettext 0.21) reads them, and msgfmt -c's verdict.

    directives("Copied 50% of %d files", "c-format")   # two: '% o' (flag ' ', 'o') and '%d'
    check_entry("%s%zd%zu %s", "%s%zd%z %s", "c-format")
    # "'msgstr' is not a valid C format string, unlike 'msgid'. Reason: In the directive
    #  number 3, the character ' ' is not a valid conversion specifier."

A catalog tool checks every entry with this before writing it: msgfmt -c rejects the whole
catalog for one bad entry. The rules are those of gettext's format-c.c (also objc-format),
format-python.c, format-python-brace.c, format-qt.c, format-qt-plural.c, format-kde.c, format.c
and msgl-check.c, rewritten in Python:

- c-format: `%%`; `%m$` positions (then every argument 1..max must be used, all positions or
  none); flags ` +-#0'` and, in a translation only, `I`; width and precision as digits, `*`
  or `*m$`; sizes hh h l ll L q j z Z t; conversions d i o u x X e E f F g G a A c C s S p n m
  and `%`; `%<PRIu64>`-style macros (in msgid and msgstr alike). Prose is read as msgfmt reads
  it: in "50% of", `% o` is a directive (flag ' ', conversion 'o').
- python-format: `%(name)` (balanced parentheses) or unnamed, never both; flags `-+ #0`;
  width/precision digits or `*`; sizes h l L; conversions % c s r d i u o x X e E f g G. A
  name without a conversion (`%(x) `) is a directive whose conversion is the next character.
- python-brace-format: `{name}`, `{0}`, `.attr` and `[key]` chains, `:spec`; `{{` escapes.
  As in gettext 0.21, a `!r` conversion is invalid, a lone `}` is text, and an argument's
  name is the field's whole text (`{a:>10}` is named "a:>10", a different name from "a").
- qt-format: `%` then an optional `L`, then one or two digits: `%0`..`%99` (`%05` is 5,
  `%123` is `%12` and a '3'). Everything else is text, `%%` too (so `%%1` holds `%1`); never
  invalid. A msgid with no `L` and no two-digit number is "simple" and its msgstr must be too.
- qt-plural-format: `%n` or `%Ln`, the count; only whether there is one matters.
- kde-format: `%` then a digit 1-9 and all the digits after it (`%10`; `%0`, `%L1` and `%%`
  are not directives; numbers wrap as C's unsigned int). Invalid when the numbers used are
  neither 1..n nor 1..n but one ("%2 of %4" ignores 1 and 3). kde-kuit-format (KUIT markup,
  judged by libxml2's messages) is not read here.

How a translation is compared (format.c): the msgid's directives, or msgid_plural's for every
msgstr[k] of a plural entry, against the msgstr's. An invalid msgid is not checked at all.
Strict (same arguments, same types, same names) unless the entry is plural with at least two
forms and msgid's Plural-Forms formula selects form k fewer than 5 times in n = 0..1000
(plural.PluralForms.often); relaxed, a c-format msgstr may leave out trailing arguments, a
python-format msgstr named ones (unnamed counts must still be equal), a python-brace msgstr
anything, a kde-format msgstr one of the msgid's numbers (the "%1 day" of a singular form may
read "one day"), a qt-plural msgstr the count; qt-format is the same strict or relaxed.
msgfmt -c also checks that msgid and msgstr both begin and both end with a newline, or neither
does; entry_errors includes that. Texts are str; positions are indices into them.
"""
import dataclasses
import functools

from t2t_lite.po import plural as plural_mod

# Every format language msgfmt 0.21 knows, in its order of checks (message.h's enum
# format_type); a flag for one outside LANGUAGES is unsupported here.
ALL_LANGUAGES = (
    "c", "objc", "python", "python-brace", "java", "java-printf", "csharp", "javascript",
    "scheme", "lisp", "elisp", "librep", "ruby", "sh", "awk", "lua", "object-pascal",
    "smalltalk", "qt", "qt-plural", "kde", "kde-kuit", "boost", "tcl", "perl", "perl-brace",
    "php", "gcc-internal", "gfc-internal", "ycp")
_READ = ("c", "objc", "python", "python-brace", "qt", "qt-plural", "kde")
LANGUAGES = tuple(name for name in ALL_LANGUAGES if name in _READ)  # msgfmt's order of checks
PRETTY = {"c": "C", "objc": "Objective C", "python": "Python", "python-brace": "Python brace",
          "qt": "Qt", "qt-plural": "Qt plural", "kde": "KDE"}
_END = "\0"


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


def _language(flag):
    """'c-format' -> 'c'; a bare language name is accepted too."""
    name = flag[:-len("-format")] if flag.endswith("-format") else flag
    if name not in ALL_LANGUAGES:
        raise ValueError(f"not a gettext format flag: {flag!r}")
    if name not in LANGUAGES:
        raise UnsupportedFormat(f"{flag}: msgfmt checks it, this module does not read it")
    return name


def format_flags(flags):
    """The format flags msgfmt -c checks for an entry with these flags (an iterable of flag
    words, or one comma-separated string), in msgfmt's order: `c-format` and
    `possible-c-format` are checked, `no-c-format`, `impossible-c-format` and no word are not;
    of several words for one language the last wins. Unknown words are ignored, as msgfmt
    does. The names come back as 'c-format' etc., flags outside LANGUAGES included (check_entry
    refuses those with UnsupportedFormat)."""
    if isinstance(flags, str):
        flags = flags.replace(",", " ").split()
    state = {}
    for word in flags:
        word = word.strip()
        if not word.endswith("-format"):
            continue
        name, value = word[:-len("-format")], True
        for prefix, meaning in (("no-", False), ("possible-", True), ("impossible-", False)):
            if name.startswith(prefix) and name[len(prefix):] in ALL_LANGUAGES:
                name, value = name[len(prefix):], meaning
                break
        if name in ALL_LANGUAGES:
            state[name] = value
    return tuple(f"{name}-format" for name in ALL_LANGUAGES if state.get(name))


# ---------------------------------------------------------------- c-format and objc-format

_INVALID_ARGNO_0 = "In the directive number {}, the {}argument number 0 is not a positive integer."
_MIXES_NUMBERED = ("The string refers to arguments both through absolute argument numbers and "
                   "through unnumbered argument specifications.")
_UNTERMINATED = "The string ends in the middle of a directive."
_C99_MACRO = ("In the directive number {}, the token after '<' is not the name of a format "
              "specifier macro. The valid macro names are listed in ISO C 99 section 7.8.1.")
_ANGLE = "In the directive number {}, the token after '<' is not followed by '>'."
_C_BASIC = {"c": "c", "C": "c", "s": "s", "S": "s", "d": "i", "i": "i", "o": "i", "u": "i",
            "x": "i", "X": "i", "e": "f", "E": "f", "f": "f", "F": "f", "g": "f", "G": "f",
            "a": "f", "A": "f", "p": "p", "n": "n"}
_SIZES = {"h": "short", "hh": "char", "l": "long", "ll": "long long", "L": "long long",
          "q": "long long", "j": "intmax_t", "z": "size_t", "Z": "size_t", "t": "ptrdiff_t"}


def _bad_conversion(number, char):
    if char == _END:
        return _UNTERMINATED
    if " " <= char <= "~":
        return (f"In the directive number {number}, the character '{char}' is not a valid "
                "conversion specifier.")
    return (f"The character that terminates the directive number {number} is not a valid "
            "conversion specifier.")


def _c_type(conversion, size):
    """gettext's argument type, written as its test program prints it ('[unsigned][size_t]i');
    None for a directive that takes no argument."""
    if conversion in "%m":
        return None
    if conversion == "@":
        return "@"
    basic = _C_BASIC[conversion]
    unsigned = "[unsigned]" if conversion in "ouxX" else ""
    if conversion in "CS":
        size = "long"
    elif basic in "cs":
        size = "long" if size in ("long", "long long") else ""
    elif basic == "f":
        size = "long long" if size == "long long" else ""
    elif basic == "p":
        size = ""
    return unsigned + (f"[{size}]" if size else "") + basic


class _CParser:
    """format-c-parse.h's format_parse_entrails over a str; at() gives '\\0' past the end."""

    def __init__(self, text, translated, objc):
        self.text = text.split(_END, 1)[0]
        self.translated, self.objc = translated, objc
        self.count = 0
        self.numbered, self.unnumbered = [], []
        self.found = []

    def at(self, i):
        return self.text[i] if i < len(self.text) else _END

    def fail(self, reason, position):
        raise FormatError(reason, position, self.found)

    def run(self):
        i = 0
        while i < len(self.text):
            if self.text[i] != "%":
                i += 1
                continue
            i = self.directive(i)
        return self.found, self.argument_types()

    def digits(self, i):
        """(value as C's unsigned int, index after the digits)."""
        m = 0
        while self.at(i).isdigit() and self.at(i).isascii():
            m = (10 * m + ord(self.at(i)) - 48) & 0xFFFFFFFF
            i += 1
        return m, i

    def position(self, i, what):
        """A 'digits$' at i: (number, index after '$'), or (0, i) when there is none."""
        if not ("0" <= self.at(i) <= "9"):
            return 0, i
        m, j = self.digits(i)
        if self.at(j) != "$":
            return 0, i
        if m == 0:
            self.fail(_INVALID_ARGNO_0.format(self.count, what), j)
        return m, j + 1

    def take(self, number, arg_type, position):
        """Record one argument, refusing a mix of numbered and unnumbered ones."""
        if number:
            if self.unnumbered:
                self.fail(_MIXES_NUMBERED, position)
            self.numbered.append((number, arg_type))
        else:
            if self.numbered:
                self.fail(_MIXES_NUMBERED, position)
            self.unnumbered.append(arg_type)
        return (number or None, arg_type)

    def star(self, i, what, args):
        """A width or precision at i: '*', '*m$' or digits; returns the index after it."""
        if self.at(i) == "*":
            number, i = self.position(i + 1, what)
            args.append(self.take(number, "i", i - 1))
            return i
        return self.digits(i)[1]

    def directive(self, start):
        self.count += 1
        number, i = self.position(start + 1, "")
        while self.at(i) in " +-#0'" or (self.translated and self.at(i) == "I"):
            i += 1
        args = []
        i = self.star(i, "width's ", args)
        if self.at(i) == ".":
            i = self.star(i + 1, "precision's ", args)
        if self.at(i) == "<":
            conversion, arg_type, i = self.macro(i)
        else:
            conversion, arg_type, i = self.conversion(i)
        if arg_type is not None:
            args.append(self.take(number, arg_type, i))
        self.found.append(Directive(start, i + 1, self.text[start:i + 1], conversion,
                                    number or None, None, tuple(args)))
        return i + 1

    def conversion(self, i):
        """Size letters then the conversion character: (conversion, type, its index)."""
        size = ""
        while self.at(i) in "hlLqjzZt":
            c = self.at(i)
            if c == "h":
                size = "char" if size in ("short", "char") else "short"
            elif c == "l":
                size = "long long" if size in ("long", "long long") else "long"
            else:
                size = _SIZES[c]
            i += 1
        c = self.at(i)
        if c in _C_BASIC or c in "%m" or (c == "@" and self.objc):
            return c, _c_type(c, size), i
        self.fail(_bad_conversion(self.count, c), i)

    def macro(self, i):
        """An ISO C 99 <inttypes.h> macro at i ('<PRIu64>'): (conversion, type, index of '>')."""
        start, i = i, i + 1
        for letter in "PRI":
            if self.at(i) != letter:
                self.fail(_C99_MACRO.format(self.count), i)
            i += 1
        c = self.at(i)
        if c not in "diouxX" or c == _END:
            self.fail(_C99_MACRO.format(self.count), i)
        i += 1
        prefix = next((p for p in ("MAX", "PTR", "LEAST", "FAST") if self.text.startswith(p, i)),
                      "")
        i += len(prefix)
        bits = ""
        if prefix in ("", "LEAST", "FAST"):
            bits = next((b for b in ("8", "16", "32", "64") if self.text.startswith(b, i)), "")
            if not bits:
                self.fail(_C99_MACRO.format(self.count), i)
            i += len(bits)
        if self.at(i) != ">":
            self.fail(_ANGLE.format(self.count), i)
        size = {"MAX": "intmax_t", "PTR": "intptr_t"}.get(
            prefix, f"int{prefix.lower() and '_' + prefix.lower()}{bits}_t")
        unsigned = "[unsigned]" if c in "ouxX" else ""
        return self.text[start:i + 1], f"{unsigned}[{size}]i", i

    def argument_types(self):
        """The arguments' types in order: numbered ones merged and checked for gaps."""
        if not self.numbered:
            return list(self.unnumbered)
        merged = {}
        clash = None
        for number, arg_type in sorted(self.numbered, key=lambda item: item[0]):
            if number in merged and merged[number] != arg_type:
                clash = clash or number
                arg_type = None
            merged[number] = arg_type
        if clash is not None:
            self.fail(f"The string refers to argument number {clash} in incompatible ways.",
                      len(self.text))
        for expected, number in enumerate(sorted(merged), start=1):
            if number != expected:
                self.fail(f"The string refers to argument number {number} but ignores argument "
                          f"number {expected}.", len(self.text))
        return [merged[n] for n in sorted(merged)]


def _c_check(types1, types2, strict, pretty_msgid, pretty_msgstr):
    if (len(types1) != len(types2)) if strict else (len(types1) < len(types2)):
        return (f"number of format specifications in '{pretty_msgid}' and '{pretty_msgstr}' "
                "does not match")
    for i, (t1, t2) in enumerate(zip(types1, types2), start=1):
        if t1 != t2:
            return (f"format specifications in '{pretty_msgid}' and '{pretty_msgstr}' for "
                    f"argument {i} are not the same")
    return None


# ---------------------------------------------------------------- python-format

_MIXES_NAMED = ("The string refers to arguments both through argument names and through "
                "unnamed argument specifications.")
_PY_TYPES = {"%": None, "c": "c", "s": "s", "r": "s", "i": "i", "d": "i", "u": "i", "o": "i",
             "x": "i", "X": "i", "e": "f", "E": "f", "f": "f", "g": "f", "G": "f"}
_ANY = "any"  # %.0s: an argument of any type


class _PythonParser:
    """format-python.c's format_parse over a str."""

    def __init__(self, text):
        self.text = text.split(_END, 1)[0]
        self.count = 0
        self.named, self.unnamed, self.found = [], [], []

    def at(self, i):
        return self.text[i] if i < len(self.text) else _END

    def fail(self, reason, position):
        raise FormatError(reason, position, self.found)

    def run(self):
        i = 0
        while i < len(self.text):
            if self.text[i] != "%":
                i += 1
                continue
            i = self.directive(i)
        return self.found, (self.merged_names(), list(self.unnamed))

    def name(self, i):
        """A '(name)' at i, parentheses balanced: (name, index after ')') or (None, i)."""
        if self.at(i) != "(":
            return None, i
        depth, j = 0, i + 1
        while j < len(self.text):
            if self.text[j] == "(":
                depth += 1
            elif self.text[j] == ")":
                if depth == 0:
                    break
                depth -= 1
            j += 1
        if j >= len(self.text):
            self.fail(_UNTERMINATED, j - 1)
        return self.text[i + 1:j], j + 1

    def star(self, i, args):
        if self.at(i) == "*":
            if self.named:
                self.fail(_MIXES_NAMED, i)
            self.unnamed.append("i")
            args.append((None, "i"))
            return i + 1, False
        zero = self.at(i).isdigit() and self.at(i).isascii()
        while self.at(i).isdigit() and self.at(i).isascii():
            zero = zero and self.at(i) == "0"
            i += 1
        return i, zero

    def directive(self, start):
        self.count += 1
        name, i = self.name(start + 1)
        while self.at(i) in "-+ #0":
            i += 1
        args = []
        i = self.star(i, args)[0]
        zero_precision = False
        if self.at(i) == ".":
            i, zero_precision = self.star(i + 1, args)
        if self.at(i) in "hlL":
            i += 1
        c = self.at(i)
        if c not in _PY_TYPES:
            self.fail(_bad_conversion(self.count, c), i)
        arg_type = _ANY if c in "sr" and zero_precision else _PY_TYPES[c]
        if name is not None:
            if self.unnamed:
                self.fail(_MIXES_NAMED, i)
            self.named.append((name, arg_type))
            args.append((name, arg_type))
        elif c != "%":
            if self.named:
                self.fail(_MIXES_NAMED, i)
            self.unnamed.append(arg_type)
            args.append((None, arg_type))
        self.found.append(Directive(start, i + 1, self.text[start:i + 1], c, None, name,
                                    tuple(args)))
        return i + 1

    def merged_names(self):
        """[(name, type)] sorted as strcmp sorts them, duplicates merged (an 'any' merges)."""
        merged = []
        for name, arg_type in sorted(self.named, key=lambda item: item[0].encode("utf-8")):
            if merged and merged[-1][0] == name:
                before = merged[-1][1]
                if arg_type == before or before == _ANY:
                    merged[-1] = (name, arg_type)
                elif arg_type != _ANY:
                    self.fail(f"The string refers to the argument named '{name}' in "
                              "incompatible ways.", len(self.text))
                continue
            merged.append((name, arg_type))
        return merged


def _names_differ(names1, names2, strict, pretty_msgid, pretty_msgstr):
    """format-python.c's name comparison of two sorted name lists."""
    i = j = 0
    while i < len(names1) or j < len(names2):
        if i >= len(names1) or (j < len(names2) and _key(names1[i]) > _key(names2[j])):
            return (f"a format specification for argument '{names2[j]}', as in "
                    f"'{pretty_msgstr}', doesn't exist in '{pretty_msgid}'")
        if j >= len(names2) or _key(names1[i]) < _key(names2[j]):
            if strict:
                return (f"a format specification for argument '{names1[i]}' doesn't exist in "
                        f"'{pretty_msgstr}'")
            i += 1
        else:
            i, j = i + 1, j + 1
    return None


def _key(name):
    return name.encode("utf-8")


def _python_check(spec1, spec2, strict, pretty_msgid, pretty_msgstr):
    (named1, unnamed1), (named2, unnamed2) = spec1, spec2
    if named1 and unnamed2:
        return (f"format specifications in '{pretty_msgid}' expect a mapping, those in "
                f"'{pretty_msgstr}' expect a tuple")
    if unnamed1 and named2:
        return (f"format specifications in '{pretty_msgid}' expect a tuple, those in "
                f"'{pretty_msgstr}' expect a mapping")
    if named1 or named2:
        reason = _names_differ([n for n, _ in named1], [n for n, _ in named2], strict,
                               pretty_msgid, pretty_msgstr)
        if reason:
            return reason
        types1 = dict(named1)
        for name, t2 in named2:
            t1 = types1[name]
            if not (t1 == t2 or (not strict and _ANY in (t1, t2))):
                return (f"format specifications in '{pretty_msgid}' and '{pretty_msgstr}' for "
                        f"argument '{name}' are not the same")
    if unnamed1 or unnamed2:
        if len(unnamed1) != len(unnamed2):
            return (f"number of format specifications in '{pretty_msgid}' and "
                    f"'{pretty_msgstr}' does not match")
        for i, (t1, t2) in enumerate(zip(unnamed1, unnamed2), start=1):
            if not (t1 == t2 or (not strict and _ANY in (t1, t2))):
                return (f"format specifications in '{pretty_msgid}' and '{pretty_msgstr}' for "
                        f"argument {i} are not the same")
    return None


# ---------------------------------------------------------------- python-brace-format

def _truncated(message):
    """msgfmt builds its message with printf's %c: a NUL character ends the message there."""
    return message.split(_END, 1)[0]


class _BraceParser:
    """format-python-brace.c's format_parse over a str."""

    def __init__(self, text):
        self.text = text.split(_END, 1)[0]
        self.count = 0  # fields read so far: msgfmt's "directive number"
        self.names, self.found = [], []

    def at(self, i):
        return self.text[i] if i < len(self.text) else _END

    def fail(self, reason, position):
        raise FormatError(_truncated(reason), position, self.found)

    def run(self):
        i = 0
        while i < len(self.text):
            if self.text[i] == "{":
                i = self.directive(i, True)
            else:
                i += 1
        names = sorted(set(self.names), key=_key)
        return self.found, names

    def identifier(self, i, numeric):
        """The index after a name ([_A-Za-z][_A-Za-z0-9]*) or, if numeric, digits at i;
        i itself when there is none."""
        c = self.at(i)
        if c.isascii() and (c.isalpha() or c == "_"):
            while self.at(i).isascii() and (self.at(i).isalnum() or self.at(i) == "_"):
                i += 1
        elif numeric and "0" <= c <= "9":
            while "0" <= self.at(i) <= "9":
                i += 1
        return i

    def field(self, i):
        """A field name with its .attr and [key] chain at i: the index after it."""
        j = self.identifier(i, numeric=True)
        if j == i:
            self.fail(f"In the directive number {self.count}, '{self.at(i)}' cannot start a "
                      "field name.", i)
        i = j
        while self.at(i) in ".[":
            if self.at(i) == ".":
                j = self.identifier(i + 1, numeric=False)
                if j == i + 1:
                    self.fail(f"In the directive number {self.count}, '{self.at(j)}' cannot "
                              "start a getattr argument.", j)
                i = j
            else:
                j = self.identifier(i + 1, numeric=True)
                if j == i + 1:
                    self.fail(f"In the directive number {self.count}, '{self.at(j)}' cannot "
                              "start a getitem argument.", j)
                if self.at(j) != "]":
                    self.fail(_UNTERMINATED, j + 1)
                i = j + 1
        return i

    def spec(self, i):
        """The standard format specifier after ':' at i; the index of its closing '}'."""
        if self.at(i + 1) in "<>=^":
            i += 2
        elif self.at(i) in "<>=^":
            i += 1
        for chars in ("+- ", "#", "0"):
            if self.at(i) in chars:
                i += 1
        while "0" <= self.at(i) <= "9":
            i += 1
        if self.at(i) == ".":
            i += 1
            while "0" <= self.at(i) <= "9":
                i += 1
        if self.at(i) in "bcdoxXneEfFgG%":
            i += 1
        if self.at(i) != "}":
            self.fail(_UNTERMINATED, i)
        return i

    def directive(self, start, toplevel):
        """A '{' at start: '{{', or a field; returns the index after it."""
        if self.at(start + 1) == "{":
            return start + 2
        i = self.field(start + 1)
        if self.at(i) == ":":
            if not toplevel:
                self.fail(f"In the directive number {self.count}, no more nesting is allowed "
                          "in a format specifier.", i)
            if self.at(i + 1) == "{":
                i = self.directive(i + 1, False)
                if self.at(i) != "}":
                    self.fail(_UNTERMINATED, i)
            else:
                i = self.spec(i + 1)
        if self.at(i) != "}":
            self.fail(f"In the directive number {self.count}, there is an unterminated format "
                      "directive.", i)
        if toplevel:
            name = self.text[start + 1:i]
            self.count += 1
            self.names.append(name)
            self.found.append(Directive(start, i + 1, self.text[start:i + 1], "", None, name,
                                        ((name, None),)))
        return i + 1


def _brace_check(names1, names2, strict, pretty_msgid, pretty_msgstr):
    if not strict:
        return None
    for a, b in zip(names1 + [None], names2 + [None]):
        if a == b:
            continue
        if a is None or (b is not None and _key(a) > _key(b)):
            return f"a format specification for argument '{b}' doesn't exist in '{pretty_msgid}'"
        return f"a format specification for argument '{a}' doesn't exist in '{pretty_msgstr}'"
    return None


# ---------------------------------------------------------------- qt, qt-plural, kde

_UINT = 0xFFFFFFFF


def _qt_parse(text):
    """format-qt.c: `%` then an optional `L`, then one or two digits (`%0`..`%99`, `%05` is
    argument 5); anything else, `%%` included, is text (and `%%1` holds `%1`). Never invalid.
    Compared: whether the string is "simple" (no `L`, no two-digit number) and the set of
    argument numbers used."""
    text = text.split(_END, 1)[0]
    found, used, simple = [], set(), True
    i = 0
    while i < len(text):
        if text[i] != "%":
            i += 1
            continue
        start, i = i, i + 1
        locale = text[i:i + 1] == "L"
        if locale:
            i += 1
        if not ("0" <= text[i:i + 1] <= "9") or i >= len(text):
            continue
        number, i = ord(text[i]) - 48, i + 1
        if "0" <= text[i:i + 1] <= "9" and i < len(text):
            number, i = 10 * number + ord(text[i]) - 48, i + 1
            simple = False
        simple = simple and not locale
        used.add(number)
        found.append(Directive(start, i, text[start:i], "", number, None, ((number, None),)))
    return found, (simple, frozenset(used))


def _qt_check(spec1, spec2, strict, pretty_msgid, pretty_msgstr):
    """The same numbers on both sides, strict or not (a missing %n warns at run time)."""
    (simple1, used1), (simple2, used2) = spec1, spec2
    if simple1 and not simple2:
        return (f"'{pretty_msgid}' is a simple format string, but '{pretty_msgstr}' is not: it "
                "contains an 'L' flag or a double-digit argument number")
    for number in sorted(used1 ^ used2)[:1]:
        if number in used1:
            return (f"a format specification for argument {number} doesn't exist in "
                    f"'{pretty_msgstr}'")
        return (f"a format specification for argument {number}, as in '{pretty_msgstr}', "
                f"doesn't exist in '{pretty_msgid}'")
    return None


def _qt_plural_parse(text):
    """format-qt-plural.c: `%n` or `%Ln`, each replaced by QObject::tr's count. Compared: how
    many there are."""
    text = text.split(_END, 1)[0]
    found = []
    i = 0
    while i < len(text):
        if text[i] != "%":
            i += 1
            continue
        start, i = i, i + 1
        if text[i:i + 1] == "L":
            i += 1
        if text[i:i + 1] == "n":
            i += 1
            found.append(Directive(start, i, text[start:i], "n", None, None, ((None, "n"),)))
    return found, len(found)


def _qt_plural_check(count1, count2, strict, pretty_msgid, pretty_msgstr):
    """A msgstr may not use the count when the msgid does not, nor (strict) leave it out."""
    if (count1 == 0 and count2 > 0) or (strict and count1 > 0 and count2 == 0):
        return (f"number of format specifications in '{pretty_msgid}' and '{pretty_msgstr}' "
                "does not match")
    return None


class _KdeParser:
    """format-kde.c's format_parse over a str: `%` then a digit 1-9 and every digit after it
    (`%10` is argument 10, `%0` and `%L1` are text, `%%1` holds `%1`); numbers are C's
    unsigned int, wrapping. The numbers used must be 1..n, or 1..n but one."""

    def __init__(self, text):
        self.text = text.split(_END, 1)[0]

    def run(self):
        text, found = self.text, []
        i = 0
        while i < len(text):
            if text[i] != "%":
                i += 1
                continue
            start, i = i, i + 1
            if not ("1" <= text[i:i + 1] <= "9") or i >= len(text):
                continue
            number = 0
            while i < len(text) and "0" <= text[i] <= "9":
                number = (10 * number + ord(text[i]) - 48) & _UINT
                i += 1
            found.append(Directive(start, i, text[start:i], "", number, None, ((number, None),)))
        # Sorted as gettext sorts them: number - 1 unsigned, so an overflowed 0 comes last.
        numbers = sorted({d.number for d in found}, key=lambda n: (n - 1) & _UINT)
        for i, number in enumerate(numbers):
            if number > i + 1:
                first_gap = i + 1
                for j in range(i, len(numbers)):
                    if numbers[j] > j + 2:
                        raise FormatError(
                            f"The string refers to argument number {numbers[j]} but ignores the "
                            f"arguments {first_gap} and {j + 2}.", len(text), found)
                break
        return found, numbers


def _kde_check(numbers1, numbers2, strict, pretty_msgid, pretty_msgstr):
    """The same numbers; relaxed, the msgstr may leave out one of the msgid's."""
    i = j = 0
    missing = 0
    while i < len(numbers1) or j < len(numbers2):
        if i >= len(numbers1) or (j < len(numbers2) and numbers1[i] > numbers2[j]):
            return (f"a format specification for argument {numbers2[j]}, as in "
                    f"'{pretty_msgstr}', doesn't exist in '{pretty_msgid}'")
        if j >= len(numbers2) or numbers1[i] < numbers2[j]:
            if strict:
                return (f"a format specification for argument {numbers1[i]} doesn't exist in "
                        f"'{pretty_msgstr}'")
            if missing:
                return (f"a format specification for arguments {missing} and {numbers1[i]} "
                        f"doesn't exist in '{pretty_msgstr}', only one argument may be ignored")
            missing = numbers1[i]
            i += 1
        else:
            i, j = i + 1, j + 1
    return None


# ---------------------------------------------------------------- the API

def _parse(text, language, translated):
    """(directives, what the check compares) for text read as `language`, or FormatError."""
    if language in ("c", "objc"):
        return _CParser(text, translated, language == "objc").run()
    if language == "python":
        return _PythonParser(text).run()
    if language == "python-brace":
        return _BraceParser(text).run()
    if language == "qt":
        return _qt_parse(text)
    if language == "qt-plural":
        return _qt_plural_parse(text)
    return _KdeParser(text).run()


_CHECKS = {"c": _c_check, "objc": _c_check, "python": _python_check,
           "python-brace": _brace_check, "qt": _qt_check, "qt-plural": _qt_plural_check,
           "kde": _kde_check}


def directives(text, flag, *, translated=False):
    """The directives msgfmt reads in `text` for `flag` ('c-format', 'python-format', ...),
    in order; FormatError (msgfmt's reason, e.g. "In the directive number 2, the character
    'z' is not a valid conversion specifier.") when msgfmt finds it invalid. `translated`
    reads it as a msgstr (c-format then accepts the 'I' flag)."""
    return _parse(text, _language(flag), translated)[0]


def invalid_reason(text, flag, *, translated=False):
    """msgfmt's reason why `text` is not a valid format string of `flag`, or None."""
    try:
        directives(text, flag, translated=translated)
    except FormatError as e:
        return e.reason
    return None


GERMANIC = "nplurals=2; plural=n != 1;"  # msgfmt's formula when the header gives none


def _strict(msgid_plural, index, nforms, forms, range_):
    """msgl-check.c's choice between the strict and the relaxed check for msgstr[index]."""
    if msgid_plural is None or nforms <= 1:
        return True
    if not (index < forms.nplurals and forms.often(index)):
        return False
    if range_ is not None and range_[0] >= 0 and range_[1] >= 0:
        return forms.histogram(index, *range_) > 1
    return True


def format_error(msgid, msgstr, flag, *, msgid_plural=None, plural_index=None, nforms=None,
                 plural_forms=None, range_=None):
    """msgfmt -c's format check of one msgstr against msgid (or msgid_plural, for every form
    of a plural entry) for one flag: None when it passes or when the msgid itself is not a
    valid format string (msgfmt then checks nothing), else msgfmt's message."""
    language = _language(flag)
    try:
        spec1 = _parse(msgid_plural if msgid_plural is not None else msgid, language, False)[1]
    except FormatError:
        return None
    pretty_msgid = "msgid" if msgid_plural is None else "msgid_plural"
    pretty_msgstr = "msgstr" if msgid_plural is None else f"msgstr[{plural_index or 0}]"
    try:
        spec2 = _parse(msgstr, language, True)[1]
    except FormatError as e:
        return (f"'{pretty_msgstr}' is not a valid {PRETTY[language]} format string, unlike "
                f"'{pretty_msgid}'. Reason: {e.reason}")
    strict = True
    if msgid_plural is not None:
        forms = _plural_forms(plural_forms)
        nforms = nforms if nforms is not None else forms.nplurals
        strict = _strict(msgid_plural, plural_index or 0, nforms, forms, range_)
    return _CHECKS[language](spec1, spec2, strict, pretty_msgid, pretty_msgstr)


def _plural_forms(value):
    if isinstance(value, plural_mod.PluralForms):
        return value
    return _parsed(GERMANIC if value is None else value)


@functools.lru_cache(maxsize=64)
def _parsed(value):
    """plural.parse, once per header value (a tool checks thousands of entries)."""
    return plural_mod.parse(value)


def _newline_errors(msgid, msgid_plural, msgstrs, which, first_index=0):
    """msgl-check.c's tests 1 and 2: msgid and each msgstr both begin (end) with '\\n', or
    neither does."""
    test = (lambda s: s[:1] == "\n") if which == "begin" else (lambda s: s[-1:] == "\n")
    has = test(msgid)
    out = []
    if msgid_plural is not None and test(msgid_plural) != has:
        out.append(f"'msgid' and 'msgid_plural' entries do not both {which} with '\\n'")
    for j, s in enumerate(msgstrs, start=first_index):
        if test(s) != has:
            name = f"msgstr[{j}]" if msgid_plural is not None else "msgstr"
            out.append(f"'msgid' and '{name}' entries do not both {which} with '\\n'")
    return out


def entry_errors(msgid, msgstr, flags=(), *, msgid_plural=None, plural_forms=None,
                 range_=None):
    """Every error msgfmt -c counts for one entry, in msgfmt's order (it prints the first):
    newline tests, then for each format flag (format_flags) each msgstr form. `msgstr` is a
    str, or the list of msgstr[k] of a plural entry; `plural_forms` the catalog's
    Plural-Forms (a header value or plural.PluralForms; None: msgfmt's default n != 1); `range_`
    the entry's `#, range: a..b` as (a, b). An untranslated entry (msgstr or msgstr[0] empty)
    and the header (msgid "") are not checked, as msgfmt skips them; fuzziness is the caller's
    business (msgfmt checks fuzzy entries only with --use-fuzzy)."""
    msgstrs = [msgstr] if isinstance(msgstr, str) else list(msgstr)
    if msgid == "" or not msgstrs or msgstrs[0] == "":
        return []
    out = (_newline_errors(msgid, msgid_plural, msgstrs, "begin")
           + _newline_errors(msgid, msgid_plural, msgstrs, "end"))
    forms = _plural_forms(plural_forms) if msgid_plural is not None else None
    for flag in format_flags(flags):
        for k, text in enumerate(msgstrs):
            reason = format_error(msgid, text, flag, msgid_plural=msgid_plural, plural_index=k,
                                  nforms=len(msgstrs), plural_forms=forms, range_=range_)
            if reason:
                out.append(reason)
    return out


def check_entry(msgid, msgstr, flag, *, msgid_plural=None, plural_index=None, nforms=None,
                plural_forms=None, range_=None):
    """msgfmt -c's verdict on one msgstr: None when it passes, else the first reason. `flag`
    is one format flag ('c-format', ...) or None (then only the newline tests). For a plural
    entry give msgid_plural, plural_index (k of msgstr[k]), nforms (how many msgstr[] the
    entry has; default nplurals) and plural_forms (the header value or a PluralForms): every
    form is compared with msgid_plural, strictly for a form the formula takes often
    (plural.PluralForms.often), relaxed for the others. msgstr[0] == "" makes the entry
    untranslated (None); an empty msgstr[k>0] is checked like any other."""
    if msgid == "" or (msgstr == "" and not plural_index):
        return None
    # The msgid against msgid_plural is the entry's own matter, not this msgstr's: msgid_plural
    # is given here only to name the form and choose the text compared.
    reasons = [r for which in ("begin", "end")
               for r in _newline_errors(msgid, None if msgid_plural is None else "", [msgstr],
                                        which, plural_index or 0)
               if "'msgid_plural'" not in r]
    if reasons or flag is None:
        return reasons[0] if reasons else None
    return format_error(msgid, msgstr, flag, msgid_plural=msgid_plural,
                        plural_index=plural_index, nforms=nforms, plural_forms=plural_forms,
                        range_=range_)


def check_accelerators(msgid, msgstr, char="&", *, msgid_plural=None):
    """msgfmt --check-accelerators=char: a msgid with exactly one `char` needs exactly one in
    the msgstr, a doubled `char` not counting. None when it passes (or is not checked: plural
    entries, the header, untranslated entries), else msgfmt's message."""
    if msgid == "" or msgstr == "" or msgid_plural is not None or msgid.count(char) != 1:
        return None
    count, i = 0, msgstr.find(char)
    while i >= 0:
        if msgstr[i + 1:i + 2] == char:
            i += 1
        else:
            count += 1
        i = msgstr.find(char, i + 1)
    if count == 0:
        return f"msgstr lacks the keyboard accelerator mark '{char}'"
    if count > 1:
        return f"msgstr has too many keyboard accelerator marks '{char}'"
    return None
