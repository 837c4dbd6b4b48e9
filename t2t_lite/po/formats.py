"""Format strings read as GNU msgfmt (gettext 0.21) reads them, and msgfmt -c's verdict.

    directives("Copied 50% of %d files", "c-format")   # two: '% o' (flag ' ', 'o') and '%d'
    check_entry("%s%zd%zu %s", "%s%zd%z %s", "c-format")
    # "'msgstr' is not a valid C format string, unlike 'msgid'. Reason: In the directive
    #  number 3, the character ' ' is not a valid conversion specifier."
    format_flags("possible-c-format, fuzzy")           # ('c-format',): what msgfmt -c checks
    protected_kinds(("possible-c-format",))            # printf, markup and the code-like kinds

A catalog tool checks every entry with this before writing it: msgfmt -c rejects the whole
catalog for one bad entry. The rules are those of gettext's format-c.c (also objc-format),
format-python.c, format-python-brace.c, format-qt.c, format-qt-plural.c, format-kde.c, format.c
and msgl-check.c, rewritten in Python; each language's reading is in its own module:

- format_c.py: c-format and objc-format.
- format_python.py: python-format and python-brace-format.
- format_qt_kde.py: qt-format, qt-plural-format and kde-format (not kde-kuit-format).
- format_base.py: Directive, FormatError, UnsupportedFormat and FORMATS, the one table of
  format languages: what protects each one's directives and whether it is read here.

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
import functools

from t2t_lite.inference import code_spans, span_finding
from t2t_lite.po import format_c, format_python, format_qt_kde, plural as plural_mod
from t2t_lite.po.format_base import (ALL_LANGUAGES, FORMATS, LANGUAGES, PRETTY, FormatError,
                                     UnsupportedFormat)


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
    state = _flag_state(flags)
    return tuple(f"{name}-format" for name in ALL_LANGUAGES if state.get(name))


def protected_kinds(flags):
    """The protected-span kinds --protect=auto keeps in a PO entry with these flags, read as
    format_flags reads them: the kinds of the formats msgfmt checks it as (FORMATS: c-format and
    possible-c-format give printf, python-brace-format brace, qt-format none), markup and every
    code-like kind. An entry checked as no format keeps every kind but those of the formats its
    flags turn off (no-c-format and impossible-c-format: printf)."""
    state = _flag_state(flags)
    checked = {FORMATS[name].protected for name, on in state.items() if on}
    if checked:
        return frozenset(checked - {None}) | {"markup"} | frozenset(code_spans.CODE_KINDS)
    return frozenset(span_finding.KINDS) - {FORMATS[name].protected for name in state}


def _flag_state(flags):
    """{language: whether msgfmt -c checks it} for the languages the flags name."""
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
    return state


def _parse(text, language, translated):
    """(directives, what the check compares) for text read as `language`, or FormatError."""
    if language in ("c", "objc"):
        return format_c.CParser(text, translated, language == "objc").run()
    if language == "python":
        return format_python.PythonParser(text).run()
    if language == "python-brace":
        return format_python.BraceParser(text).run()
    if language == "qt":
        return format_qt_kde.qt_parse(text)
    if language == "qt-plural":
        return format_qt_kde.qt_plural_parse(text)
    return format_qt_kde.KdeParser(text).run()


_CHECKS = {"c": format_c.c_check, "objc": format_c.c_check,
           "python": format_python.python_check, "python-brace": format_python.brace_check,
           "qt": format_qt_kde.qt_check, "qt-plural": format_qt_kde.qt_plural_check,
           "kde": format_qt_kde.kde_check}


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
