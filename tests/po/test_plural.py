"""t2t_lite/po/plural.py: Plural-Forms values parsed and evaluated with C semantics, never eval.

Each language's formula is checked against the same rule written by hand in Python, over
n = 0..1000 and large n; which forms serve n == 1 alone (the singular a tool translates from
msgid) and which msgfmt -c checks strictly are stated per language. The refusals are checked
against msgfmt itself: a header msgfmt rejects is refused here, with msgfmt's reason.
"""
import os
import shutil
import subprocess

import pytest

from t2t_lite.po import plural
from t2t_lite.po.plural import PluralFormsError

MSGFMT = shutil.which("msgfmt")
needs_msgfmt = pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed")

LANGUAGES = {
    # language: (Plural-Forms, the rule by hand, forms serving n == 1 alone, forms msgfmt
    # checks strictly)
    "de": ("nplurals=2; plural=(n != 1);", lambda n: int(n != 1), {0}, {1}),
    "fr": ("nplurals=2; plural=(n > 1);", lambda n: int(n > 1), set(), {1}),
    "ru": ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
           "(n%100<10 || n%100>=20) ? 1 : 2);",
           lambda n: 0 if n % 10 == 1 and n % 100 != 11 else
           1 if 2 <= n % 10 <= 4 and not 10 <= n % 100 < 20 else 2, set(), {0, 1, 2}),
    "pl": ("nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) "
           "? 1 : 2);",
           lambda n: 0 if n == 1 else 1 if 2 <= n % 10 <= 4 and not 10 <= n % 100 < 20 else 2,
           {0}, {1, 2}),
    "ja": ("nplurals=1; plural=0;", lambda n: 0, set(), {0}),
    "ar": ("nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 "
           ": n%100>=11 ? 4 : 5);",
           lambda n: 0 if n == 0 else 1 if n == 1 else 2 if n == 2 else
           3 if 3 <= n % 100 <= 10 else 4 if n % 100 >= 11 else 5, {1}, {3, 4, 5}),
    "cs": ("nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
           lambda n: 0 if n == 1 else 1 if 2 <= n <= 4 else 2, {0}, {2}),
    "sl": ("nplurals=4; plural=(n%100==1 ? 0 : n%100==2 ? 1 : n%100==3 || n%100==4 ? 2 : 3);",
           lambda n: 0 if n % 100 == 1 else 1 if n % 100 == 2 else
           2 if n % 100 in (3, 4) else 3, set(), {0, 1, 2, 3}),
    "ga": ("nplurals=5; plural=n==1 ? 0 : n==2 ? 1 : (n>2 && n<7) ? 2 :(n>6 && n<11) ? 3 : 4;",
           lambda n: 0 if n == 1 else 1 if n == 2 else 2 if 2 < n < 7 else
           3 if 6 < n < 11 else 4, {0}, {4}),
}
LARGE = [1001, 1021, 10 ** 6 + 1, 10 ** 9 + 11, 2 ** 32 + 1, 2 ** 63 - 1]


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_each_language_selects_as_its_rule(language):
    value, rule, singular, strict = LANGUAGES[language]
    forms = plural.parse(value)
    for n in list(range(0, 1001)) + LARGE:
        assert forms.select(n) == rule(n), n
    assert {k for k in range(forms.nplurals) if forms.singular_only(k)} == singular
    assert {k for k in range(forms.nplurals) if forms.often(k)} == strict
    nplurals, samples = plural.forms_of(value)
    assert nplurals == forms.nplurals and sorted(samples) == list(range(nplurals))
    for k, sample in samples.items():
        assert sample == sorted(sample) and 0 < len(sample) <= plural.SAMPLE
        assert all(rule(n) == k for n in sample)


def test_russian_form_0_serves_21_too():
    """issue 51: msgstr[0] of ru is not the singular; it needs the number."""
    _, samples = plural.forms_of(LANGUAGES["ru"][0])
    assert samples[0] == [1, 21, 31, 41, 51, 61, 71, 81]
    assert not plural.singular_only(LANGUAGES["ru"][0], 0)
    assert plural.singular_only(LANGUAGES["pl"][0], 0)


def test_c_semantics():
    def value(expression, n):
        return plural.compile_expression(expression)(n)
    assert value("!n%2", 0) == 1 and value("!n%2", 3) == 0  # ! binds tighter than %
    assert value("1 ? 2 : 0 ? 3 : 4", 0) == 2  # ?: is right-associative
    assert value("n ? 1 : 0 || 1", 0) == 1  # the last operand is "0 || 1"
    assert value("2 + 3 * 4 % 5", 0) == 4
    assert value("10 - 4 - 3", 0) == 3 and value("100 / 10 / 5", 0) == 2
    assert value("n < 3 == 1", 2) == 1 and value("1 < 2 < 3", 0) == 1
    assert value("n - 1", 0) == 2 ** 64 - 1  # unsigned long
    assert value("18446744073709551617", 0) == 1  # the number wraps as strtoul's loop does
    assert value("n == 1 || n / 0", 1) == 1  # || and ?: do not evaluate what they skip
    assert value("  n\t!= 1 ; garbage", 1) == 0  # ';' ends the expression


