"""A Plural-Forms header value (`nplurals=N; plural=EXPR;`) read and checked as msgfmt does.

    forms = parse("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
                  "(n%100<10 || n%100>=20) ? 1 : 2);")
    forms.select(21)          # 0
    forms.samples[0]          # (1, 21, 31, 41, 51, 61, 71, 81)
    forms.singular_only(0)    # False: form 0 also serves 21, 31, ..., so it needs the number
    forms.often(0)            # True: msgfmt -c checks msgstr[0] strictly

The expression is parsed by a small recursive-descent parser with gettext's grammar and C
precedence (`?:` right-associative, `||`, `&&`, `== !=`, `< > <= >=`, `+ -`, `* / %`, `!`,
parentheses, decimal numbers, the variable `n`); it is never given to eval or exec. It is
evaluated as libintl does, in unsigned 64-bit arithmetic, with `||`, `&&` and `?:`
short-circuiting. As msgfmt -c does, the value is refused when the expression cannot be parsed,
when nplurals has no number, and when some n in 0..1000 gives a negative value, a value not
below nplurals, or a division by zero. Caps: an expression of at most MAX_LENGTH characters and
MAX_TOKENS tokens, nested at most MAX_DEPTH deep (msgfmt's own parser stack is its only limit;
real formulas stay far below all three).
"""
import dataclasses

MASK = (1 << 64) - 1
MAX_LENGTH = 1000
MAX_TOKENS = 400
MAX_DEPTH = 50
CHECKED = range(0, 1001)  # the n msgfmt -c evaluates
OFTEN = 5  # msgfmt treats a form that 5 of those n select as taken "infinitely often"
SAMPLE = 8
# Beyond 0..1000, singular_only also looks at these n (a formula may single out large numbers).
PROBES = tuple(sorted({base + d for base in (10 ** e for e in range(3, 10))
                       for d in range(0, 121)} | {2 ** 31 - 1, 2 ** 31, 2 ** 32 + 1}))


class PluralFormsError(ValueError):
    """A Plural-Forms value msgfmt would refuse; str() is the reason, in msgfmt's words."""


class _Refused(Exception):
    """Raised inside evaluation (division by zero)."""


_SINGLE = {"*": "mul", "/": "div", "%": "mod", "+": "add", "-": "sub", "n": "n", "?": "?",
           ":": ":", "(": "(", ")": ")"}
_BINARY_LEVELS = (("||",), ("&&",), ("==", "!="), ("<", ">", "<=", ">="), ("+", "-"),
                  ("*", "/", "%"))


def _tokens(text):
    """gettext's lexer: blanks and tabs skipped; ';', a newline or the end stop the
    expression; anything it does not know is an error."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c in " \t":
            i += 1
            continue
        if c in ";\n":
            break
        two = text[i:i + 2]
        if c.isdigit() and c.isascii():
            j = i
            while j < len(text) and text[j] in "0123456789":
                j += 1
            out.append(("num", int(text[i:j]) & MASK))
            i = j
            continue
        if two in ("==", "!=", "<=", ">=", "&&", "||"):
            out.append(("op", two))
            i += 2
            continue
        if c in "<>!*/%+-n?:()":
            out.append(("op", c))
            i += 1
            continue
        raise PluralFormsError(f"invalid plural expression: unexpected {c!r}")
    return out


class _Parser:
    """Recursive descent over _tokens; builds closures n -> value (unsigned 64-bit)."""

    def __init__(self, tokens):
        self.tokens, self.pos, self.depth = tokens, 0, 0

    def peek(self):
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) else None

    def take(self, expected=None):
        if self.pos >= len(self.tokens):
            raise PluralFormsError("invalid plural expression: it ends too early")
        kind, value = self.tokens[self.pos]
        if expected is not None and (kind != "op" or value != expected):
            raise PluralFormsError(
                f"invalid plural expression: expected {expected!r}, found {value!r}")
        self.pos += 1
        return kind, value

    def expression(self):
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise PluralFormsError(f"invalid plural expression: nested more than {MAX_DEPTH} deep")
        cond = self.binary(0)
        if self.peek() == "?" and self.tokens[self.pos][0] == "op":
            self.take("?")
            then = self.expression()
            self.take(":")
            other = self.expression()
            self.depth -= 1
            return lambda n: then(n) if cond(n) else other(n)
        self.depth -= 1
        return cond

    def binary(self, level):
        if level == len(_BINARY_LEVELS):
            return self.unary()
        left = self.binary(level + 1)
        while self.pos < len(self.tokens) and self.tokens[self.pos][0] == "op" \
                and self.peek() in _BINARY_LEVELS[level]:
            _, op = self.take()
            left = _combine(op, left, self.binary(level + 1))
        return left

    def unary(self):
        kind, value = self.take()
        if kind == "num":
            return lambda n: value
        if value == "n":
            return lambda n: n
        if value == "!":
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise PluralFormsError(
                    f"invalid plural expression: nested more than {MAX_DEPTH} deep")
            operand = self.unary()
            self.depth -= 1
            return lambda n: int(not operand(n))
        if value == "(":
            inner = self.expression()
            self.take(")")
            return inner
        raise PluralFormsError(f"invalid plural expression: unexpected {value!r}")


def _divide(a, b):
    if b == 0:
        raise _Refused
    return a // b


def _modulo(a, b):
    if b == 0:
        raise _Refused
    return a % b


_OPS = {"*": lambda a, b: (a * b) & MASK, "/": _divide, "%": _modulo,
        "+": lambda a, b: (a + b) & MASK, "-": lambda a, b: (a - b) & MASK,
        "<": lambda a, b: int(a < b), ">": lambda a, b: int(a > b),
        "<=": lambda a, b: int(a <= b), ">=": lambda a, b: int(a >= b),
        "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b)}


def _combine(op, left, right):
    if op == "||":
        return lambda n: int(bool(left(n)) or bool(right(n)))
    if op == "&&":
        return lambda n: int(bool(left(n)) and bool(right(n)))
    fn = _OPS[op]
    return lambda n: fn(left(n), right(n))


def compile_expression(text):
    """The function n -> value of a plural expression (the text after `plural=`, up to `;`),
    or PluralFormsError("invalid plural expression...")."""
    if len(text) > MAX_LENGTH:
        raise PluralFormsError(f"invalid plural expression: longer than {MAX_LENGTH} characters")
    parser = _Parser(_tokens(text))
    if len(parser.tokens) > MAX_TOKENS:
        raise PluralFormsError(f"invalid plural expression: more than {MAX_TOKENS} tokens")
    if not parser.tokens:
        raise PluralFormsError("invalid plural expression: it is empty")
    fn = parser.expression()
    if parser.pos != len(parser.tokens):
        raise PluralFormsError(
            f"invalid plural expression: unexpected {parser.tokens[parser.pos][1]!r}")
    return fn


def _nplurals(value):
    """msgfmt's reading: the digits after the first "nplurals=" (blanks skipped)."""
    at = value.find("nplurals=")
    if at < 0:
        raise PluralFormsError('header entry lacks a "nplurals=INTEGER" attribute')
    rest = value[at + 9:].lstrip(" \t\n\r\f\v")
    digits = len(rest) - len(rest.lstrip("0123456789"))
    if digits == 0:
        raise PluralFormsError("invalid nplurals value")
    return int(rest[:digits])


