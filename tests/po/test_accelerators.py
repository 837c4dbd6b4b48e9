"""t2t_lite/po/accelerators.py: a source's accelerator found, taken out and placed on a letter of
the translation, counted as `msgfmt --check-accelerators` counts it (checked against msgfmt)."""
import os
import shutil
import subprocess

import pytest

from t2t_lite.po import accelerators
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
])
def test_find(text, found):
    assert accelerators.find(text) == found


def test_count_as_msgfmt_counts():
    assert accelerators.count("a && b", "&") == 0
    assert accelerators.count("a &&& b", "&") == 1
    assert accelerators.count("_a _b", "_") == 2


@pytest.mark.parametrize("translation, accelerator, protected, placed", [
    ("Öffnen", Accelerator("_", "O"), (), "_Öffnen"),
    ("Speichern unter", Accelerator("_", "A"), (), "_Speichern unter"),  # no "a": first word
    ("Datei", Accelerator("&", "F"), (), "&Datei"),
    ("Alles anzeigen", Accelerator("_", "a"), (), "_Alles anzeigen"),  # any case
    ("%s öffnen", Accelerator("_", "s"), [(0, 2)], "%s öffnen".replace("ö", "_ö", 1)),
    ("Datei_name", Accelerator("_", "D"), (), None),  # one more mark would make two
    ("%s", Accelerator("_", "O"), [(0, 2)], None),  # no free letter
])
def test_place(translation, accelerator, protected, placed):
    assert accelerators.place(translation, accelerator, protected) == placed


def test_strip():
    assert accelerators.strip("Save _As", Accelerator("_", "A")) == "Save As"
    assert accelerators.strip("Fish && &Chips", Accelerator("&", "C")) == "Fish && Chips"


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
