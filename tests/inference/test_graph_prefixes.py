"""A `*` prefix form's bars (graph_prefixes.py) on a toy vocabulary: every word that begins with
the prefix is barred however many pieces spell it, spaced or glued, in the search too."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.constrained_search import constrained_beam_search
from t2t_lite.decoding.phrase_matching import WORD_START
from t2t_lite.inference import word_pieces
from t2t_lite.inference.graph_prefixes import PREFIX_END, PrefixPieces

# As word_pieces.surfaces writes them; 0-2 reserved.
SURFACES = ["", "", "", "▁Datei", "format", "▁ist", "en", ":", "▁Dateien", "▁Date", "ien",
            "Datei", "Dateien", "▁", "»", "▁Dat", "eisystem", "formate", "▁Dateiformatvorlage",
            "▁datei", "i", "▁Da", "te", "t", "e", "D", "a"]
ID = {surface: token for token, surface in enumerate(SURFACES) if surface}
SPACED = [ID["▁Datei"], PREFIX_END, 0]
GLUED = [WORD_START, ID["Datei"], PREFIX_END]


def _boundaries():
    starts, ends = word_pieces.boundaries_of_pieces(
        [s if s else "<r>" for s in SURFACES], "sentencepiece")
    starts[:3] = ends[:3] = True
    return tf.constant(starts), tf.constant(ends)


def _barred(negative, written, surfaces=SURFACES):
    """The surfaces one example's prefix forms bar after a hypothesis that wrote `written`."""
    pieces = PrefixPieces(surfaces)
    ids = {surface: token for token, surface in enumerate(surfaces) if surface}
    _, texts = pieces.texts(tf.constant([negative], tf.int32))
    seqs = tf.constant([[[0] + [ids[s] for s in written]]], tf.int32)  # column 0: the start
    pairs = pieces.barred(seqs, len(written), texts, *_boundaries())
    assert set(pairs.numpy()[:, 0]) <= {0}
    return {surfaces[t] for t in pairs.numpy()[:, 1]}


def test_a_spaced_prefix_bars_every_piece_that_begins_it_anywhere():
    everywhere = {"▁Datei", "▁Dateien", "▁Dateiformatvorlage"}
    assert _barred([SPACED], []) == everywhere
    assert _barred([SPACED], ["▁ist"]) == everywhere  # a word that is no beginning of it
    assert "▁datei" not in _barred([SPACED], [])  # case-sensitive


@pytest.mark.parametrize("written, rest", [
    (["▁Date"], {"ien", "i"}),  # "▁Date" "ien"
    (["▁Dat"], {"eisystem"}),
    (["▁"], {"Datei", "Dateien"}),  # "▁" "Dateien"
    (["▁Da", "te"], {"ien", "i"}),  # three pieces
    (["▁", "D", "a", "t", "e"], {"ien", "i"}),  # six pieces
    (["▁ist", "▁Da", "t"], {"eisystem"}),  # the word being written counts; "e" goes on along
    (["▁Datei"], set()),  # the bar came before: a word that already begins with it
])
def test_a_spaced_prefix_bars_what_would_complete_it_after_any_spelling_of_its_beginning(
        written, rest):
    everywhere = {"▁Datei", "▁Dateien", "▁Dateiformatvorlage"}
    assert _barred([SPACED], written) == everywhere | rest


def test_a_glued_prefix_bars_after_a_word_end_or_the_start():
    assert _barred([GLUED], []) == {"Datei", "Dateien"}
    assert _barred([GLUED], ["»"]) == {"Datei", "Dateien"}
    assert _barred([GLUED], ["»", "D", "a", "te"]) == {"ien", "i"}
    assert _barred([GLUED], ["▁ist"]) == set()  # "▁ist" ends no word: "istDatei" is allowed
    assert _barred([GLUED], ["▁ist", ":", "▁Date"]) == set()  # a spaced word is not glued


# The demo's vocabulary spells "E-Mails" `▁E` `-` `M` `ails` and "z.B." `▁z` `.` `B` `.`.
PUNCTUATED = ["", "", "", "▁E", "-", "M", "ail", "ails", "▁E-Mail", "Mails", "▁z", ".", "B",
              "▁z.B.", "»", "E", "▁", "▁Wi", "i", "F", "▁W", "▁ist", "s", "▁Mail"]
P_ID = {surface: token for token, surface in enumerate(PUNCTUATED) if surface}


def _punctuated(*surfaces, glued=False):
    return ([WORD_START] if glued else []) + [P_ID[s] for s in surfaces] + [PREFIX_END]


@pytest.mark.parametrize("negative, written, rest", [
    (_punctuated("▁E", "-", "M", "ail"), ["▁E", "-", "M"], {"ail", "ails"}),
    (_punctuated("▁E", "-", "M", "ail"), ["▁E", "-"], {"Mails"}),
    (_punctuated("▁E", "-", "M", "ail"), ["▁ist", "▁", "E", "-", "M"], {"ail", "ails"}),
    (_punctuated("▁z", ".", "B", "."), ["▁z", ".", "B"], {"."}),
    (_punctuated("▁z", ".", "B", "."), ["▁z", "."], set()),  # "B" goes on along it
    (_punctuated("▁W", "i", "-", "F", "i"), ["▁Wi", "-", "F"], {"i"}),
    (_punctuated("E", "-", "M", "ail", glued=True), ["»", "E", "-", "M"], {"ail", "ails"}),
    (_punctuated("E", "-", "M", "ail", glued=True), ["»", "E", "-"], {"Mails"}),
    (_punctuated("E", "-", "M", "ail", glued=True), ["▁ist", "-", "M"], set()),
])
def test_punctuation_inside_a_prefix_does_not_end_its_word(negative, written, rest):
    everywhere = {"▁E-Mail", "▁z.B."} & _barred([negative], [], PUNCTUATED)
    assert _barred([negative], written, PUNCTUATED) - everywhere == rest


