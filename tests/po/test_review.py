"""t2t-lite-po's second judge (t2t_lite/po/review.py): translate-toolkit's own checks, the
library behind pofilter, Weblate and Pootle, run on every candidate before it is written. A
candidate that fails a check its source does not fail is replaced by the next one; an entry for
which every candidate fails is left untranslated and counted by check. Escapes of the msgid
(`\\t`, `\\a`, ...) come out where the source has them, and accelerators are handled only where
the catalog has them (its own mark, in prose)."""
import os
import shutil
import subprocess

import pytest
from translate.filters import checks
from translate.storage import pypo

from t2t_lite.po import catalog_file, review
from t2t_lite.po import run as po_run
from t2t_lite.po.run import PoOptions
from tests.po import po_doubles

MSGFMT = shutil.which("msgfmt")
needs_msgfmt = pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed")

HEADER = ('msgid ""\nmsgstr ""\n"Language: de\\n"\n"MIME-Version: 1.0\\n"\n'
          '"Content-Type: text/plain; charset=UTF-8\\n"\n"Content-Transfer-Encoding: 8bit\\n"\n'
          '"Plural-Forms: nplurals=2; plural=(n != 1);\\n"\n{extra}\n')


def _translate(tmp_path, body, hypotheses, extra=""):
    """t2t-lite-po on a catalog with a stand-in model: hypotheses(line) -> its n-best list."""
    source = tmp_path / "in.po"
    source.write_text(HEADER.format(extra=extra) + body, encoding="utf-8")
    output = tmp_path / "out.po"
    sent = []

    def translate(lines, kinds):
        sent.extend(lines)
        return [hypotheses(line) for line in lines]

    stats = po_doubles.translate_catalog(PoOptions(input=str(source), output=str(output)),
                                         translate=translate, kinds_of=lambda flags: frozenset())
    written = {(e.msgctxt, e.msgid): e for e in catalog_file.read(str(output)).messages()}
    return stats, written, output, sent


def _msgfmt_accepts(path):
    for check in (["--check", "--use-fuzzy"], ["--use-fuzzy", "--check-accelerators=_"],
                  ["--use-fuzzy", "--check-accelerators=&"]):
        result = subprocess.run([MSGFMT, *check, "-o", os.devnull, str(path)],
                                capture_output=True, text=True)
        assert result.returncode == 0, (check, result.stderr)


# ---- the reviewer: translate-toolkit's checks, failures the source does not explain ---------

@pytest.mark.parametrize("source, translation, check", [
    ("Name:\t%s", "Name: %s", "tabs"),
    ("Line one\nLine two", "Zeile eins Zeile zwei", "newlines"),
    ("Use C:\\\\temp", "Nutze C:temp", "escapes"),
    ("%d of %s", "%d von", "printf"),
    ("Hello {name}", "Hallo {Name}", "pythonbraceformat"),
    ("Press <b>Apply</b>", "Drücken Sie <A><b></b> Übernehmen", "xmltags"),
    ("See https://docs.xfce.org/apps/parole/bugs", "Siehe ht://www.x.x/s/s", "urls"),
    ("Mail clemens@ladisch.de", "Schreiben Sie an Clemens", "emails"),
    ("Edit /etc/crypttab", "Bearbeiten Sie /cet/cryptrypt", "filepaths"),
    ("Use --removeall", "Verwenden Sie --remove", "options"),
    ("Rates 44100 and 48000", "Raten und", "numbers"),
    ("Server Error (500)", "Serverfehler ((500)", "brackets"),
    ("the file", "die die Datei", "doublewords"),
    ("Save", " Speichern", "startwhitespace"),
    ("Save", "Speichern ", "endwhitespace"),
])
def test_each_check_refuses_what_a_reviewer_would(source, translation, check):
    assert review.Reviewer("de").unexplained(source, translation) == check


def test_a_failure_the_source_has_itself_is_explained():
    reviewer = review.Reviewer("de")
    assert "doublewords" in reviewer.failures("bla bla", "bla bla")
    assert reviewer.unexplained("bla bla", "bla bla") is None
    assert reviewer.unexplained("Open", "Öffnen") is None


def test_the_checks_are_translate_toolkits_own():
    # The same verdicts as the library's checker run as pofilter runs it.
    reviewer = review.Reviewer("de")
    checker = checks.StandardChecker(checks.CheckerConfig(targetlanguage="de",
                                                          varmatches=[("%", 1)]),
                                     limitfilters=list(review.CHECKS))
    unit = pypo.pounit("Name:\t%s 5")
    unit.target = "Name: %s die die"
    expected = sorted(checker.run_filters(unit))
    assert expected == ["doublewords", "numbers", "tabs"]
    assert sorted(reviewer.failures("Name:\t%s 5", "Name: %s die die")) == expected


