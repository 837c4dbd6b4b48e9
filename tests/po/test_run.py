"""t2t-lite-po (t2t_lite/po/run.py): a gettext catalog in, the same catalog out with its
untranslated entries translated, fuzzy for review, and accepted by `msgfmt -c --use-fuzzy`.

The quick tests inject a translator (tests/po/po_doubles.py: translate(lines, kinds) ->
translations, as the engine) and the kinds of protection (kinds_of(flags)), so the catalog logic
runs without a model: plural forms, the
header of a .pot, fuzzy marks, multi-line msgids, contexts and translations kept, broken
catalogs as one line. The slow ones run the real CLI on the session's tiny model: the round trip
of a real catalog from this machine, a .pot, the input refused as output, a killed run resumed.
Each CLI start costs a TensorFlow import, so a refusal that comes before the model is used and is
not the test's CLI error line is checked through translate_catalog with the CLI's options (no
stand-in translator: the tool's own checks), whose UserError is the line the CLI prints.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import polib
import pytest

from t2t_lite import exit_status, file_lock
from t2t_lite.inference import code_spans, span_finding
from t2t_lite.po import header as po_header
from t2t_lite.po import catalog_file, compose
from t2t_lite.po import entries as po_entries
from t2t_lite.model_source import ModelSource, problem_target_language
from t2t_lite.po import run as po_run
from t2t_lite.errors import UserError
from t2t_lite.po.run import PoOptions
from tests.po import po_doubles

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
MSGFMT = shutil.which("msgfmt")
needs_msgfmt = pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed")

POT = r'''# SOME DESCRIPTIVE TITLE.
# Copyright (C) YEAR THE PACKAGE'S COPYRIGHT HOLDER
#
#, fuzzy
msgid ""
msgstr ""
"Project-Id-Version: PACKAGE VERSION\n"
"Report-Msgid-Bugs-To: \n"
"POT-Creation-Date: 2024-01-01 00:00+0000\n"
"PO-Revision-Date: YEAR-MO-DA HO:MI+ZONE\n"
"Last-Translator: FULL NAME <EMAIL@ADDRESS>\n"
"Language-Team: LANGUAGE <LL@li.org>\n"
"Language: \n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset=CHARSET\n"
"Content-Transfer-Encoding: 8bit\n"
"Plural-Forms: nplurals=INTEGER; plural=EXPRESSION;\n"

#. Shown in the title bar
#: src/main.c:12
#, c-format
msgid "Open %s"
msgstr ""

#: src/main.c:20
#, c-format
msgid "%d file"
msgid_plural "%d files"
msgstr[0] ""
msgstr[1] ""

msgctxt "menu"
msgid "Open"
msgstr ""

msgid ""
"\n"
"Usage: prog [OPTION]...\n"
"  -h, --help   show help\n"
msgstr ""

#, python-brace-format
msgid "Hello {name}"
msgstr ""
'''

PO_HEADER = r'''msgid ""
msgstr ""
"Project-Id-Version: prog 1.0\n"
"Language: {language}\n"
"MIME-Version: 1.0\n"
"Content-Type: text/plain; charset={charset}\n"
"Content-Transfer-Encoding: 8bit\n"
{plural_forms}
'''

PO_BODY = r'''# A translator's comment
#: src/a.c:1
msgid "Save"
msgstr "Speichern"

msgctxt "verb"
msgid "Close"
msgstr ""

msgctxt "noun"
msgid "Close"
msgstr ""

#, fuzzy
#| msgid "Quit now"
msgid "Quit"
msgstr "Jetzt beenden"

#, c-format
msgid "%d item"
msgid_plural "%d items"
msgstr[0] "%d Element"
msgstr[1] ""

#~ msgid "Gone"
#~ msgstr ""
'''


def _po(language="de", charset="UTF-8", plural_forms="nplurals=2; plural=(n != 1);",
        body=PO_BODY):
    forms = f'"Plural-Forms: {plural_forms}\\n"' if plural_forms else ""
    return PO_HEADER.format(language=language, charset=charset, plural_forms=forms) \
        + "\n" + body


def _mark(lines, kinds):
    """A translator that keeps format specifiers: 'Open %s' -> 'DE«Open %s»'."""
    return [f"DE«{line}»" for line in lines]


def _no_kinds(flags):
    return frozenset()


def _translate(tmp_path, text, translate=_mark, kinds_of=_no_kinds, name="in.po",
               encoding="utf-8", **options):
    source = tmp_path / name
    source.write_bytes(text.encode(encoding))
    output = tmp_path / "out.po"
    stats = po_doubles.translate_catalog(
        PoOptions(input=str(source), output=str(output), **options), translate=translate,
        kinds_of=kinds_of)
    return stats, output


def _msgfmt_check(path):
    return subprocess.run([MSGFMT, "--check", "--use-fuzzy", "-o", os.devnull, str(path)],
                          capture_output=True, text=True)


def _entries(path):
    return {(e.msgctxt, e.msgid): e for e in polib.pofile(str(path)) if not e.obsolete}


# ---- quick: the catalog logic with a stand-in translator ------------------------------------

@needs_msgfmt
def test_a_pot_gets_the_target_languages_header_and_every_entry(tmp_path):
    stats, output = _translate(tmp_path, POT, name="prog.pot", target_language="de")
    catalog = polib.pofile(str(output))
    assert catalog.metadata["Language"] == "de"
    assert catalog.metadata["Plural-Forms"] == "nplurals=2; plural=(n != 1);"
    assert catalog.metadata["Content-Type"] == "text/plain; charset=UTF-8"
    assert not catalog.metadata_is_fuzzy
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d[+-]\d{4}",
                        catalog.metadata["PO-Revision-Date"])
    entries = _entries(output)
    assert entries[(None, "Open %s")].msgstr == "DE«Open %s»"
    assert entries[(None, "Open %s")].comment == "Shown in the title bar"
    assert entries[(None, "Open %s")].occurrences == [("src/main.c", "12")]
    assert entries[(None, "%d file")].msgstr_plural == {0: "DE«%d file»", 1: "DE«%d files»"}
    assert entries[("menu", "Open")].msgstr == "DE«Open»"
    assert all(e.fuzzy for e in entries.values())
    assert ["fuzzy", "c-format"] == entries[(None, "Open %s")].flags
    assert (stats.entries, stats.translated, stats.plural, stats.fuzzy_marked) == (5, 5, 1, 5)
    assert stats.header_filled == ("Language", "Plural-Forms", "Content-Type")
    result = _msgfmt_check(output)
    assert result.returncode == 0, result.stderr


@needs_msgfmt
def test_multi_line_msgids_go_line_by_line_and_keep_their_newlines(tmp_path):
    sent = []

    def translate(lines, kinds):
        sent.extend(lines)
        return _mark(lines, kinds)

    body = ('msgid ""\n"\\n"\n"Usage: prog [OPTION]...\\n"\n"  -h, --help   show help\\n"\n'
            'msgstr ""\n\nmsgid "first\\n\\nsecond "\nmsgstr ""\n')
    _, output = _translate(tmp_path, _po(body=body), translate=translate)
    entries = _entries(output)
    assert entries[(None, "\nUsage: prog [OPTION]...\n  -h, --help   show help\n")].msgstr == \
        "\nDE«Usage: prog [OPTION]...»\n  DE«-h, --help   show help»\n"
    assert entries[(None, "first\n\nsecond ")].msgstr == "DE«first»\n\nDE«second» "
    assert all("\n" not in line and line == line.strip() and line for line in sent)
    result = _msgfmt_check(output)
    assert result.returncode == 0, result.stderr


@needs_msgfmt
def test_existing_work_is_kept_and_only_the_missing_is_translated(tmp_path):
    stats, output = _translate(tmp_path, _po())
    entries = _entries(output)
    assert entries[(None, "Save")].msgstr == "Speichern"
    assert not entries[(None, "Save")].fuzzy
    assert entries[(None, "Save")].tcomment == "A translator's comment"
    assert entries[("verb", "Close")].msgstr == entries[("noun", "Close")].msgstr == "DE«Close»"
    quit_entry = entries[(None, "Quit")]
    assert (quit_entry.msgstr, quit_entry.fuzzy, quit_entry.previous_msgid) == \
        ("Jetzt beenden", True, "Quit now")
    # A plural form the translator filled stays; the missing one is added, from msgid_plural.
    assert entries[(None, "%d item")].msgstr_plural == {0: "%d Element", 1: "DE«%d items»"}
    obsolete = [e for e in polib.pofile(str(output)) if e.obsolete]
    assert [(e.msgid, e.msgstr) for e in obsolete] == [("Gone", "")]
    assert (stats.entries, stats.translated, stats.kept, stats.fuzzy_kept, stats.obsolete) == \
        (5, 3, 1, 1, 1)
    assert "Project-Id-Version: prog 1.0" in output.read_text(encoding="utf-8")
    assert stats.header_filled == ()
    result = _msgfmt_check(output)
    assert result.returncode == 0, result.stderr


def test_translate_fuzzy_and_no_fuzzy(tmp_path):
    _, output = _translate(tmp_path, _po(), translate_fuzzy=True, no_fuzzy=True)
    entries = _entries(output)
    assert entries[(None, "Quit")].msgstr == "DE«Quit»"
    assert not entries[(None, "Quit")].fuzzy and entries[(None, "Quit")].previous_msgid is None
    assert not any(e.fuzzy for e in entries.values())
    assert entries[(None, "Save")].msgstr == "Speichern"  # a reviewed translation stays


PLURAL_BODY = ('#, c-format\nmsgid "One file"\nmsgid_plural "%d files"\nmsgstr[0] ""\n'
               'msgstr[1] ""\n')


@needs_msgfmt
@pytest.mark.parametrize("language, forms", [
    # Form k comes from the singular only where every n that selects it is 1 (German's 0);
    # Russian's and Polish's form 0 also serves 21, 31 (ru) or is n == 1 (pl), Arabic's 1 is
    # n == 1 alone, Japanese has one form for every n.
    ("de", ["One file", "%d files"]),
    ("ru", ["%d files"] * 3),
    ("pl", ["One file", "%d files", "%d files"]),
    ("ja", ["%d files"]),
    ("ar", ["%d files", "One file", "%d files", "%d files", "%d files", "%d files"]),
])
def test_each_plural_form_from_the_source_its_formula_asks_for(tmp_path, language, forms):
    rule = po_header.PLURAL_FORMS[language]
    stats, output = _translate(tmp_path, _po(language=language, plural_forms=rule,
                                             body=PLURAL_BODY))
    assert _entries(output)[(None, "One file")].msgstr_plural == {
        k: f"DE«{source}»" for k, source in enumerate(forms)}
    assert stats.plural == 1
    result = _msgfmt_check(output)
    assert result.returncode == 0, result.stderr


@needs_msgfmt
def test_a_pot_for_a_language_of_one_form(tmp_path):
    # msgstr[0] covers every n, from msgid_plural.
    stats, output = _translate(tmp_path, POT, name="prog.pot", target_language="ja")
    assert _entries(output)[(None, "%d file")].msgstr_plural == {0: "DE«%d files»"}
    assert polib.pofile(str(output)).metadata["Plural-Forms"] == "nplurals=1; plural=0;"
    result = _msgfmt_check(output)
    assert result.returncode == 0, result.stderr


@needs_msgfmt
def test_every_table_entry_is_a_plural_form_msgfmt_accepts(tmp_path):
    body = 'msgid "%d file"\nmsgid_plural "%d files"\nmsgstr[0] ""\nmsgstr[1] ""\n'
    for language, forms in po_header.PLURAL_FORMS.items():
        _, output = _translate(tmp_path, _po(language=language, plural_forms=forms, body=body))
        result = _msgfmt_check(output)
        assert result.returncode == 0, (language, result.stderr)


def test_an_empty_translation_leaves_the_entry_untranslated(tmp_path):
    def translate(lines, kinds):
        return ["" if line == "second" else f"DE«{line}»" for line in lines]

    body = 'msgid "first\\nsecond\\n"\nmsgstr ""\n\nmsgid "third"\nmsgstr ""\n'
    stats, output = _translate(tmp_path, _po(body=body), translate=translate)
    entries = _entries(output)
    assert entries[(None, "first\nsecond\n")].msgstr == ""
    assert not entries[(None, "first\nsecond\n")].fuzzy
    assert entries[(None, "third")].msgstr == "DE«third»"
    assert (stats.translated, stats.left) == (1, 1)
    assert stats.left_untranslated == {po_run.LEFT_EMPTY: 1}


def test_entries_are_grouped_by_the_protection_their_flags_ask_for(tmp_path):
    calls, seen_flags = [], set()

    def kinds_of(flags):
        seen_flags.add(flags)
        return frozenset({("c-format",): {"printf"}, ("python-brace-format",): {"brace"},
                          ("no-c-format", "python-format"): {"printf", "brace"}}.get(flags, ()))

    def translate(lines, kinds):
        calls.append((kinds, lines))
        return _mark(lines, kinds)

    body = ('#, c-format\nmsgid "%s a"\nmsgstr ""\n\n#, c-format\nmsgid "%d b"\nmsgstr ""\n\n'
            '#, python-brace-format\nmsgid "{x} c"\nmsgstr ""\n\n'
            '#, no-c-format, python-format\nmsgid "%(n)s d"\nmsgstr ""\n\nmsgid "e"\nmsgstr ""\n'
            '\n#, c-format\nmsgid "%s a again"\nmsgstr "%s schon"\n')
    stats, _ = _translate(tmp_path, _po(body=body), translate=translate, kinds_of=kinds_of)
    assert calls == [(frozenset(), ["e"]), (frozenset({"brace"}), ["{x} c"]),
                     (frozenset({"printf"}), ["%s a", "%d b"]),
                     (frozenset({"printf", "brace"}), ["%(n)s d"])]
    assert seen_flags == {(), ("c-format",), ("python-brace-format",),
                          ("no-c-format", "python-format")}
    assert stats.lines == 5


def test_code_like_text_is_kept_and_entries_of_code_alone_are_copied(tmp_path):
    """Issue 59's real entries, through a translator that garbles code as the model did."""
    def garble(lines, kinds):
        return [line.replace("Use", "Verwenden Sie").replace("--removeall", "--remove")
                .replace("/etc/crypttab", "/cet/cryptrypt").replace("44100", "4410")
                .replace("https://docs.xfce.org", "ht://www.x.x").replace("1.2.3", "1,2,3")
                .replace("Clemens Ladisch <clemens@ladisch.de>", "Klemens").replace("--verbose", "ausführlich")
                for line in lines]

    body = "".join(f'msgid "{msgid}"\nmsgstr ""\n\n' for msgid in (
        "https://docs.xfce.org/apps/parole/bugs", "Clemens Ladisch <clemens@ladisch.de>",
        "1.2.3", "--verbose", "Use --removeall to remove /etc/crypttab at 44100 Hz"))
    stats, output = _translate(tmp_path, _po(body=body), translate=garble, kinds_of=None)
    written = {entry.msgid: entry.msgstr for entry in polib.pofile(str(output))}
    assert written["https://docs.xfce.org/apps/parole/bugs"] == \
        "https://docs.xfce.org/apps/parole/bugs"
    assert written["Clemens Ladisch <clemens@ladisch.de>"] == \
        "Clemens Ladisch <clemens@ladisch.de>"
    assert written["1.2.3"] == "1.2.3" and written["--verbose"] == "--verbose"
    assert written["Use --removeall to remove /etc/crypttab at 44100 Hz"] == \
        "Verwenden Sie --removeall to remove /etc/crypttab at 44100 Hz"
    assert stats.translated == 5 and stats.left == 0