def _evaluate_all(fn, nplurals):
    """The value for each n msgfmt checks, with msgfmt's refusals."""
    values = []
    for n in CHECKED:
        try:
            v = fn(n)
        except _Refused:
            raise PluralFormsError("plural expression can produce division by zero") from None
        if v >= 1 << 63:
            raise PluralFormsError("plural expression can produce negative values")
        if v >= nplurals:
            raise PluralFormsError(
                f"nplurals = {nplurals} but plural expression can produce values as large as {v}")
        values.append(v)
    return values


@dataclasses.dataclass(frozen=True)
class PluralForms:
    """A checked Plural-Forms value: nplurals, the expression's text and what it selects."""

    nplurals: int
    expression: str
    values: tuple  # values[n] for n in 0..1000
    _fn: object = dataclasses.field(repr=False, compare=False)

    def select(self, n):
        """The form (msgstr index) for n, as libintl picks it."""
        if 0 <= n < len(self.values):
            return self.values[n]
        try:
            return self._fn(n & MASK)
        except _Refused:
            raise PluralFormsError(f"plural expression divides by zero for n = {n}") from None

    @property
    def samples(self):
        """{k: the first SAMPLE values of n in 0..1000 that select form k} for every k."""
        out = {k: [] for k in range(self.nplurals)}
        for n, k in enumerate(self.values):
            if len(out[k]) < SAMPLE:
                out[k].append(n)
        return {k: tuple(v) for k, v in out.items()}

    def often(self, k):
        """msgfmt's "the form is taken infinitely often": at least OFTEN n in 0..1000 select
        it. msgfmt -c checks such a msgstr[k] strictly (the same directives as msgid_plural);
        any other form of a plural entry with 2 or more forms is checked relaxed. (Above 100
        forms msgfmt keeps no statistics and checks every form relaxed.)"""
        if self.nplurals > 100:
            return False
        return sum(1 for v in self.values if v == k) >= OFTEN

    def singular_only(self, k):
        """Whether form k is the singular: every n that selects it is 1 (over 0..1000 and the
        larger PROBES). Such a form may be translated from msgid and may drop the number."""
        if [n for n, v in enumerate(self.values) if v == k] != [1]:
            return False
        for n in PROBES:
            try:
                if self._fn(n) == k:
                    return False
            except _Refused:
                return False
        return True

    def histogram(self, k, low, high):
        """msgfmt's count of the n in low..high (at most 1001 of them, from max(low, 0)) that
        select form k, for an entry's `#, range: low..high` flag."""
        low = max(low, 0)
        high = min(high, low + 1000)
        count = 0
        for n in range(low, high + 1):
            try:
                count += self.select(n) == k
            except PluralFormsError:
                pass
        return count


def parse(value):
    """The PluralForms of a Plural-Forms header value, or PluralFormsError with msgfmt's
    reason."""
    nplurals = _nplurals(value)
    at = value.find("plural=")
    if at < 0:
        raise PluralFormsError('header entry lacks a "plural=EXPRESSION" attribute')
    text = value[at + 7:]
    for stop in (";", "\n"):
        text = text.split(stop, 1)[0]
    fn = compile_expression(text)
    values = _evaluate_all(fn, nplurals)
    return PluralForms(nplurals, text.strip(), tuple(values), fn)


def forms_of(value):
    """(nplurals, {k: sorted sample of the n in 0..1000 that select form k})."""
    forms = parse(value)
    return forms.nplurals, {k: list(v) for k, v in forms.samples.items()}


def singular_only(value, k):
    """Whether form k of the Plural-Forms `value` serves n == 1 alone."""
    return parse(value).singular_only(k)
