"""translate_constrained as the Python API and a served model run it: the same lines refused
for the same reasons as the decoder's files (an InvalidArgument naming the row), and `unmet`
counted on what is returned, for every row."""
import re

import pytest
import tensorflow as tf

from t2t_lite.inference import constraints, graph_constraints, translation_module

LONG = "\t".join(["Hund"] * 17)


@pytest.fixture(scope="module")
def module(model_dir):
    return translation_module.from_model_dir(model_dir)


# Each line with the reason constraints.split_line or the tokenized check gives it.
REFUSED = [
    ("Hund\t\tKatze", "an empty phrase or alternative"),
    ("!", "an empty phrase or alternative"),
    ("Hund|", "an empty phrase or alternative"),
    ("!*", "an empty phrase or alternative"),
    (LONG, "17 phrases; at most 16 per line"),
    ("|".join(["Hund"] * 17), "a phrase with 17 alternatives; at most 16 per phrase"),
    ("Katze\t!Katze", "the phrase 'Katze' is both required and forbidden"),
    ("der Hund\t! Hund", "the phrase 'Hund' is both required and forbidden"),
    ("Hund\t!Hu*", "the phrase 'Hu' is both required and forbidden"),
    ("文件", "the phrase '文件' has a token outside the model's vocabulary"),
    ("\u200b", "has no tokens in the model's vocabulary"),
    (" ".join(["Katze"] * 40), "tokens; at most 32 per phrase"),
    ("TOO_MANY_TOKENS", "constraint tokens; at most 128 per line"),
    # SentencePiece reads "▁" as a space: its tokens write "Hund Katze", never "Hund▁Katze".
    ("Hund\u2581Katze", "the phrase 'Hund\u2581Katze' cannot be written by the model's vocabulary "
                        "(its tokens write 'Hund Katze')"),
    ("Hund|Katze\tKatze\t!Katze", "the phrase 'Katze' is both required and forbidden"),
]