def test_the_forced_attempt_forces_only_spans_within_the_constraint_caps():
    from t2t_lite.inference import constraints
    from t2t_lite.po import engine

    url = "https://docs.xfce.org/apps/parole/bugs/and/a/long/path"
    assert engine.forced_line([url, "%s", "--force"]) == "%s\t--force"
    many = [f"--option-number-{i:02d}" for i in range(12)]
    assert sum(map(len, many)) > constraints.MAX_LINE_TOKENS
    forced = engine.forced_line(many).split("\t")
    assert sum(map(len, forced)) <= constraints.MAX_LINE_TOKENS and forced == many[:len(forced)]


def test_the_protection_comes_from_protected_spans_by_the_entries_flags(tmp_path):
    calls = {}

    def translate(lines, kinds):
        calls[kinds] = lines
        return _mark(lines, kinds)

    body = ('#, c-format\nmsgid "%s a"\nmsgstr ""\n\n#, python-brace-format\nmsgid "{x} c"\n'
            'msgstr ""\n\nmsgid "e"\nmsgstr ""\n')
    _translate(tmp_path, _po(body=body), translate=translate, kinds_of=None)
    code = frozenset(code_spans.CODE_KINDS)
    assert calls == {frozenset({"printf", "markup"}) | code: ["%s a"],
                     frozenset({"brace", "markup"}) | code: ["{x} c"],
                     frozenset(span_finding.KINDS): ["e"]}
    calls.clear()
    _translate(tmp_path, _po(body=body), translate=translate, kinds_of=None, protect="none")
    assert calls == {frozenset(): ["%s a", "{x} c", "e"]}
    with pytest.raises(UserError, match="--protect=brackets"):
        _translate(tmp_path, _po(body=body), translate=translate, kinds_of=None,
                   protect="brackets")