@pytest.mark.parametrize("preferred", [
    ["▁E", "-", "M", "ails"], ["▁E", "-", "Mails"], ["▁E-Mail", "s"], ["»", "E", "-", "M", "ails"],
    ["▁ist", "▁E", "-", "M", "ail"]])
def test_the_search_writes_no_word_that_begins_with_a_hyphenated_prefix(preferred):
    starts, ends = word_pieces.boundaries_of_pieces(
        [s if s else "<r>" for s in PUNCTUATED], "sentencepiece")
    starts[:3] = ends[:3] = True
    pieces = PrefixPieces(PUNCTUATED)
    negative, texts = pieces.texts(tf.constant([[
        _punctuated("▁E", "-", "M", "ail") + [0],
        _punctuated("E", "-", "M", "ail", glued=True)]], tf.int32))
    model = _table_model([P_ID[s] for s in preferred] + [1], len(PUNCTUATED))
    sequences, scores, _ = constrained_beam_search(
        model, {}, {}, 1, len(PUNCTUATED), tf.zeros([1, 0, 1, 1], tf.int32), negative,
        beam_size=3, alpha=0.0, max_decode_length=8, word_starts=starts, word_ends=ends,
        prefix_bars=(texts, pieces.barred))
    for row, score in zip(sequences.numpy()[0], scores.numpy()[0]):
        if score > -np.inf:
            text = "".join(PUNCTUATED[t] for t in row if t > 2).replace("▁", " ")
            assert "E-Mail" not in text, text


def test_a_prefix_of_several_tokens_bars_along_any_spelling():
    several = [ID["▁Datei"], ID["format"], PREFIX_END]
    everywhere = {"▁Dateiformatvorlage"}
    assert _barred([several], []) == everywhere
    assert _barred([several], ["▁Datei"]) == everywhere | {"format", "formate"}
    assert _barred([several], ["▁Date", "i"]) == everywhere | {"format", "formate"}


def test_the_marks_are_dropped_and_each_example_gets_its_texts():
    negative = [[[ID["▁Datei"], -2, 0], SPACED], [[0, 0, 0], [0, 0, 0]]]
    dropped, texts = PrefixPieces(SURFACES).texts(tf.constant(negative, tf.int32))
    assert dropped.numpy().tolist() == [[[ID["▁Datei"], -2, 0], [ID["▁Datei"], 0, 0]],
                                        [[0, 0, 0], [0, 0, 0]]]
    assert texts.numpy().tolist() == [["▁Datei".encode()], [b""]]


def test_without_prefix_forms_there_are_no_texts_and_no_bars():
    pieces = PrefixPieces(SURFACES)
    _, texts = pieces.texts(tf.zeros([2, 0, 0], tf.int32))
    assert texts.shape == [2, 0]
    pairs = pieces.barred(tf.zeros([2, 3, 4], tf.int32), 2, texts, *_boundaries())
    assert pairs.shape[0] == 0


def _table_model(preferred, vocab_size):
    """next-token log probs from the previous token, a chain that strongly prefers `preferred`."""
    table = np.full((vocab_size, vocab_size), 0.02)
    table[:, 0] = 0.0
    previous = 0
    for token in preferred:
        table[previous, token] = 2.0
        previous = token
    log_table = tf.constant(np.log(table / table.sum(axis=1, keepdims=True) + 1e-30),
                            tf.float32)
    return lambda ids, index, cache, static: (tf.gather(log_table, ids), cache)


@pytest.mark.parametrize("preferred", [
    ["▁Dateien"], ["▁Date", "ien"], ["▁Dat", "eisystem"], ["»", "Dateien"],
    ["▁", "Dateien"], ["▁Datei", "format"], ["▁Da", "te", "ien"], ["»", "D", "a", "te", "i"]])
def test_the_search_writes_no_word_that_begins_with_the_prefix(preferred):
    starts, ends = _boundaries()
    pieces = PrefixPieces(SURFACES)
    negative, texts = pieces.texts(tf.constant([[SPACED, GLUED]], tf.int32))
    model = _table_model([ID[s] for s in preferred] + [1], len(SURFACES))
    sequences, scores, _ = constrained_beam_search(
        model, {}, {}, 1, len(SURFACES), tf.zeros([1, 0, 1, 1], tf.int32), negative,
        beam_size=3, alpha=0.0, max_decode_length=6, word_starts=starts, word_ends=ends,
        prefix_bars=(texts, pieces.barred))
    for row, score in zip(sequences.numpy()[0], scores.numpy()[0]):
        if score > -np.inf:
            text = "".join(SURFACES[t] for t in row if t > 2).replace("▁", " ")
            assert not any(word.startswith("Datei") or word.startswith("»Datei")
                           for word in text.split()), text
