"""t2t_lite/po/accelerators.py: a source's accelerator found in prose, taken out and placed on a
letter of the translation, counted as `msgfmt --check-accelerators` counts it (checked against
msgfmt) and as translate-toolkit's accelerators check reads it; the catalog's mark taken from its
own convention."""
import os
import shutil
import subprocess

import pytest
from translate.filters import checks

from t2t_lite.po import accelerators, catalog_file
from t2t_lite.po.accelerators import Accelerator

MSGFMT = shutil.which("msgfmt")


@pytest.mark.parametrize("text, found", [
    ("_Open", Accelerator("_", "O")),
    ("Save _As…", Accelerator("_", "A")),
    ("&File", Accelerator("&", "F")),
    ("Sa&ve", Accelerator("&", "v")),
    ("file_name", None),  # an identifier, not a key
    ("%s_%s", None),
    ("Tom &amp; Jerry", None),  # an entity
    ("Fish && &Chips", Accelerator("&", "C")),  # && is a literal
    ("_One _Two", None),  # two marks: msgfmt checks nothing
    ("trailing _", None),
    ("", None),
    # Marks outside prose: an attribute, placeholder names, a URL, an e-mail address.
    ('See <a href="/docs" target="_blank">the docs</a>', None),
    ("Add another %(model_name)s", None),
    ("Delete {form_id}", None),
    ("Change %(verbose_name)s", None),
    ("See https://example.org/_static", None),
    ("Write to first_last@example.org", None),
    ('<a target="_blank">_Help</a>', Accelerator("_", "H")),  # prose inside the link
    ("_Open %(file_name)s", Accelerator("_", "O")),
])
def test_find(text, found):
    assert accelerators.find(text) == found


def test_find_takes_only_the_catalogs_mark():
    assert accelerators.find("_Open", ("&",)) is None
    assert accelerators.find("&Save _As", ("_",)) == Accelerator("_", "A")


def _catalog(header_fields, body):
    header = "".join(f'"{name}: {value}\\n"\n' for name, value in header_fields)
    return catalog_file.parse(f'msgid ""\nmsgstr ""\n{header}\n{body}'.encode(), "x.po")


@pytest.mark.parametrize("fields, body, mark", [
    # The header says it (KDE's and Pology's field), whatever the entries show.
    ([("X-Accelerator-Marker", "&")], 'msgid "_Open"\nmsgstr ""\n', "&"),
    ([("X-Accelerator-Marker", "")], 'msgid "_Open"\nmsgstr ""\n\nmsgid "_Save"\nmsgstr ""\n',
     None),
    # Translated entries carry a mark over from their msgids.
    ([], 'msgid "_Open"\nmsgstr "Ö_ffnen"\n\nmsgid "&Save"\nmsgstr ""\n\n'
         'msgid "&Quit"\nmsgstr ""\n', "_"),
    # A blank catalog: at least two msgids use the mark in prose.
    ([], 'msgid "_Open"\nmsgstr ""\n\nmsgid "Save _As"\nmsgstr ""\n', "_"),
    ([], 'msgid "_Open"\nmsgstr ""\n\nmsgid "Save"\nmsgstr ""\n', None),
    # Django's catalogs: underscores in placeholders and attributes are no convention.
    ([], 'msgid "Add %(model_name)s"\nmsgstr ""\n\nmsgid "Delete {form_id}"\nmsgstr ""\n\n'
         'msgid "<a target=\\"_blank\\">Docs</a>"\nmsgstr ""\n', None),
])
def test_convention_is_the_catalogs_own(fields, body, mark):
    catalog = _catalog(fields, body)
    assert accelerators.convention(catalog.header_fields(), catalog.messages()) == mark


def test_count_as_msgfmt_counts():
    assert accelerators.count("a && b", "&") == 0
    assert accelerators.count("a &&& b", "&") == 1
    assert accelerators.count("_a _b", "_") == 2


@pytest.mark.parametrize("translation, accelerator, protected, placed", [
    # translate-toolkit refuses a key with a diacritic: the next letter carries it.
    ("Öffnen", Accelerator("_", "O"), (), "Ö_ffnen"),
    ("Ääh", Accelerator("_", "A"), (), "Ää_h"),
    ("Öö", Accelerator("_", "O"), (), None),
    ("Speichern unter", Accelerator("_", "A"), (), "_Speichern unter"),  # no "a": first word
    ("Datei", Accelerator("&", "F"), (), "&Datei"),
    ("Alles anzeigen", Accelerator("_", "a"), (), "_Alles anzeigen"),  # any case
    ("%s öffnen", Accelerator("_", "s"), [(0, 2)], "%s ö_ffnen"),
    ("%(model_name)s öffnen", Accelerator("_", "m"), (), "%(model_name)s ö_ffnen"),
    ('<a target="_blank">Hilfe</a>', Accelerator("_", "H"), (), '<a target="_blank">_Hilfe</a>'),
    ("Datei_name", Accelerator("_", "D"), (), None),  # one more mark would make two
    ("%s", Accelerator("_", "O"), [(0, 2)], None),  # no free letter
])
def test_place(translation, accelerator, protected, placed):
    assert accelerators.place(translation, accelerator, protected) == placed


def test_strip():
    assert accelerators.strip("Save _As", Accelerator("_", "A")) == "Save As"
    assert accelerators.strip("Fish && &Chips", Accelerator("&", "C")) == "Fish && Chips"
    # A plural entry's msgid_plural has its mark elsewhere.
    assert accelerators.strip("Delete %(n)s _files", Accelerator("_", "f")) == \
        "Delete %(n)s files"


def test_placed_marks_pass_translate_toolkits_check():
    checker = checks.StandardChecker(checks.CheckerConfig(targetlanguage="de",
                                                          accelmarkers=["_"]))
    for source, translation in [("_Open", "Öffnen"), ("Save _As", "Speichern unter"),
                                ("_Add %(model_name)s", "%(model_name)s hinzufügen")]:
        placed = accelerators.place(translation, accelerators.find(source))
        assert checker.accelerators(source, placed), placed


@pytest.mark.skipif(MSGFMT is None, reason="gettext's msgfmt is not installed")
def test_placed_marks_pass_msgfmt(tmp_path):
    pairs = [("_Open", "Öffnen"), ("Save _As", "Speichern unter"), ("&File", "Datei"),
             ("Fish && &Chips", "Fisch && Pommes"), ("Sa&ve", "Sichern")]
    body = ['msgid ""\nmsgstr "Content-Type: text/plain; charset=UTF-8\\n"\n']
    for source, translation in pairs:
        accelerator = accelerators.find(source)
        placed = accelerators.place(translation, accelerator)
        assert accelerators.count(placed, accelerator.mark) == 1
        body.append(f'msgid "{source}"\nmsgstr "{placed}"\n')
    path = tmp_path / "a.po"
    path.write_text("\n".join(body), encoding="utf-8")
    for mark in "&_":
        result = subprocess.run([MSGFMT, f"--check-accelerators={mark}", "-o", os.devnull,
                                 str(path)], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