def _too_many_tokens(module):
    """16 phrases of at most 16 tokens each, more than 128 in all."""
    per_word = int(module.tokenizer.encode(tf.constant(["Hund"])).row_lengths()[0])
    phrase = " ".join(["Hund"] * (16 // per_word))
    return "\t".join([phrase] * 16)


@pytest.mark.parametrize("line, reason", REFUSED)
def test_the_graph_refuses_what_the_file_reader_refuses(module, line, reason):
    if line == "TOO_MANY_TOKENS":
        line = _too_many_tokens(module)
    encoded = module.encode_constraints(tf.constant(["", line]))
    errors = [e.decode() for e in encoded["errors"].numpy()]
    assert errors[0] == "" and reason in errors[1], errors
    try:
        constraints.split_line(line)
    except ValueError as error:
        assert str(error) == errors[1]  # the same words where the reader sees it first
    else:
        with pytest.raises(Exception, match=re.escape(reason)):
            constraints.check_tokenized(["", line], {k: v.numpy() for k, v in encoded.items()},
                                        lambda i: ("--constraints_file", "c.txt", i + 1))


@pytest.mark.slow  # a graph traced or a model decoded end to end: the whole suite runs it
def test_a_refused_row_fails_the_call_naming_it(module):
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match="constraints of row 2: 17 phrases; at most 16 per line"):
        module.translate_constrained(tf.constant(["a", "b", "c"]),
                                     tf.constant(["Hund", "", LONG]))


def test_whitespace_around_the_marks_reads_as_in_files(module):
    encoded = module.encode_constraints(tf.constant([" ! Hund | Katze \t Matte ", "!Hund|Katze"]))
    for name in ("positive", "negative"):
        assert encoded[name].numpy()[0].tolist() == encoded[name].numpy()[1].tolist() or \
            name == "positive"
    assert encoded["positive"].numpy()[1].sum() == 0 and encoded["positive"].numpy()[0].any()


@pytest.mark.slow  # traces a search of its own: the whole suite runs it
def test_unmet_is_counted_on_the_returned_text_for_every_row(module):
    result = module.translate_constrained(
        tf.constant(["the house is small .", "", "we read books"]),
        tf.constant(["der Hund\t!Katze", "Hund", ""]))
    outputs = [o.decode() for o in result["outputs"].numpy()]
    unmet = result["unmet"].numpy().tolist()
    assert outputs[1] == "" and unmet[1] == 1  # an empty source keeps no phrase
    assert unmet[2] == 0
    lines = ["der Hund\t!Katze", "Hund", ""]
    assert unmet == [constraints.unmet_phrases(o, line) for o, line in zip(outputs, lines)]


# (output, line, phrases it does not keep): a phrase given twice must appear twice, each
# alternative counted once; a prefix form is held by any word that begins with it.
COUNTS = [
    ("Die Datei", "Datei\t!Ordner", 0),
    ("Dateiformat", "Datei", 1),
    ("Datei", "Datei\tDatei", 1),
    ("Datei und Datei", "Datei\tDatei", 0),
    ("Datei und Datei", "Datei\tDatei\tDatei", 1),
    ("Datei und Datei", "Datei|Datei\tDatei", 0),
    ("Ordner", "Datei|Ordner\tOrdner|Datei\tOrdner", 0),
    ("Ordner", "Datei|Ordner\tDatei|Ordner", 1),
    ("»Datei« Datei: Datei2 xDatei", "Datei\tDatei\tDatei", 1),
    ("%s und %s", "%s\t%s\t%s", 1),
    ("a a a", "a a\ta a", 0),
    ("Verzeichnisse", "!Verzeichnis", 0),
    ("Verzeichnisse", "!Verzeichnis*", 1),
    ("Dateien Dateisystem", "!Datei*|Dateisystem", 2),
    ("die Dateien", "!Datei*", 1),
    ("Größe größe Größen", "Größe\t!größe*\t!Größen", 2),
    ("", "Datei|Ordner", 1),
    ("x", "", 0),
    # Compared in normal form (the five rows), the output's spelling too.
    ("Speichern unter...", "Speichern unter\u2026", 0),
    ("Die Größe ist zu groß", "Gro\u0308\u00dfe", 0),
    ("Datei öffnen", "Datei\u00a0öffnen", 0),
    ("Datei öffnen", "Datei  öffnen", 0),
    ("Datei %s kann nicht geöffnet werden", "Datei\u200b", 0),
    ("Speichern unter\u2026 Datei\u00a0öffnen", "Speichern unter...\tDatei öffnen", 0),
    ("E-Mails, Wi-Fi-Netz, z.B. so", "!E-Mail*\t!Wi-Fi*\t!z.B.*", 3),
    ("Ordner", "Ordner|Verzeichnis\t!Verzeichnis", 0),
]


def test_the_graph_counts_unmet_phrases_as_the_decoder_does():
    outputs, lines, wanted = zip(*COUNTS)
    graph = graph_constraints.unmet(tf.constant(outputs), tf.constant(lines)).numpy().tolist()
    python = [constraints.unmet_phrases(o, line) for o, line in zip(outputs, lines)]
    assert graph == python == list(wanted)


def test_the_graph_writes_the_normal_form_as_python_does():
    import unicodedata

    characters = [chr(c) for c in range(1, 0x3100) if unicodedata.category(chr(c)) not in
                  ("Cn", "Cs")] + ["\ufeff", "\ufb01", "\uff5e", "\u2581"]
    texts = ["a" + c + "b " + c + c for c in characters]
    graph = graph_constraints.normal_form(tf.constant(texts)).numpy()
    assert [g.decode() for g in graph] == [constraints.normal_form(t) for t in texts]


def test_a_phrase_is_tokenized_in_its_normal_form(module):
    typed = ["Hund\u00a0Katze", "Hund  Katze", "Hund\u200b\tKatze\u200b", " Hund Katze "]
    normal = ["Hund Katze", "Hund Katze", "Hund\tKatze", "Hund Katze"]
    for line in (lambda t: t, lambda t: "!" + t.split("\t")[0] + "*"):
        encoded = module.encode_constraints(tf.constant([line(t) for t in typed + normal]))
        assert not any(encoded["errors"].numpy())
        for name in ("positive", "negative"):
            rows = encoded[name].numpy().tolist()
            assert rows[:len(typed)] == rows[len(typed):], name


def test_an_alternative_group_that_a_ban_leaves_a_member_of_is_allowed(module):
    encoded = module.encode_constraints(tf.constant(["Hund|Katze\t!Katze", "Hund\t!Katze*"]))
    assert encoded["errors"].numpy().tolist() == [b"", b""]
    assert constraints.split_line("Hund|Katze\t!Katze")
    # The barred member is left out of the search's phrase: the other one meets it.
    positive = encoded["positive"].numpy()
    assert positive[0, 0, 0].any() and not positive[0, 0, 1].any()
    assert positive[0, 0, 0].tolist() == positive[1, 0, 0].tolist()