def test_a_possible_c_format_entry_is_protected_and_judged_as_c_format(tmp_path):
    """msgfmt -c checks a possible-c-format entry's directives as a c-format one's: its %s and
    %d are protected (a mangled `% s` is repaired) and judged (a msgstr whose directives take
    other arguments is passed over for the next hypothesis)."""
    kinds_of_line = {}

    def translate(lines, kinds):
        kinds_of_line.update((line, kinds) for line in lines)
        return [{"Copied %s of %d files": "Kopiert: % s von %d Dateien",
                 "%d of %s": ["%s von %d", "%d von %s"]}[line] for line in lines]

    body = ('#, possible-c-format\nmsgid "Copied %s of %d files"\nmsgstr ""\n\n'
            '#, possible-c-format\nmsgid "%d of %s"\nmsgstr ""\n')
    _, output = _translate(tmp_path, _po(body=body), translate=translate, kinds_of=None)
    assert "printf" in kinds_of_line["Copied %s of %d files"]
    assert _entries(output)[(None, "Copied %s of %d files")].msgstr == \
        "Kopiert: %s von %d Dateien"
    # Unprotected, the judge alone stands between the swapped arguments and the catalog.
    _, output = _translate(tmp_path, _po(body=body), translate=translate)
    assert _entries(output)[(None, "%d of %s")].msgstr == "%d von %s"
    if MSGFMT:
        assert subprocess.run([MSGFMT, "-c", "--use-fuzzy", "-o", os.devnull, str(output)],
                              capture_output=True).returncode == 0


