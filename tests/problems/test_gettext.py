"""Gettext problem: message cleaning, a catalog built here end to end, the machine's real catalogs."""
import glob

import polib
import pytest

from t2t_lite import registry
from t2t_lite.data import text_io
from t2t_lite.errors import UserError
from t2t_lite.problems import gettext


@pytest.mark.parametrize("source, target, expected", [
    ("Open the file", "Datei öffnen", ("Open the file", "Datei öffnen")),
    ("Save _As…", "Speichern _unter…", ("Save As…", "Speichern unter…")),
    ("Zoom _Out", "Weg_zoomen", ("Zoom Out", "Wegzoomen")),
    ("&Open file", "Datei ö&ffnen", ("Open file", "Datei öffnen")),
    ("calling unlock_db_file twice", "unlock_db_file zweimal aufgerufen",
     ("calling unlock_db_file twice", "unlock_db_file zweimal aufgerufen")),
    ("|pinentry-label|_Yes", "_Ja", ("Yes", "Ja")),
    ("Cannot open %s:\n%s\n", "Kann %s nicht\nöffnen: %s\n",
     ("Cannot open %s: %s", "Kann %s nicht öffnen: %s")),
    ("  -q, --quiet     print nothing\n", "  -q, --quiet     nichts ausgeben\n",
     ("print nothing", "nichts ausgeben")),
    ("  -q, --quiet     print nothing\n", "  -s, --still     nichts ausgeben\n", "formatted_block"),
    ("Usage:\n  -a   all\n  -b   both\n", "Aufruf:\n  -a   alle\n  -b   beide\n", "formatted_block"),
    ("Cannot open %s", "Kann nicht öffnen", "placeholder_mismatch"),
    ("Cannot open %1$s at %2$d", "Bei %2$d kann %1$s nicht geöffnet werden",
     ("Cannot open %1$s at %2$d", "Bei %2$d kann %1$s nicht geöffnet werden")),
    ("Not translated yet", "", "untranslated"),
    ("Linux", "Linux", "identical"),
    ("%s: %d", "%s: %d", "no_letters"),
    ("A short message here", "x" * 200, "length_ratio"),
])
def test_clean_pair(source, target, expected):
    assert gettext.clean_pair(source, target) == expected


def build_catalog(path, entries):
    po = polib.POFile()
    po.metadata = {"Content-Type": "text/plain; charset=UTF-8"}
    for msgid, msgstr in entries:
        po.append(polib.POEntry(msgid=msgid, msgstr=msgstr))
    po.append(polib.POEntry(msgid="%d file", msgid_plural="%d files",
                            msgstr_plural={0: "%d Datei", 1: "%d Dateien"}))
    po.append(polib.POEntry(msgctxt="menu", msgid="Quit the game", msgstr="Spiel beenden"))
    path.parent.mkdir(parents=True, exist_ok=True)
    po.save_as_mofile(str(path))


def test_catalog_end_to_end(tmp_path):
    locale = tmp_path / "locale"
    entries = [(f"Cannot open file number {i}", f"Kann Datei Nummer {i} nicht öffnen")
               for i in range(400)]
    build_catalog(locale / "de" / "LC_MESSAGES" / "app.mo", entries + [("Linux", "Linux")])
    build_catalog(locale / "de" / "LC_MESSAGES" / "iso_639.mo", [("German", "Deutsch")])
    build_catalog(locale / "fr" / "LC_MESSAGES" / "app.mo",
                  [(s, s.replace("Cannot open file number", "Impossible d'ouvrir le fichier"))
                   for s, _ in entries])
    problem = registry.problem("translate_ende_gettext", locale_dir=str(locale), vocab_size="100")
    assert problem.dataset_name == "translate_ende_gettext"
    report = problem.generate_data(str(tmp_path / "data"))
    total = sum(report[s]["num_examples"] for s in ("train", "dev", "test"))
    assert total == 402  # 400 sentences + plural singular form + context entry; no ISO names
    assert report["train"]["skipped:identical"] == 1
    pairs = problem.eval_text_pairs(str(tmp_path / "data"), "dev")
    assert pairs and all(s.startswith("Cannot open file number") for s, _ in pairs)

    # Any pair is one argument away: German -> French joins the two catalogs on the msgid.
    defr = registry.problem("translate_gettext", source_lang="de", target_lang="fr",
                            locale_dir=str(locale))
    assert defr.dataset_name == "translate_defr_gettext"
    first = next(p for p in defr.generate_samples("train", None)
                 if not isinstance(p, text_io.Skipped))
    assert first[0].startswith("Kann Datei") and first[1].startswith("Impossible d'ouvrir")


def test_missing_catalogs_and_language_are_user_errors(tmp_path):
    problem = registry.problem("translate_gettext", target_lang="xx", locale_dir=str(tmp_path))
    with pytest.raises(UserError, match="no gettext catalogs for en-xx"):
        problem.generate_data(str(tmp_path / "data"))
    with pytest.raises(UserError, match="target_lang"):
        registry.problem("translate_gettext")


@pytest.mark.slow
@pytest.mark.skipif(not glob.glob("/usr/share/locale/de/LC_MESSAGES/*.mo"),
                    reason="no German gettext catalogs on this machine")
def test_real_german_catalogs_give_disjoint_deterministic_splits():
    problem = registry.problem("translate_ende_gettext")
    dev = [p for p in problem.generate_samples("dev", None) if not isinstance(p, text_io.Skipped)]
    test = [p for p in problem.generate_samples("test", None)]
    assert len(dev) > 100 and len(test) > 100
    assert not {s for s, _ in dev} & {s for s, _ in test}
    assert dev == list(problem.generate_samples("dev", None))
    for source, target in dev:
        assert "\n" not in source + target and source != target
    print(f"real de catalogs: dev {len(dev)} pairs, test {len(test)} pairs")


def test_domain_filters_split_the_catalogs_into_families(tmp_path):
    locale = tmp_path / "locale"
    for domain in ("psql-15", "postgres-15", "coreutils"):
        build_catalog(locale / "de" / "LC_MESSAGES" / f"{domain}.mo",
                      [(f"{domain} message number {i}", f"{domain} Meldung Nummer {i}")
                       for i in range(5)])
    family = registry.problem("translate_ende_gettext", locale_dir=str(locale), domains="-15$")
    rest = registry.problem("translate_ende_gettext", locale_dir=str(locale),
                            exclude_domains="-15$")
    assert sorted(family.catalogs("de")) == ["postgres-15", "psql-15"]
    assert sorted(rest.catalogs("de")) == ["coreutils"]
    # Each subset writes files of its own name, never the whole corpus's.
    names = {p.dataset_name for p in (family, rest)}
    assert len(names) == 2 and "translate_ende_gettext" not in names
    with pytest.raises(UserError, match="bad domain pattern"):
        registry.problem("translate_ende_gettext", domains="(")