REFUSED = {
    "nplurals=2; plural=n%0;": "plural expression can produce division by zero",
    "nplurals=2; plural=n == 7 ? n/0 : 0;": "plural expression can produce division by zero",
    "nplurals=2; plural=(n!=1;": "invalid plural expression",
    "nplurals=2; plural=n!=1);": "invalid plural expression",
    "nplurals=2; plural=n;": "nplurals = 2 but plural expression can produce values as large "
                             "as 2",
    "nplurals=3; plural=n>1 ? 3 : 0;": "nplurals = 3 but plural expression can produce values "
                                       "as large as 3",
    "nplurals=x; plural=n!=1;": "invalid nplurals value",
    "nplurals=2; plural=n-2;": "plural expression can produce negative values",
    "nplurals=2; plural=n & 1;": "invalid plural expression",
    "nplurals=2; plural=n = 1;": "invalid plural expression",
    "nplurals=2; plural= ;": "invalid plural expression",
    "nplurals=2; plural=n ? 1;": "invalid plural expression",
    "nplurals=2; plural=n != 1 1;": "invalid plural expression",
    "nplurals=2; plural=N != 1;": "invalid plural expression",
    "nplurals=2; plural=-n;": "invalid plural expression",
    "nplurals = 2; plural=n != 1;": 'header entry lacks a "nplurals=INTEGER" attribute',
    "nplurals=2; plural =n != 1;": 'header entry lacks a "plural=EXPRESSION" attribute',
}
ACCEPTED = ["nplurals=2; plural=n > 2000 ? n / 0 : n != 1;", "nplurals=2; plural=!n;",
            "nplurals=2;plural=n!=1", "nplurals=  2; plural = n != 1;",
            "nplurals=1; plural=0"]


@pytest.mark.parametrize("value", sorted(REFUSED))
def test_a_malformed_value_is_refused_with_msgfmts_reason(value):
    with pytest.raises(PluralFormsError) as e:
        plural.parse(value)
    assert str(e.value).startswith(REFUSED[value])


def test_caps_refuse_what_would_exhaust_the_stack():
    deep = "nplurals=2; plural=" + "(" * 60 + "n != 1" + ")" * 60 + ";"
    with pytest.raises(PluralFormsError, match="nested more than"):
        plural.parse(deep)
    with pytest.raises(PluralFormsError, match="nested more than"):
        plural.parse("nplurals=2; plural=" + "!" * 100 + "n;")
    with pytest.raises(PluralFormsError, match="tokens"):
        plural.parse("nplurals=2; plural=" + "n+" * 300 + "0 != 1;")
    with pytest.raises(PluralFormsError, match="characters"):
        plural.parse("nplurals=2; plural=" + " " * 2000 + "n != 1;")


def _msgfmt_accepts(tmp_path, value):
    text = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n'
            f'"Plural-Forms: {value}\\n"\n\nmsgid "a"\nmsgid_plural "b"\n')
    nplurals = max(1, min(6, int(value.split("=")[1].split(";")[0]) if
                          value.split("=")[1].split(";")[0].strip().isdigit() else 2))
    text += "".join(f'msgstr[{k}] "x"\n' for k in range(nplurals))
    path = tmp_path / "p.po"
    path.write_text(text, encoding="utf-8")
    result = subprocess.run([MSGFMT, "-c", "-o", os.devnull, str(path)], capture_output=True,
                            text=True, env=dict(os.environ, LC_ALL="C", LANGUAGE=""),
                            timeout=60)
    errors = [line.split(": ", 1)[1] for line in result.stderr.splitlines()
              if line.startswith(str(path)) and "warning:" not in line]
    return result.returncode == 0, errors


@needs_msgfmt
def test_msgfmt_agrees_on_every_value(tmp_path):
    values = sorted(REFUSED) + ACCEPTED + [v for v, *_ in LANGUAGES.values()]
    for value in values:
        ok, errors = _msgfmt_accepts(tmp_path, value)
        try:
            plural.parse(value)
            ours = None
        except PluralFormsError as e:
            ours = str(e)
        assert ok == (ours is None), (value, errors, ours)
        if ours is not None:  # msgfmt's words, the first of them on two lines
            words = [e.lstrip(".").removeprefix("but ") for e in errors]
            assert any(ours.startswith(w) for w in words), (value, errors, ours)


def test_a_whole_header_is_read_as_msgfmt_reads_it():
    header = ("Content-Type: text/plain; charset=UTF-8\nPlural-Forms: nplurals=3; "
              "plural=(n==1 ? 0 : n==2 ? 1 : 2);\nX-Generator: t\n")
    forms = plural.parse(header)
    assert (forms.nplurals, forms.select(2), forms.expression) == (
        3, 1, "(n==1 ? 0 : n==2 ? 1 : 2)")
    many = plural.parse("nplurals=101; plural=n%101;")
    assert not any(many.often(k) for k in range(101))  # msgfmt keeps no statistics then