def test_identical_lines_are_translated_once(tmp_path):
    calls = []

    def translate(lines, kinds):
        calls.append(lines)
        return _mark(lines, kinds)

    body = ('msgctxt "a"\nmsgid "Open"\nmsgstr ""\n\nmsgctxt "b"\nmsgid "Open"\nmsgstr ""\n\n'
            'msgid "Open\\nOpen"\nmsgstr ""\n')
    stats, output = _translate(tmp_path, _po(body=body), translate=translate)
    assert calls == [["Open"]] and stats.lines == 1
    assert _entries(output)[(None, "Open\nOpen")].msgstr == "DE«Open»\nDE«Open»"


def test_a_latin1_catalog_stays_latin1_byte_for_byte(tmp_path):
    body = 'msgid "Size"\nmsgstr "Größe"\n\nmsgid "Open"\nmsgstr ""\n\nmsgid "Go on"\nmsgstr ""\n'
    text = _po(charset="ISO-8859-1", body=body)
    stats, output = _translate(tmp_path, text, encoding="latin-1",
                               translate=lambda lines, kinds: ["Öffnen" if line == "Open"
                                                               else "Gehe →" for line in lines])
    data = output.read_bytes()
    assert "charset=ISO-8859-1" in data.decode("latin-1")
    assert 'msgid "Size"\nmsgstr "Größe"\n'.encode("latin-1") in data
    assert 'msgstr "Öffnen"'.encode("latin-1") in data
    # A translation the charset cannot hold is left out, counted; the catalog stays Latin-1.
    assert b'msgid "Go on"\nmsgstr ""\n' in data
    assert stats.left_untranslated == {compose.LEFT_CHARSET: 1}


def test_a_hypothesis_the_charset_cannot_hold_gives_way_to_the_next(tmp_path):
    text = _po(charset="ISO-8859-1", body='msgid "Go on"\nmsgstr ""\n')
    stats, output = _translate(tmp_path, text, encoding="latin-1",
                               translate=lambda lines, kinds: [["Weiter →", "Weiter"]
                                                               for _ in lines])
    assert b'msgid "Go on"\nmsgstr "Weiter"\n' in output.read_bytes()
    assert stats.translated == 1 and not stats.left_untranslated


def _error(tmp_path, text, encoding="utf-8", **options):
    with pytest.raises(UserError) as raised:
        _translate(tmp_path, text, encoding=encoding, **options)
    assert not (tmp_path / "out.po").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.po"]  # no lock, work folder or temp
    message = str(raised.value)
    assert "\n" not in message
    return message


def test_broken_catalogs_end_in_one_line_naming_file_and_line(tmp_path):
    source = str(tmp_path / "in.po")
    lines = _po().splitlines()
    save = lines.index('msgid "Save"')
    broken = "\n".join(lines[:save + 1] + ['msgstr "Spei"chern"'] + lines[save + 2:]) + "\n"
    # msgfmt's words and line (a keyword "chern" after the closed string "Spei").
    assert _error(tmp_path, broken) == f'{source}:{save + 2}: keyword "chern" unknown'
    garbage = "\n".join(lines[:save] + ["this is no PO line"] + lines[save:]) + "\n"
    assert _error(tmp_path, garbage).startswith(f"{source}:{save + 1}: ")

    message = _error(tmp_path, _po(charset="UTF-8", body='msgid "a"\nmsgstr "\xe4"\n'),
                     encoding="latin-1")
    assert message.startswith(f"{source}:11:9: invalid multibyte sequence: not valid utf-8")


