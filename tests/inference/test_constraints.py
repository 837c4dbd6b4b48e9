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
def test_an_empty_phrase_or_alternative_is_refused(line):  # noqa: D103
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
    # In source order.
    assert glossary.phrases_for("a file, a folder") == [(True, ["Datei"]),
                                                         (False, ["Verzeichnis", "Ordner"])]
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
    options = DecodeOptions(model_dir="M", constraints_file=str(path), glossary=str(path))

    def read(text):  # the bytes the decoder read once at its start
        return {"constraints_file": text.encode(), "glossary": text.encode()}

    before = _settings(options, "float32", "default", read("Haus\n"))
    after = _settings(options, "float32", "default", read("Hund\n"))
    assert before["constraints_sha256"] != after["constraints_sha256"]
    assert before["glossary_sha256"] != after["glossary_sha256"]
    unread = {"constraints_file": None, "glossary": None}
    assert _settings(DecodeOptions(model_dir="M"), "float32", "default",
                     unread)["glossary_sha256"] is None


def test_a_span_repair_that_breaks_a_phrase_counts_the_line_as_unmet():
    from t2t_lite.inference import batch_decode, line_checks

    stats = batch_decode.DecodeStats(constraints_unmet=0)
    texts = ["arp: %s: unknown address family.", "%d files", "%d files"]
    results = [[("arp: % unbekannte Adressfamilie.", -1.0)], [("%d Dateien", -1.0)],
               [("Dateien", -1.0)]]
    lines = ["unbekannte Adressfamilie.", "Dateien", "Dateien"]
    repaired = [False] * 3
    fixed = line_checks.repair_spans(texts, results, frozenset({"printf"}), stats, repaired)
    assert "%s" in fixed[0][0][0] and "unbekannte Adressfamilie." not in fixed[0][0][0]
    assert fixed[2][0][0] == "%d Dateien" or "%d" in fixed[2][0][0]
    line_checks.count_constraints(stats, lines, fixed)
    assert (stats.protected, stats.protect_repaired, stats.constraints_unmet) == (3, 2, 1)
    assert stats.constrained == 3


def test_every_line_is_counted_once_met_could_not_or_not_constrained():
    from t2t_lite.inference import batch_decode, line_checks

    stats = batch_decode.DecodeStats(lines=6)
    lines = ["Datei", "Datei", "", "!Datei", "Datei\tDatei", "Ordner"]
    results = [[("Die Datei fehlt", 0.0)], [("Das Dateiformat", 0.0)], [("x", 0.0)],
               [("Formatdatei", 0.0)], [("Datei und Datei", 0.0)], []]  # the last: no tokens
    line_checks.count_constraints(stats, lines, results)
    assert (stats.constrained, stats.constraints_unmet) == (5, 2)
    assert "5 lines constrained, 3 met all their phrases, 2 could not, 1 not constrained" in \
        stats.summary()


def test_whitespace_around_a_phrase_its_negation_and_its_alternatives_is_not_part_of_it():
    assert constraints.split_line(" !x") == [(True, ["x"])]
    assert constraints.split_line("  ! Ordner | Mappe \t Datei ") == [
        (True, ["Ordner", "Mappe"]), (False, ["Datei"])]
    assert constraints.split_line("!Verzeichnis *|Ordner*") == [
        (True, ["Verzeichnis*", "Ordner*"])]
    with pytest.raises(ValueError, match="empty phrase"):
        constraints.split_line("!*")


@pytest.mark.parametrize("line, reason", [
    ("Ordner\t!Ordner", "the phrase 'Ordner' is both required and forbidden"),
    ("die Datei\t!Datei", "the phrase 'Datei' is both required and forbidden"),
    ("Verzeichnisse\t!Verzeichnis*", "the phrase 'Verzeichnis' is both required and forbidden"),
    ("|".join("abcdefghijklmnopq"), "a phrase with 17 alternatives; at most 16 per phrase"),
])
def test_a_line_past_a_cap_or_contradicting_itself_is_refused_naming_why(line, reason):
    with pytest.raises(ValueError, match=reason):
        constraints.split_line(line)


def test_required_and_forbidden_are_judged_as_words():
    constraints.split_line("Dateiformat\t!Datei")  # another word
    constraints.split_line("Formatdatei\t!Datei*")


@pytest.mark.parametrize("text, phrase, open_ended, count", [
    ("Die Datei fehlt", "Datei", False, 1), ("Das Dateiformat", "Datei", False, 0),
    ("Formatdatei", "datei", False, 0), ("»Datei«: Datei.", "Datei", False, 2),
    ("Datei: x", "Datei:", False, 1), ("»%s« fehlt", "»%s«", False, 1),
    ("Verzeichnisse", "Verzeichnis", True, 1), ("Unterverzeichnis", "verzeichnis", True, 0),
    ("Dateityp", "Datei", False, 0), ("Datei2", "Datei", False, 0)])
