"""qt-format, qt-plural-format and kde-format strings read as gettext 0.21's format-qt.c,
format-qt-plural.c and format-kde.c read them, and compared as they compare them.

- qt-format: `%` then an optional `L`, then one or two digits: `%0`..`%99` (`%05` is 5,
  `%123` is `%12` and a '3'). Everything else is text, `%%` too (so `%%1` holds `%1`); never
  invalid. A msgid with no `L` and no two-digit number is "simple" and its msgstr must be too.
- qt-plural-format: `%n` or `%Ln`, the count; only whether there is one matters.
- kde-format: `%` then a digit 1-9 and all the digits after it (`%10`; `%0`, `%L1` and `%%`
  are not directives; numbers wrap as C's unsigned int). Invalid when the numbers used are
  neither 1..n nor 1..n but one ("%2 of %4" ignores 1 and 3). kde-kuit-format (KUIT markup,
  judged by libxml2's messages) is not read here.

Each language is a parse (text -> (its directives, what the check compares), or
FormatError) and a check (the msgid's and the msgstr's compared values, strict or not,
and the two strings' names as msgfmt prints them -> msgfmt's message, or None);
po/formats.py picks them by flag.
"""
from t2t_lite.po.format_base import END, Directive, FormatError


_UINT = 0xFFFFFFFF


def qt_parse(text):
    """format-qt.c: `%` then an optional `L`, then one or two digits (`%0`..`%99`, `%05` is
    argument 5); anything else, `%%` included, is text (and `%%1` holds `%1`). Never invalid.
    Compared: whether the string is "simple" (no `L`, no two-digit number) and the set of
    argument numbers used."""
    text = text.split(END, 1)[0]
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


def qt_check(spec1, spec2, strict, pretty_msgid, pretty_msgstr):
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


def qt_plural_parse(text):
    """format-qt-plural.c: `%n` or `%Ln`, each replaced by QObject::tr's count. Compared: how
    many there are."""
    text = text.split(END, 1)[0]
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


def qt_plural_check(count1, count2, strict, pretty_msgid, pretty_msgstr):
    """A msgstr may not use the count when the msgid does not, nor (strict) leave it out."""
    if (count1 == 0 and count2 > 0) or (strict and count1 > 0 and count2 == 0):
        return (f"number of format specifications in '{pretty_msgid}' and '{pretty_msgstr}' "
                "does not match")
    return None


class KdeParser:
    """format-kde.c's format_parse over a str: `%` then a digit 1-9 and every digit after it
    (`%10` is argument 10, `%0` and `%L1` are text, `%%1` holds `%1`); numbers are C's
    unsigned int, wrapping. The numbers used must be 1..n, or 1..n but one."""

    def __init__(self, text):
        self.text = text.split(END, 1)[0]

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


def kde_check(numbers1, numbers2, strict, pretty_msgid, pretty_msgstr):
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