def test_plurals_without_plural_forms_and_no_known_language_end_in_one_line(tmp_path):
    source = str(tmp_path / "in.po")
    message = _error(tmp_path, _po(language="", plural_forms=None))
    assert message.startswith(f"{source}:1: the header has no Plural-Forms, the entry at line 28 ")
    assert "--target_language" in message
    message = _error(tmp_path, _po(language="", plural_forms=None), target_language="tlh")
    assert "'tlh' is not in t2t-lite-po's table" in message
    message = _error(tmp_path, _po(plural_forms="nplurals=; plural=n;"))
    assert message.startswith(f"{source}:8: the header's Plural-Forms 'nplurals=; plural=n;' "
                              "cannot be read (")
    # Without plural entries a header without Plural-Forms is fine, and gets one if known.
    stats, output = _translate(tmp_path, _po(language="", plural_forms=None,
                                             body='msgid "a"\nmsgstr ""\n'))
    assert stats.translated == 1 and stats.header_filled == ()
    stats, output = _translate(tmp_path, _po(language="", plural_forms=None),
                               target_language="pt_BR")
    assert polib.pofile(str(output)).metadata["Plural-Forms"] == "nplurals=2; plural=(n > 1);"


def test_a_catalog_in_another_language_is_refused(tmp_path):
    message = _error(tmp_path, _po(language="fr"), target_language="de")
    assert message.startswith(f"{tmp_path / 'in.po'}:4: the catalog is in 'fr'")
    _translate(tmp_path, _po(language="de_AT"), target_language="de")  # a region of it: fine


def test_the_input_is_never_the_output(tmp_path):
    source = tmp_path / "in.po"
    source.write_text(_po(), encoding="utf-8")
    before = source.read_bytes()
    os.link(source, tmp_path / "hard.po")
    (tmp_path / "soft.po").symlink_to(source)
    for output in (source, tmp_path / "hard.po", tmp_path / "soft.po"):
        with pytest.raises(UserError, match="is the input --input"):
            po_doubles.translate_catalog(PoOptions(input=str(source), output=str(output)),
                                             translate=_mark, kinds_of=_no_kinds)
    assert source.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hard.po", "in.po", "soft.po"]


def test_one_writer_per_output_and_a_symlink_written_through(tmp_path):
    source = tmp_path / "in.po"
    source.write_text(_po(), encoding="utf-8")
    output = tmp_path / "out.po"
    with file_lock.FileLock(str(output) + file_lock.LOCK_SUFFIX, "test"):
        with pytest.raises(UserError, match="is being written by another run"):
            po_doubles.translate_catalog(PoOptions(input=str(source), output=str(output)),
                                             translate=_mark, kinds_of=_no_kinds)
    assert not output.exists()
    (tmp_path / "real").mkdir()
    (tmp_path / "link.po").symlink_to(tmp_path / "real" / "de.po")
    po_doubles.translate_catalog(PoOptions(input=str(source), output=str(tmp_path / "link.po")),
                                     translate=_mark, kinds_of=_no_kinds)
    assert (tmp_path / "link.po").is_symlink()
    assert os.listdir(tmp_path / "real") == ["de.po"]
    assert _entries(tmp_path / "real" / "de.po")[("verb", "Close")].msgstr == "DE«Close»"


def test_a_failing_translator_leaves_the_old_output(tmp_path):
    source = tmp_path / "in.po"
    source.write_text(_po(), encoding="utf-8")
    output = tmp_path / "out.po"
    output.write_bytes(b"the old output\n")

    def failing(lines, kinds):
        raise UserError("the model is gone")

    with pytest.raises(UserError, match="the model is gone"):
        po_doubles.translate_catalog(PoOptions(input=str(source), output=str(output)),
                                         translate=failing, kinds_of=_no_kinds)
    assert output.read_bytes() == b"the old output\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.po", "out.po"]


def test_a_work_folder_the_tool_did_not_make_is_never_touched(tmp_path):
    work = tmp_path / ("out.po" + po_run.WORK_SUFFIX)
    work.mkdir()
    (work / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(UserError, match="is not a t2t-lite-po work folder"):
        po_run.WorkFolder(str(work), {"run": 1}, start_over=True)
    assert os.listdir(work) == ["notes.txt"]
    # Its own folder: another run's is refused (start over to replace it); removal leaves
    # what someone else put there.
    folder = po_run.WorkFolder(str(tmp_path / "ours"), {"input_sha256": "a"}, False)
    with pytest.raises(UserError, match="input_sha256 was 'a', now 'b'.*--start_over"):
        po_run.WorkFolder(folder.path, {"input_sha256": "b"}, False)
    (tmp_path / "ours" / "journal.jsonl").write_text("x\n", encoding="utf-8")
    po_run.WorkFolder(folder.path, {"input_sha256": "b"}, True)
    assert os.listdir(folder.path) == ["t2t-po-work.json"]
    (tmp_path / "ours" / "journal.jsonl").write_text("{}", encoding="utf-8")
    (tmp_path / "ours" / "keep.me").write_text("x", encoding="utf-8")
    folder.remove()
    assert os.listdir(folder.path) == ["keep.me"]


def test_the_models_target_language(tmp_path):
    assert problem_target_language("translate_ende_wmt14") == "de"
    assert problem_target_language("translate_enfr_gettext") == "fr"
    assert problem_target_language("translate_gettext") is None
    assert problem_target_language("not_registered") is None
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "run.json").write_text(
        '{"problem": "translate_gettext", "problem_params": ["target_lang=es"], '
        '"vocab_file": "v", "vocab_size": 8}', encoding="utf-8")
    assert ModelSource(model_dir=str(model_dir)).problem_and_target_language() == \
        ("translate_gettext", "es")
    (model_dir / "run.json").write_text(
        '{"problem": "translate_ende_wmt14", "problem_params": [], '
        '"vocab_file": "v", "vocab_size": 8}', encoding="utf-8")
    assert ModelSource(model_dir=str(model_dir)).problem_and_target_language() == \
        ("translate_ende_wmt14", "de")