def test_the_checker_is_configured_from_the_catalog(tmp_path):
    gnome = catalog_file.parse((HEADER.format(extra="") + 'msgid "_Open"\nmsgstr ""\n\n'
                                'msgid "Save _As"\nmsgstr ""\n').encode(), "x.po")
    reviewer = review.Reviewer.for_catalog(gnome.header_fields(), gnome.messages())
    assert reviewer.accelerator_mark == "_" and reviewer.config.targetlanguage == "de"
    assert reviewer.unexplained("_Open", "Öffnen") == "accelerators"
    assert reviewer.unexplained("_Open", "Ö_ffnen") is None
    kde = catalog_file.parse((HEADER.format(extra='"X-Accelerator-Marker: &\\n"\n')
                              + 'msgid "_Open"\nmsgstr ""\n').encode(), "x.po")
    assert review.Reviewer.for_catalog(kde.header_fields(), kde.messages()).accelerator_mark \
        == "&"


# ---- t2t-lite-po: the next hypothesis, then left untranslated and counted by check -------------

@needs_msgfmt
def test_a_candidate_a_reviewer_would_refuse_is_replaced_by_the_next(tmp_path):
    body = ('msgid "Rates 44100 and 48000"\nmsgstr ""\n\nmsgid "Open the file"\nmsgstr ""\n\n'
            'msgid "See https://docs.xfce.org/apps/parole/bugs"\nmsgstr ""\n')
    nbest = {"Rates 44100 and 48000": ["Raten und", "Raten 44100 und 48000"],
             "Open the file": ["Öffnen Sie die die Datei", "Öffnen Sie die Datei"],
             "See https://docs.xfce.org/apps/parole/bugs": [
                 "Siehe ht://www.x.x/s/s", "Siehe https://docs.xfce.org/apps/parole/bugs"]}
    stats, written, output, _ = _translate(tmp_path, body, lambda line: nbest[line])
    assert written[(None, "Rates 44100 and 48000")].msgstr == "Raten 44100 und 48000"
    assert written[(None, "Open the file")].msgstr == "Öffnen Sie die Datei"
    assert written[(None, "See https://docs.xfce.org/apps/parole/bugs")].msgstr == \
        "Siehe https://docs.xfce.org/apps/parole/bugs"
    assert stats.left == 0
    _msgfmt_accepts(output)


@needs_msgfmt
def test_an_entry_every_candidate_of_fails_is_left_and_counted_by_check(tmp_path):
    body = ('msgid "Use --removeall"\nmsgstr ""\n\nmsgid "Rates 44100"\nmsgstr ""\n\n'
            'msgid "Edit /etc/crypttab"\nmsgstr ""\n\nmsgid "Fine"\nmsgstr ""\n')
    nbest = {"Use --removeall": ["Verwenden Sie --remove"], "Rates 44100": ["Raten"],
             "Edit /etc/crypttab": ["Bearbeiten Sie /cet/crypt"], "Fine": ["Gut"]}
    stats, written, output, _ = _translate(tmp_path, body, lambda line: nbest[line])
    assert [written[(None, msgid)].msgstr for msgid in nbest] == ["", "", "", "Gut"]
    assert stats.left_untranslated == {review.LEFT.format("options"): 1,
                                       review.LEFT.format("numbers"): 1,
                                       review.LEFT.format("filepaths"): 1}
    assert "1 entry left untranslated: translate-toolkit's numbers check fails for every " \
        "hypothesis" in stats.summary()
    _msgfmt_accepts(output)


# ---- escapes as the source has them ------------------------------------------------------------

@needs_msgfmt
@pytest.mark.parametrize("escape, char", [
    ("\\t", "\t"), ("\\a", "\a"), ("\\b", "\b"), ("\\f", "\f"), ("\\v", "\v"), ("\\r", "\r"),
    ("\\n", "\n"), ("\\033[1m", "\x1b[1m"),
])
def test_every_escape_of_the_msgid_is_in_the_msgstr(tmp_path, escape, char):
    # A model turns a control character into a space or drops it: it never sees one.
    body = f'#, c-format\nmsgid "Name:{escape}%s and more"\nmsgstr ""\n'
    words = {"Name:": "Name:", "Name: %s and more": "Name: %s und mehr",
             "%s and more": "%s und mehr", "[1m%s and more": "[1m%s und mehr"}
    stats, written, output, sent = _translate(
        tmp_path, body, lambda line: [words[line].replace(" ", " ")])
    assert written[(None, f"Name:{char}%s and more")].msgstr == f"Name:{char}%s und mehr"
    assert all(not any(ord(c) < 32 for c in line) for line in sent)
    # Written as msgmerge writes it: a named escape as the source's, ESC as the byte.
    written_bytes = output.read_bytes().rsplit(b"msgstr", 1)[1]
    assert (char if char.startswith("\x1b") else escape).encode() in written_bytes
    assert stats.left == 0
    _msgfmt_accepts(output)


