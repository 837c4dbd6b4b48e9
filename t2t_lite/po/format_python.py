"""python-format and python-brace-format strings read as gettext 0.21's format-python.c
and format-python-brace.c read them, and compared as they compare them.

- python-format: `%(name)` (balanced parentheses) or unnamed, never both; flags `-+ #0`;
  width/precision digits or `*`; sizes h l L; conversions % c s r d i u o x X e E f g G. A
  name without a conversion (`%(x) `) is a directive whose conversion is the next character.
- python-brace-format: `{name}`, `{0}`, `.attr` and `[key]` chains, `:spec`; `{{` escapes.
  As in gettext 0.21, a `!r` conversion is invalid, a lone `}` is text, and an argument's
  name is the field's whole text (`{a:>10}` is named "a:>10", a different name from "a").

Each language is a parse (text -> (its directives, what the check compares), or
FormatError) and a check (the msgid's and the msgstr's compared values, strict or not,
and the two strings' names as msgfmt prints them -> msgfmt's message, or None);
po/formats.py picks them by flag.
"""
from t2t_lite.po.format_base import (END, UNTERMINATED, Directive, Scanner, bad_conversion,
                                     name_key)


# ---------------------------------------------------------------- python-format

_MIXES_NAMED = ("The string refers to arguments both through argument names and through "
                "unnamed argument specifications.")
_PY_TYPES = {"%": None, "c": "c", "s": "s", "r": "s", "i": "i", "d": "i", "u": "i", "o": "i",
             "x": "i", "X": "i", "e": "f", "E": "f", "f": "f", "g": "f", "G": "f"}
_ANY = "any"  # %.0s: an argument of any type


class PythonParser(Scanner):
    """format-python.c's format_parse over a str."""

    def __init__(self, text):
        super().__init__(text)
        self.count = 0
        self.named, self.unnamed = [], []

    def run(self):
        self.scan("%", self.directive)
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
            self.fail(UNTERMINATED, j - 1)
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
            self.fail(bad_conversion(self.count, c), i)
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
        if i >= len(names1) or (j < len(names2) and name_key(names1[i]) > name_key(names2[j])):
            return (f"a format specification for argument '{names2[j]}', as in "
                    f"'{pretty_msgstr}', doesn't exist in '{pretty_msgid}'")
        if j >= len(names2) or name_key(names1[i]) < name_key(names2[j]):
            if strict:
                return (f"a format specification for argument '{names1[i]}' doesn't exist in "
                        f"'{pretty_msgstr}'")
            i += 1
        else:
            i, j = i + 1, j + 1
    return None


def python_check(spec1, spec2, strict, pretty_msgid, pretty_msgstr):
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
    return message.split(END, 1)[0]


class BraceParser(Scanner):
    """format-python-brace.c's format_parse over a str."""

    def __init__(self, text):
        super().__init__(text)
        self.count = 0  # fields read so far: msgfmt's "directive number"
        self.names = []

    def fail(self, reason, position):
        super().fail(_truncated(reason), position)

    def run(self):
        self.scan("{", lambda i: self.directive(i, True))
        names = sorted(set(self.names), key=name_key)
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
                    self.fail(UNTERMINATED, j + 1)
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
            self.fail(UNTERMINATED, i)
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
                    self.fail(UNTERMINATED, i)
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


def brace_check(names1, names2, strict, pretty_msgid, pretty_msgstr):
    if not strict:
        return None
    for a, b in zip(names1 + [None], names2 + [None]):
        if a == b:
            continue
        if a is None or (b is not None and name_key(a) > name_key(b)):
            return f"a format specification for argument '{b}' doesn't exist in '{pretty_msgid}'"
        return f"a format specification for argument '{a}' doesn't exist in '{pretty_msgstr}'"
    return None