def test_format_flags_of_an_entry():
    flags = ["fuzzy", "c-format", "no-python-format", "python-brace-format", "range: 1..5"]
    assert po_entries.checked_flags(flags) == ("c-format", "python-brace-format")
    assert po_entries.checked_flags(["possible-c-format", "sh-format"]) == ("c-format",)
    assert po_entries.range_of(flags) == (1, 5)


# ---- slow: the real CLI on the session's tiny model -----------------------------------------

def _command(model_dir, *args):
    return [sys.executable, "-m", "t2t_lite.bin.po", f"--model_dir={model_dir}", *args]


def _run(model_dir, *args):
    return subprocess.run(_command(model_dir, *args), capture_output=True, text=True, env=ENV,
                          cwd=REPO, timeout=600)


def _machine_catalog(tmp_path):
    """A small German catalog of this machine (msgunfmt of its .mo), translations blanked:
    (path, entry count)."""
    msgunfmt = shutil.which("msgunfmt")
    folder = "/usr/share/locale/de/LC_MESSAGES"
    candidates = ["pg_test_timing-15", "pg_test_fsync-15", "polkit-1", "libidn2", "wget-gnulib"]
    found = [name for name in candidates if os.path.isfile(f"{folder}/{name}.mo")]
    if msgunfmt is None or not found:
        pytest.skip("needs gettext's msgunfmt and a small German .mo under " + folder)
    full = tmp_path / "full.po"
    subprocess.run([msgunfmt, f"{folder}/{found[0]}.mo", "-o", str(full)], check=True)
    catalog = polib.pofile(str(full))
    for entry in catalog:
        entry.msgstr = ""
        for n in entry.msgstr_plural:
            entry.msgstr_plural[n] = ""
    path = tmp_path / "blank.po"
    catalog.save(str(path))
    return path, len(catalog)


@pytest.mark.slow
@needs_msgfmt
def test_round_trip_of_a_catalog_of_this_machine(model_dir, tmp_path):
    source, count = _machine_catalog(tmp_path)
    output = tmp_path / "de.po"
    result = _run(model_dir, f"--input={source}", f"--output={output}")
    assert result.returncode == 0, result.stderr[-3000:]
    summary = result.stderr.strip().splitlines()[-1]
    assert summary.startswith("translated ") and f"of {count} entries" in summary, summary
    catalog = polib.pofile(str(output))
    assert len(catalog) == count
    translated = [e for e in catalog if e.msgstr or any(e.msgstr_plural.values())]
    assert translated and all(e.fuzzy for e in translated)
    assert all(len(e.msgstr_plural) == 2 for e in catalog if e.msgid_plural and e.fuzzy)
    check = _msgfmt_check(output)
    assert check.returncode == 0, check.stderr
    assert sorted(os.listdir(tmp_path)) == ["blank.po", "de.po", "full.po"]


@pytest.mark.slow
@needs_msgfmt
def test_a_pot_through_the_cli(model_dir, tmp_path):
    source = tmp_path / "prog.pot"
    source.write_text(POT, encoding="utf-8")
    output = tmp_path / "de.po"
    result = _run(model_dir, f"--input={source}", f"--output={output}", "--target_language=de")
    assert result.returncode == 0, result.stderr[-3000:]
    catalog = polib.pofile(str(output))
    assert (catalog.metadata["Language"], catalog.metadata["Plural-Forms"]) == \
        ("de", "nplurals=2; plural=(n != 1);")
    assert len(catalog) == 5
    check = _msgfmt_check(output)
    # The header, plural forms and newlines are this tool's; the format specifiers of "Open %s",
    # "%d file" and "Hello {name}" come out whole only through the decoder's protection
    # (DecodeOptions.protect, which decode_file applies): its errors are told apart.
    format_errors = [line for line in check.stderr.splitlines() if "format" in line
                     or "specification" in line or "directive" in line]
    other_errors = [line for line in check.stderr.splitlines()
                    if line not in format_errors and "warning:" not in line
                    and not re.search(r"msgfmt: found \d+ fatal errors?$", line)]
    assert not other_errors, check.stderr
    assert check.returncode == 0, check.stderr  # the format protection's assertion


def _refused(**options):
    """The one-line UserError of translate_catalog run as the CLI runs it (the decoder as its
    translator), which the CLI prints as `error: <message>` with exit status 1."""
    with pytest.raises(UserError) as refused:
        po_run.translate_catalog(PoOptions(**options))
    message = str(refused.value)
    assert "\n" not in message, message
    return message