def test_a_phrase_is_held_only_as_whole_words(text, phrase, open_ended, count):
    assert constraints.occurrences(text, phrase, open_ended) == count


def test_unmet_phrases_counts_what_an_output_does_not_keep():
    assert constraints.unmet_phrases("Die Datei", "Datei\t!Ordner") == 0
    assert constraints.unmet_phrases("Dateiformat", "Datei") == 1
    assert constraints.unmet_phrases("Datei", "Datei\tDatei") == 1  # given twice: twice
    assert constraints.unmet_phrases("Verzeichnisse", "!Verzeichnis") == 0
    assert constraints.unmet_phrases("Verzeichnisse", "!Verzeichnis*") == 1
    assert constraints.unmet_phrases("", "Datei|Ordner") == 1


@pytest.mark.parametrize("content", [
    "\ufeff!Verzeichnis\nOrdner\r\n", "!Verzeichnis\r\nOrdner", "\ufeff!Verzeichnis\r\nOrdner\n"])
def test_the_constraints_file_reads_as_the_decoder_reads_its_input(tmp_path, content):
    path = tmp_path / "c.txt"
    path.write_bytes(content.encode("utf-8"))
    lines = constraints.read_constraints_file(str(path), total_lines=2)
    assert lines == ["!Verzeichnis", "Ordner"]
    assert constraints.split_line(lines[0]) == [(True, ["Verzeichnis"])]


def test_a_stray_carriage_return_stays_inside_its_line(tmp_path):
    path = tmp_path / "c.txt"
    path.write_bytes(b"Ordner\r\r\nDatei\rTyp\n")
    assert constraints.read_constraints_file(str(path)) == ["Ordner\r", "Datei\rTyp"]


def _glossary(tmp_path, text, **kwargs):
    path = tmp_path / "g.tsv"
    path.write_bytes(text.encode("utf-8"))
    return constraints.Glossary.load(str(path), **kwargs)


def test_a_glossary_with_a_bom_applies_its_first_entry(tmp_path):
    glossary = _glossary(tmp_path, "\ufefffile\tDatei\r\nfolder\tOrdner\r\n")
    assert glossary.phrases_for("a file") == [(False, ["Datei"])]


def test_glossary_terms_do_not_match_inside_protected_spans(tmp_path):
    glossary = _glossary(tmp_path, "name\tName\n")
    assert glossary.phrases_for("{name} is set", frozenset({"brace"})) == []
    assert glossary.phrases_for("the name {name}", frozenset({"brace"})) == [(False, ["Name"])]
    assert glossary.phrases_for("%(name)s", frozenset({"printf"})) == []


def test_the_longest_glossary_match_wins_and_overlaps_do_not_both_apply(tmp_path):
    glossary = _glossary(tmp_path, "directory\tOrdner\nhome directory\tBasisordner\n"
                         "directory\t!Verzeichnis\n")
    assert glossary.phrases_for("the home directory") == [(False, ["Basisordner"])]
    # Entries with the same source term apply together; a second occurrence adds nothing.
    assert glossary.phrases_for("a directory in the home directory") == [
        (False, ["Ordner"]), (True, ["Verzeichnis"]), (False, ["Basisordner"])]


def test_ignore_case_is_unicode_casefolding(tmp_path):
    glossary = _glossary(tmp_path, "STRASSE\tStraße\nÉcole\tSchule\n", ignore_case=True)
    assert glossary.phrases_for("die Straße") == [(False, ["Straße"])]
    assert glossary.phrases_for("l'ÉCOLE") == [(False, ["Schule"])]
    exact = _glossary(tmp_path, "École\tSchule\n")
    assert exact.phrases_for("l'ÉCOLE") == []


def test_glossary_matching_cost_does_not_grow_with_its_size(tmp_path):
    import time

    small = _glossary(tmp_path, "".join(f"term{i}\tT{i}\n" for i in range(10)))
    large = constraints.Glossary(
        [constraints.GlossaryEntry(f"term{i} word{i}", False, (f"T{i}",), i)
         for i in range(5000)])
    line = "a line with term3 and some other words of an ordinary length, twelve or so"

    def per_line(glossary):
        start = time.perf_counter()
        for _ in range(200):
            glossary.phrases_for(line)
        return (time.perf_counter() - start) / 200

    per_line(large)
    assert per_line(large) < 1e-3 and per_line(large) < 5 * per_line(small) + 1e-4