@needs_msgfmt
def test_a_backslash_of_the_msgid_is_kept_or_the_next_hypothesis_taken(tmp_path):
    body = 'msgid "Use C:\\\\temp now"\nmsgstr ""\n'
    stats, written, output, _ = _translate(
        tmp_path, body, lambda line: ["Nutze C:temp jetzt", "Nutze C:\\temp jetzt"])
    assert written[(None, "Use C:\\temp now")].msgstr == "Nutze C:\\temp jetzt"
    assert b'msgstr "Nutze C:\\\\temp jetzt"' in output.read_bytes()


@needs_msgfmt
def test_a_part_with_nothing_to_translate_is_copied(tmp_path):
    body = '#, c-format\nmsgid "Name:\\t%s"\nmsgstr ""\n\n#, c-format\nmsgid "%s"\nmsgstr ""\n'
    stats, written, output, sent = _translate(tmp_path, body, lambda line: ["Nom:"])
    assert sent == ["Name:"]
    assert written[(None, "Name:\t%s")].msgstr == "Nom:\t%s"
    assert written[(None, "%s")].msgstr == "%s"
    _msgfmt_accepts(output)


# ---- accelerators only where they are ----------------------------------------------------------

DJANGO = r'''#, python-format
msgid "Add another %(model_name)s"
msgstr ""

#, python-brace-format
msgid "Delete {form_id}"
msgstr ""

msgid "Read <a href=\"/docs/\" target=\"_blank\">the docs</a>"
msgstr ""

#, python-format
msgid "Change %(verbose_name)s"
msgstr ""
'''
DJANGO_DE = {"Add another %(model_name)s": "Weiteres %(model_name)s hinzufügen",
             "Delete {form_id}": "{form_id} löschen",
             'Read <a href="/docs/" target="_blank">the docs</a>':
                 'Lesen Sie <a href="/docs/" target="_blank">die Dokumentation</a>',
             "Change %(verbose_name)s": "%(verbose_name)s ändern"}


@needs_msgfmt
def test_underscores_in_placeholders_and_attributes_are_no_accelerators(tmp_path):
    stats, written, output, sent = _translate(tmp_path, DJANGO,
                                              lambda line: [DJANGO_DE[line]])
    assert sorted(sent) == sorted(DJANGO_DE)  # nothing taken out of the sources
    assert {msgid: written[(None, msgid)].msgstr for msgid in DJANGO_DE} == DJANGO_DE
    assert stats.left == 0 and stats.accelerators == 0
    _msgfmt_accepts(output)


@needs_msgfmt
def test_the_catalogs_mark_is_placed_and_a_hypothesis_without_a_letter_skipped(tmp_path):
    body = ('msgid "_Open"\nmsgstr ""\n\nmsgid "Save _As"\nmsgstr ""\n\n'
            'msgid "_Quit %(app)s"\nmsgstr ""\n\nmsgid "Fish & Chips"\nmsgstr ""\n')
    nbest = {"Open": ["Öffnen"], "Save As": ["Speichern unter"],
             # the first hypothesis has no letter outside its placeholder to carry the mark
             "Quit %(app)s": ["%(app)s", "%(app)s beenden"], "Fish & Chips": ["Fisch & Pommes"]}
    stats, written, output, sent = _translate(tmp_path, body, lambda line: nbest[line])
    assert sorted(sent) == sorted(nbest)
    assert written[(None, "_Open")].msgstr == "Ö_ffnen"
    assert written[(None, "Save _As")].msgstr == "_Speichern unter"
    assert written[(None, "_Quit %(app)s")].msgstr == "%(app)s _beenden"
    assert written[(None, "Fish & Chips")].msgstr == "Fisch & Pommes"  # `&` is not the mark
    assert stats.left == 0 and stats.accelerators == 3
    _msgfmt_accepts(output)


def test_the_forced_attempt_forces_a_placeholder_once_and_a_literal_ampersand():
    # Forcing `model_name` besides `%(model_name)s` made every hypothesis hold two `_`.
    spans = po_run._spans_of({"Add another %(model_name)s": (frozenset(), ("python-format",)),
                              "Font & Colors": (frozenset(), ()),
                              "Use metadata_csum": (frozenset(), ())})
    assert spans("Add another %(model_name)s") == ["%(model_name)s"]
    assert spans("Font & Colors") == ["&"]
    assert spans("Use metadata_csum") == ["metadata_csum"]
