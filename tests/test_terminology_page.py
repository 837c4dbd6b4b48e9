"""docs/terminology.md is run: its glossary command and its PO walkthrough, on the session's
tiny export (a catalog of this machine stands in for the downloaded package's), each command as
the page writes it but for the model and the catalog's path."""
import os
import re
import shlex
import subprocess
import sys

import polib
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, "docs", "terminology.md")
BIN = os.path.dirname(sys.executable)
LOCAL_CATALOG = "/usr/share/locale/de/LC_MESSAGES/pg_test_timing-15.mo"
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1",
           PATH=BIN + os.pathsep + os.environ.get("PATH", ""))

pytestmark = pytest.mark.slow


def _commands(section):
    """The page's command lines (continuations joined) of a section, in order."""
    text = open(PAGE, encoding="utf-8").read()
    start = text.index(section)
    end = text.find("\n## ", start + 1)
    lines = text[start:end if end > 0 else None].replace("\\\n", " ").splitlines()
    return [" ".join(line.split()) for line in lines
            if re.match(r"    (t2t-lite-|msgunfmt|msgfilter|msgfmt|apt-get)", line)]


def _run(command, folder, export_dir):
    command = command.replace("runs/ende_gettext/export", export_dir)
    result = subprocess.run(shlex.split(command), cwd=folder, env=ENV, capture_output=True,
                            timeout=600)
    assert result.returncode == 0, (command, result.stderr.decode()[-3000:])
    return result


def test_the_glossary_command_runs(export_version_dir, tmp_path):
    text = open(PAGE, encoding="utf-8").read()
    glossary = re.search(r"    # terms.tsv\n((?:    .*\n)+)", text).group(1)
    # The page's German targets have letters the session's tiny vocabulary lacks, and a phrase
    # with a token outside the vocabulary is refused: the same rows with words it has.
    rows = "".join(line[4:] + "\n" for line in glossary.splitlines())
    rows = rows.replace("Ordner", "Hund").replace("Verzeichnis", "Katze")
    (tmp_path / "terms.tsv").write_text(rows, encoding="utf-8")
    (tmp_path / "in.en").write_text("the directory is small .\nwe read books\n", encoding="utf-8")
    command, = _commands("## A glossary")
    result = _run(command, tmp_path, export_version_dir)
    assert len((tmp_path / "out.de").read_text(encoding="utf-8").splitlines()) == 2
    assert "2 glossary terms applied; 1 line constrained" in result.stderr.decode()


@pytest.mark.skipif(not os.path.exists(LOCAL_CATALOG), reason=f"no {LOCAL_CATALOG} here")
def test_the_po_walkthrough_runs_and_msgfmt_accepts_it(export_version_dir, tmp_path):
    commands = _commands("## PO catalogs")
    assert commands[0].startswith("t2t-lite-po") and commands[1].startswith("msgfmt -c")
    assert commands[2].startswith("apt-get download indent")
    walkthrough = [c.replace("deb/usr/share/locale/de/LC_MESSAGES/indent.mo", LOCAL_CATALOG)
                   for c in commands[3:]] + [commands[1]]
    assert [c.split()[0] for c in walkthrough] == ["msgunfmt", "msgfilter", "t2t-lite-po",
                                                   "msgfmt"]
    results = [_run(command, tmp_path, export_version_dir) for command in walkthrough]
    translated, original = (polib.pofile(str(tmp_path / name))
                            for name in ("indent.mt.po", "indent.de.po"))
    assert [e.msgid for e in translated] == [e.msgid for e in original]
    # The tiny model's random words often fail a reviewer's check (a word twice): such an
    # entry is left untranslated and counted; every other one is written, fuzzy.
    written = [e for e in translated if e.msgstr or any(e.msgstr_plural.values())]
    assert len(translated) > 5 and written and all("fuzzy" in e.flags for e in written)
    summary = results[2].stderr.decode()
    left = sum(int(n) for n in re.findall(r"(\d+) entr(?:y|ies) left untranslated", summary))
    assert left == len(translated) - len(written), summary[-2000:]
