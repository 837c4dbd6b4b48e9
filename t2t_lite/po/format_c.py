"""c-format and objc-format strings read as gettext 0.21's format-c.c reads them, and
compared as it compares them.

- c-format: `%%`; `%m$` positions (then every argument 1..max must be used, all positions or
  none); flags ` +-#0'` and, in a translation only, `I`; width and precision as digits, `*`
  or `*m$`; sizes hh h l ll L q j z Z t; conversions d i o u x X e E f F g G a A c C s S p n m
  and `%`; `%<PRIu64>`-style macros (in msgid and msgstr alike). Prose is read as msgfmt reads
  it: in "50% of", `% o` is a directive (flag ' ', conversion 'o').
- objc-format: the same, and `%@` (an object).

Each language is a parse (text -> (its directives, what the check compares), or
FormatError) and a check (the msgid's and the msgstr's compared values, strict or not,
and the two strings' names as msgfmt prints them -> msgfmt's message, or None);
po/formats.py picks them by flag.
"""
from t2t_lite.po.format_base import END, Directive, Scanner, bad_conversion

_INVALID_ARGNO_0 = "In the directive number {}, the {}argument number 0 is not a positive integer."
_MIXES_NUMBERED = ("The string refers to arguments both through absolute argument numbers and "
                   "through unnumbered argument specifications.")
_C99_MACRO = ("In the directive number {}, the token after '<' is not the name of a format "
              "specifier macro. The valid macro names are listed in ISO C 99 section 7.8.1.")
_ANGLE = "In the directive number {}, the token after '<' is not followed by '>'."
_C_BASIC = {"c": "c", "C": "c", "s": "s", "S": "s", "d": "i", "i": "i", "o": "i", "u": "i",
            "x": "i", "X": "i", "e": "f", "E": "f", "f": "f", "F": "f", "g": "f", "G": "f",
            "a": "f", "A": "f", "p": "p", "n": "n"}
_SIZES = {"h": "short", "hh": "char", "l": "long", "ll": "long long", "L": "long long",
          "q": "long long", "j": "intmax_t", "z": "size_t", "Z": "size_t", "t": "ptrdiff_t"}


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


class CParser(Scanner):
    """format-c-parse.h's format_parse_entrails over a str; at() gives '\\0' past the end."""

    def __init__(self, text, translated, objc):
        super().__init__(text)
        self.translated, self.objc = translated, objc
        self.count = 0
        self.numbered, self.unnumbered = [], []

    def run(self):
        self.scan("%", self.directive)
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
        self.fail(bad_conversion(self.count, c), i)

    def macro(self, i):
        """An ISO C 99 <inttypes.h> macro at i ('<PRIu64>'): (conversion, type, index of '>')."""
        start, i = i, i + 1
        for letter in "PRI":
            if self.at(i) != letter:
                self.fail(_C99_MACRO.format(self.count), i)
            i += 1
        c = self.at(i)
        if c not in "diouxX" or c == END:
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


def c_check(types1, types2, strict, pretty_msgid, pretty_msgstr):
    if (len(types1) != len(types2)) if strict else (len(types1) < len(types2)):
        return (f"number of format specifications in '{pretty_msgid}' and '{pretty_msgstr}' "
                "does not match")
    for i, (t1, t2) in enumerate(zip(types1, types2), start=1):
        if t1 != t2:
            return (f"format specifications in '{pretty_msgid}' and '{pretty_msgstr}' for "
                    f"argument {i} are not the same")
    return None