@pytest.mark.slow
def test_the_cli_refuses_the_input_as_output_and_a_broken_catalog(model_dir, tmp_path):
    source = tmp_path / "in.po"
    source.write_text(_po(), encoding="utf-8")
    result = _run(model_dir, f"--input={source}", f"--output={source}")
    assert (result.returncode == exit_status.USER_ERROR
            and "Traceback" not in result.stderr), result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1].startswith(
        f"error: --output {source} is the input")
    assert source.read_text(encoding="utf-8") == _po()
    broken = tmp_path / "broken.po"
    broken.write_text(_po(body='msgid "a"\nmsgstr "b" "\n'), encoding="utf-8")
    assert _refused(model_dir=model_dir, input=str(broken), output=str(tmp_path / "out.po")) == \
        f"{broken}:11: end-of-line within string"
    assert sorted(os.listdir(tmp_path)) == ["broken.po", "in.po"]


def _translations(path):
    return {(e.msgctxt, e.msgid): (e.msgstr, dict(e.msgstr_plural), e.flags)
            for e in polib.pofile(str(path))}


@pytest.mark.slow
def test_a_killed_run_continues_where_it_was(model_dir, tmp_path):
    source, _ = _machine_catalog(tmp_path)
    output = tmp_path / "de.po"
    work = tmp_path / ("de.po" + po_run.WORK_SUFFIX)
    process = subprocess.Popen(_command(model_dir, f"--input={source}", f"--output={output}",
                                        "--chunk_lines=2"),
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV,
                               cwd=REPO)
    deadline = time.monotonic() + 300
    # The first finished chunk is in the work folder's journal: kill then.
    journal = work / "journal.jsonl"
    while not (journal.is_file() and journal.read_bytes().endswith(b"\n")):
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no progress record after 300 s"
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    process.stderr.close()
    assert not output.exists() and work.is_dir()

    result = _run(model_dir, f"--input={source}", f"--output={output}", "--chunk_lines=2")
    assert result.returncode == 0, result.stderr[-3000:]
    resumed = re.search(r"\((\d+) by the interrupted run resumed\)", result.stderr)
    assert resumed and int(resumed.group(1)) >= 2, result.stderr[-3000:]
    assert "t2t-lite-po: translated: " in result.stderr  # the rest was translated
    resumed_translations = _translations(output)
    assert not work.exists() and not (tmp_path / "de.po.lock").exists()

    # Another setting meets the unfinished run's work: refused (translate_catalog as the CLI
    # runs it), then --start_over replaces it and translates the whole catalog uninterrupted:
    # what the resumed run wrote.
    po_run.WorkFolder(str(work), {"other": "run"}, False)
    message = _refused(model_dir=model_dir, input=str(source), output=str(output), chunk_lines=2)
    assert message.startswith(f"{os.path.realpath(work)} holds an unfinished run of another "
                              "catalog") and "--start_over" in message, message
    result = _run(model_dir, f"--input={source}", f"--output={output}", "--chunk_lines=2",
                  "--start_over")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "by the interrupted run resumed" not in result.stderr, result.stderr[-3000:]
    assert _translations(output) == resumed_translations and not work.exists()


# ---- what is written passes msgfmt, by construction -----------------------------------------

GUARANTEE_BODY = r'''#, c-format
msgid "Read %s%zd %s, %zu"
msgstr ""

#, c-format
msgid "Copied 50% of %d files"
msgstr ""

#, python-format
msgid "%(count)d items in %(folder)s"
msgstr ""

#, python-brace-format
msgid "Hello {name}"
msgstr ""

msgid "_Open"
msgstr ""

msgid "Save &As"
msgstr ""

msgid "metadata_csum is on"
msgstr ""

#, sh-format
msgid "Set $HOME now"
msgstr ""

msgid "Tab\there\a"
msgstr ""
'''

BROKEN = {  # what a careless model writes for each line
    "Read %s%zd %s, %zu": "Gelesen %s%zd%z %s, %zu",
    "Copied 50% of %d files": "50% von %d Dateien kopiert",
    "%(count)d items in %(folder)s": "lemente in %(derder) %(count)d %(folder)s",
    "Hello {name}": "Hallo {name}",
    "Open": "Öffnen",
    "Save As": "Speichern unter",
    "metadata_csum is on": "Metadaten-Prüfsumme ist an",
    "Set $HOME now": "Setze $HOEM jetzt",
    "Tab": "Tab",  # the escapes separate the parts the model sees
    "here": "hier",
}


@needs_msgfmt
def test_a_broken_hypothesis_is_never_written(tmp_path):
    """Each entry's stand-in translation breaks what msgfmt checks, or not: the broken ones are
    left untranslated and counted, the others written, accelerators placed, escapes kept, and
    msgfmt -c and --check-accelerators (both marks) accept the catalog."""
    stats, output = _translate(tmp_path, _po(body=GUARANTEE_BODY),
                               translate=lambda lines, kinds: [BROKEN[line] for line in lines])
    entries = _entries(output)
    assert entries[(None, "Read %s%zd %s, %zu")].msgstr == ""
    assert entries[(None, "Copied 50% of %d files")].msgstr == ""  # "% v" is no directive
    assert entries[(None, "%(count)d items in %(folder)s")].msgstr == ""
    assert entries[(None, "Hello {name}")].msgstr == "Hallo {name}"
    assert entries[(None, "_Open")].msgstr == "Ö_ffnen"  # a key translate-toolkit accepts
    assert entries[(None, "Save &As")].msgstr == "&Speichern unter"
    assert entries[(None, "metadata_csum is on")].msgstr == ""  # its one `_` would be lost
    assert entries[(None, "Set $HOME now")].msgstr == ""  # msgfmt's own sh-format check
    written = {e.msgid: e for e in catalog_file.read(str(output)).messages()}
    assert written["Tab\there\a"].msgstr == "Tab\thier\a"  # polib would read "\\a"
    assert b'msgstr "Tab\\thier\\a"' in output.read_bytes()
    assert stats.left_untranslated == {po_run.LEFT_FORMAT: 4, compose.LEFT_MSGFMT: 1}
    assert stats.accelerators == 2 and stats.msgfmt == "accepted"
    for check in (["--check", "--use-fuzzy"], ["--use-fuzzy", "--check-accelerators=_"],
                  ["--use-fuzzy", "--check-accelerators=&"]):
        result = subprocess.run([MSGFMT, *check, "-o", os.devnull, str(output)],
                                capture_output=True, text=True)
        assert result.returncode == 0, (check, result.stderr)
    assert "4 entries left untranslated: their formats or accelerators could not be kept" in \
        stats.summary()


