"""Constraint lines and glossaries: parsed, matched and refused as the decoder reads them."""
import pytest

from t2t_lite.errors import UserError
from t2t_lite.file_decoding import DecodeOptions, _settings, check_options
from t2t_lite.inference import constraints


def test_a_line_splits_into_phrases_alternatives_and_negatives():
    line = "Verzeichnis|Verzeichnisses | Verzeichnisse\t!Ordner|Mappe\t%s"
    assert constraints.split_line(line) == [
        (False, ["Verzeichnis", "Verzeichnisses", "Verzeichnisse"]),
        (True, ["Ordner", "Mappe"]), (False, ["%s"])]
    assert constraints.split_line("") == [] and constraints.split_line("  ") == []
    assert constraints.split_line(constraints.join_line(constraints.split_line(line))) == \
        constraints.split_line(line)


@pytest.mark.parametrize("line", ["a\t\tb", "a|\tb", "!", "!|x", "a\t ", "\tb"])
def test_an_empty_phrase_or_alternative_is_refused(line):
    with pytest.raises(ValueError, match="empty phrase"):
        constraints.split_line(line)


def test_more_than_16_phrases_are_refused():
    constraints.split_line("\t".join(["a"] * 16))
    with pytest.raises(ValueError, match="17 phrases; at most 16"):
        constraints.split_line("\t".join(["a"] * 17))


def test_the_constraints_file_names_its_bad_line_and_its_line_count(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("Haus\n\nHund\t\tKatze\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"^--constraints_file .*c\.txt:3: an empty phrase"):
        constraints.read_constraints_file(str(path), total_lines=3)
    with pytest.raises(UserError, match="has 3 lines but the input has 4"):
        constraints.read_constraints_file(str(path), total_lines=4)
    # A shard reads its own lines only, and is judged on those.
    assert constraints.read_constraints_file(str(path), 0, 2, total_lines=3) == ["Haus", ""]


def test_a_glossary_applies_its_terms_as_whole_words(tmp_path):
    path = tmp_path / "g.tsv"
    path.write_text("# term\tGerman\n\nfolder\tVerzeichnis|Ordner\nfile\t!Datei\n",
                    encoding="utf-8")
    glossary = constraints.Glossary.load(str(path))
    assert glossary.phrases_for("Open the folder.") == [(False, ["Verzeichnis", "Ordner"])]
    assert glossary.phrases_for("a file, a folder") == [(False, ["Verzeichnis", "Ordner"]),
                                                         (True, ["Datei"])]
    assert glossary.phrases_for("profile folders File") == []  # whole words, case-sensitive
    ignoring = constraints.Glossary.load(str(path), ignore_case=True)
    assert ignoring.phrases_for("File") == [(True, ["Datei"])]


@pytest.mark.parametrize("row, reason", [("folder", "expected 'source term"),
                                         ("folder\tA\tB", "expected 'source term"),
                                         ("\tVerzeichnis", "expected 'source term"),
                                         ("folder\t", "expected 'source term"),
                                         ("folder\tA||B", "an empty phrase")])
def test_a_malformed_glossary_row_is_refused_with_its_line(tmp_path, row, reason):
    path = tmp_path / "g.tsv"
    path.write_text(f"ok\tgut\n{row}\n", encoding="utf-8")
    with pytest.raises(UserError, match=rf"^--glossary .*g\.tsv:2: {reason}"):
        constraints.Glossary.load(str(path))


def test_ctranslate2_refuses_constraints_in_one_line():
    for flag in ("constraints_file", "glossary"):
        options = DecodeOptions(export_dir="E", engine="ctranslate2", **{flag: "x.txt"})
        with pytest.raises(UserError, match=f"--{flag} needs --engine=tensorflow"):
            check_options(options)


def test_a_bad_protect_setting_is_refused():
    with pytest.raises(UserError, match="--protect=printf,tags: expected auto, none"):
        check_options(DecodeOptions(model_dir="M", protect="printf,tags"))


def test_a_resume_identity_holds_the_constraints_and_the_glossary(tmp_path):
    path = tmp_path / "c.txt"
    path.write_text("Haus\n", encoding="utf-8")
    options = DecodeOptions(model_dir="M", constraints_file=str(path), glossary=str(path))
    before = _settings(options, "float32", "default")
    path.write_text("Hund\n", encoding="utf-8")
    after = _settings(options, "float32", "default")
    assert before["constraints_sha256"] != after["constraints_sha256"]
    assert before["glossary_sha256"] != after["glossary_sha256"]
    assert _settings(DecodeOptions(model_dir="M"), "float32", "default")["glossary_sha256"] is None


def test_a_span_repair_that_breaks_a_phrase_counts_the_line_as_unmet():
    from t2t_lite.inference import batch_decode

    stats = batch_decode.DecodeStats(constraints_unmet=0)
    texts = ["arp: %s: unknown address family.", "%d files", "%d files"]
    results = [[("arp: % unbekannte Adressfamilie.", -1.0)], [("%d Dateien", -1.0)],
               [("Dateien", -1.0)]]
    lines = ["unbekannte Adressfamilie.", "Dateien", "Dateien"]
    fixed = batch_decode._protect(texts, results, frozenset({"printf"}), stats, lines)
    assert "%s" in fixed[0][0][0] and "unbekannte Adressfamilie." not in fixed[0][0][0]
    assert fixed[2][0][0] == "%d Dateien" or "%d" in fixed[2][0][0]
    batch_decode.count_constraints(stats, lines, fixed)
    assert (stats.protected, stats.protect_repaired, stats.constraints_unmet) == (3, 2, 1)
    assert stats.constrained == 3


def test_every_line_is_counted_once_met_could_not_or_not_constrained():
    from t2t_lite.inference import batch_decode

    stats = batch_decode.DecodeStats(lines=6)
    lines = ["Datei", "Datei", "", "!Datei", "Datei\tDatei", "Ordner"]
    results = [[("Die Datei fehlt", 0.0)], [("Das Dateiformat", 0.0)], [("x", 0.0)],
               [("Formatdatei", 0.0)], [("Datei und Datei", 0.0)], []]  # the last: no tokens
    batch_decode.count_constraints(stats, lines, results)
    assert (stats.constrained, stats.constraints_unmet) == (5, 2)
    assert "5 lines constrained, 3 met all their phrases, 2 could not, 1 not constrained" in \
        stats.summary()