def test_a_span_the_model_invents_is_removed_where_the_source_has_none():
    """The decoder's repair runs on every line, as the export's does: an invented '%s' goes."""
    from t2t_lite.inference import batch_decode, line_checks

    stats = batch_decode.DecodeStats()
    results = [[("Referenz verweist auf '%s' nicht", -1.0)], [("Hallo", -1.0)]]
    repaired = [False, False]
    fixed = line_checks.repair_spans(["Reference points nowhere", "Hello"], results,
                                     frozenset({"printf"}), stats, repaired)
    assert "%" not in fixed[0][0][0] and fixed[1][0][0] == "Hallo"
    assert (stats.protected, stats.protect_repaired, repaired) == (1, 1, [True, False])


# The five rows: (source, required phrase as typed, the output, the phrase's normal form).
TYPED = [
    ("Save As…", "Speichern unter\u2026", "Speichern unter...", "Speichern unter..."),
    ("File size too large", "Gro\u0308\u00dfe", "Die Größe ist zu groß", "Größe"),
    ("Open file", "Datei\u00a0öffnen", "Datei öffnen", "Datei öffnen"),
    ("Open file", "Datei  öffnen", "Datei öffnen", "Datei öffnen"),
    ("Cannot open file %s", "Datei\u200b", "Datei %s kann nicht geöffnet werden", "Datei"),
]


@pytest.mark.parametrize("source, typed, output, normal", TYPED)
def test_a_phrase_is_met_in_the_form_the_tokenizer_writes_it(source, typed, output, normal):
    assert constraints.normal_form(typed) == normal
    assert constraints.unmet_phrases(output, typed) == 0
    assert constraints.unmet_phrases(output, "!" + typed) == 1
    # The output's own spelling is normalized too.
    assert constraints.unmet_phrases(typed + " x", normal) == 0


def test_a_zero_width_space_inside_a_phrase_parts_words_as_the_tokenizer_reads_it():
    assert constraints.normal_form("Datei\u200böffnen") == "Datei öffnen"
    assert constraints.normal_form("\ufeff ﬁle\t\u3000x ") == "file x"


def test_an_alternative_group_is_satisfied_by_any_of_its_members():
    assert constraints.split_line("Ordner|Verzeichnis\t!Verzeichnis") == [
        (False, ["Ordner", "Verzeichnis"]), (True, ["Verzeichnis"])]
    with pytest.raises(ValueError, match="'Verzeichnis' is both required and forbidden"):
        constraints.split_line("Verzeichnisse|Verzeichnis\t!Verzeichnis*")
    # Compared in normal form.
    with pytest.raises(ValueError, match="'unter…' is both required and forbidden"):
        constraints.split_line("Speichern unter...\t!unter\u2026")


def test_glossary_terms_match_the_source_in_normal_form(tmp_path):
    glossary = _glossary(tmp_path, "Save As…\tSpeichern unter\nGro\u0308\u00dfe\tSize\n")
    assert glossary.phrases_for("Save As...") == [(False, ["Speichern unter"])]
    assert glossary.phrases_for("Größe") == [(False, ["Size"])]
    # Offsets stay the source's.
    (start, end, _), = glossary.matches("die Gro\u0308\u00dfe!")
    assert (start, end) == (4, 10)
    folded = _glossary(tmp_path, "GRO\u0308SSE\tSize\n", ignore_case=True)
    assert folded.phrases_for("die größe") == [(False, ["Size"])]


@pytest.mark.parametrize("rows, ignore_case, reason", [
    ("folder\tOrdner\nfolder\tVerzeichnis\n", False,
     r":1 and 2: two required targets for one source term \('folder' -> 'Ordner', 'folder' -> "
     r"'Verzeichnis'\)"),
    ("folder\tOrdner\nx\ty\nFolder\tOrdner|Verzeichnis\n", True,
     ":1 and 3: two required targets for one source term"),
    ("folder\tOrdner\nfolder\t!Ordner*\n", False,
     r":1 and 2: 'folder' requires 'Ordner', which 'folder' forbids \('Ordner\*'\)"),
])
def test_conflicting_glossary_entries_are_refused_naming_both_rows(tmp_path, rows,
                                                                    ignore_case, reason):
    with pytest.raises(UserError, match=r"^--glossary .*g\.tsv" + reason):
        _glossary(tmp_path, rows, ignore_case=ignore_case)


def test_duplicates_a_terms_own_bans_and_other_cases_stay_allowed(tmp_path):
    rows = ("folder\tOrdner|Verzeichnis\nfolder\tOrdner|Verzeichnis\nfolder\t!Verzeichnis\n"
            "Folder\tMappe\nfile\tDatei\nfile\tDatei\u200b\n")
    glossary = _glossary(tmp_path, rows)
    assert glossary.phrases_for("Move folder to trash")[2] == (True, ["Verzeichnis"])