def test_the_next_hypothesis_is_taken_when_the_first_breaks_a_format(tmp_path):
    body = '#, c-format\nmsgid "%d files"\nmsgstr ""\n'
    stats, output = _translate(
        tmp_path, _po(body=body),
        translate=lambda lines, kinds: [["% Dateien", "%d Dateien"] for _ in lines])
    assert _entries(output)[(None, "%d files")].msgstr == "%d Dateien"
    assert stats.left == 0


class _ForcingEngine:
    """An engine with every attempt: the 1-best and the n-best lose the directive, the forced
    search keeps what spans_of asks for; two lines came from an earlier run."""

    can_force = True
    resumed = 2

    def __init__(self):
        self.asked = []

    def translate(self, lines, kinds, attempt, spans_of):
        self.asked.append((attempt, lines))
        if attempt != "forced":
            return [["Dateien kopiert"] for _ in lines]
        return [[" ".join(spans_of(line) + ["Dateien kopiert"])] for line in lines]


def test_a_given_engine_is_used_as_it_is(tmp_path):
    """translate_catalog(options, engine): its attempts in order, the forced one with the line's
    directives, its resumed lines counted; no model flag is needed and no work folder made."""
    source = tmp_path / "in.po"
    source.write_text(_po(body='#, c-format\nmsgid "Copied %d files"\nmsgstr ""\n'),
                      encoding="utf-8")
    output = tmp_path / "out.po"
    engine = _ForcingEngine()
    stats = po_run.translate_catalog(PoOptions(input=str(source), output=str(output)),
                                     engine=engine, kinds_of=_no_kinds)
    assert [attempt for attempt, _ in engine.asked] == ["best", "nbest", "forced"]
    assert engine.asked[-1][1] == ["Copied %d files"]
    assert _entries(output)[(None, "Copied %d files")].msgstr == "%d Dateien kopiert"
    assert stats.lines_resumed == 2 and stats.lines_retried == 1 and stats.left == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.po", "out.po"]


def _machine_catalogs(tmp_path, count):
    msgunfmt = shutil.which("msgunfmt")
    folder = "/usr/share/locale/de/LC_MESSAGES"
    if msgunfmt is None or not os.path.isdir(folder):
        pytest.skip("needs gettext's msgunfmt and German catalogs under " + folder)
    paths = []
    for name in sorted(os.listdir(folder))[:count * 3]:
        path = tmp_path / (name + ".po")
        subprocess.run([msgunfmt, os.path.join(folder, name), "-o", str(path)], check=True)
        text = path.read_text(encoding="utf-8", errors="replace")
        if all(field in text for field in ("Language:", "Plural-Forms:", "charset=")):
            paths.append(path)
        if len(paths) == count:
            break
    return paths


@needs_msgfmt
def test_a_complete_catalog_comes_back_byte_for_byte(tmp_path):
    for source in _machine_catalogs(tmp_path, 8):
        output = tmp_path / "out.po"
        stats = po_doubles.translate_catalog(
            PoOptions(input=str(source), output=str(output)),
            translate=lambda lines, kinds: pytest.fail(f"translated {lines[:3]}"),
            kinds_of=_no_kinds)
        assert output.read_bytes() == source.read_bytes(), source
        assert stats.translated == 0 and stats.kept == stats.entries


def test_an_entry_that_cannot_be_rewritten_alone_is_left_and_counted(tmp_path):
    body = 'msgid "one"\nmsgstr ""\n\nmsgid "two" msgstr ""\n\nmsgid "three"\nmsgstr ""\n'
    stats, output = _translate(tmp_path, _po(body=body))
    written = {e.msgid: e.msgstr for e in catalog_file.read(str(output)).messages()}
    assert written["one"] == "DE«one»" and written["three"] == "DE«three»"
    assert written["two"] == "" and b'msgid "two" msgstr ""\n' in output.read_bytes()
    assert stats.left_untranslated == {compose.LEFT_LAYOUT: 1}
    assert f"; 1 entry left untranslated: {compose.LEFT_LAYOUT};" in stats.summary()


def test_a_work_folder_whose_marker_cannot_be_written_is_not_left_behind(tmp_path, monkeypatch):
    """A full disk at the marker leaves no empty folder that would refuse the re-run."""
    import errno

    from t2t_lite.po import work_folder

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(work_folder.atomic, "write_json", full)
    with pytest.raises(OSError):
        work_folder.WorkFolder(str(tmp_path / "out.po.t2t-po-work"), {"run": 1}, False)
    assert os.listdir(tmp_path) == []
    monkeypatch.undo()
    work_folder.WorkFolder(str(tmp_path / "out.po.t2t-po-work"), {"run": 1}, False)
