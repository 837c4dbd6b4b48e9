"""A `*` prefix form's bars (graph_prefixes.py) on a toy vocabulary: every word that begins with
the prefix is barred as one piece, as two pieces and along the prefix's own tokens, in the
search too."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.decoding.constrained_search import WORD_START, constrained_beam_search
from t2t_lite.inference import word_pieces
from t2t_lite.inference.graph_prefixes import PREFIX_END, PrefixPieces

# As word_pieces.surfaces writes them; 0-2 reserved.
SURFACES = ["", "", "", "▁Datei", "format", "▁ist", "en", ":", "▁Dateien", "▁Date", "ien",
            "Datei", "Dateien", "▁", "»", "▁Dat", "eisystem", "formate", "▁Dateiformatvorlage",
            "▁datei", "i"]
ID = {surface: token for token, surface in enumerate(SURFACES) if surface}


def _bars(negative):
    """{row as surfaces: barred surfaces} of one example's bars."""
    _, rows, tokens = PrefixPieces(SURFACES).bars(tf.constant([negative], tf.int32))
    found = {}
    for row, barred in zip(rows.numpy()[0], tokens.numpy()[0]):
        key = tuple(SURFACES[t] if t > 0 else t for t in row if t)
        found.setdefault(key, set()).update(SURFACES[t] for t in barred if t > 0)
    return found


def test_a_prefix_bars_its_pieces_its_two_piece_spellings_and_its_glued_form():
    bars = _bars([[ID["▁Datei"], PREFIX_END, 0], [WORD_START, ID["Datei"], PREFIX_END]])
    assert bars[()] == {"▁Datei", "▁Dateien", "▁Dateiformatvorlage"}  # any position
    assert bars[(WORD_START,)] == {"Datei", "Dateien"}  # where a word has just ended
    assert bars[("▁Date",)] == {"ien", "i"}  # "▁Date" "ien"
    assert bars[("▁Dat",)] == {"eisystem"}
    assert bars[("▁",)] == {"Datei", "Dateien"}  # "▁" "Dateien"
    assert "▁datei" not in set().union(*bars.values())  # case-sensitive


def test_a_prefix_of_several_tokens_bars_along_its_own_tokens():
    bars = _bars([[ID["▁Datei"], ID["format"], PREFIX_END]])
    assert bars[()] == {"▁Dateiformatvorlage"}
    assert bars[("▁Datei",)] == {"format", "formate"}  # "▁Datei" "formate" too


def test_the_marks_are_dropped_and_other_phrases_bar_nothing_here():
    negative = [[[ID["▁Datei"], -2, 0], [ID["▁Datei"], PREFIX_END, 0]], [[0, 0, 0], [0, 0, 0]]]
    dropped, rows, tokens = PrefixPieces(SURFACES).bars(tf.constant(negative, tf.int32))
    assert dropped.numpy().tolist() == [[[ID["▁Datei"], -2, 0], [ID["▁Datei"], 0, 0]],
                                        [[0, 0, 0], [0, 0, 0]]]
    assert not tokens.numpy()[1].any() and tokens.numpy()[0].any()
    assert rows.shape[:2] == tokens.shape[:2]


def test_without_prefix_forms_there_are_no_bars():
    _, rows, tokens = PrefixPieces(SURFACES).bars(tf.zeros([2, 0, 0], tf.int32))
    assert rows.shape[:2] == [2, 0] and tokens.shape[:2] == [2, 0]


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
    ["▁", "Dateien"], ["▁Datei", "format"]])
def test_the_search_writes_no_word_that_begins_with_the_prefix(preferred):
    starts, ends = word_pieces.boundaries_of_pieces(
        [s if s else "<r>" for s in SURFACES], "sentencepiece")
    starts[:3] = ends[:3] = True
    pieces = PrefixPieces(SURFACES)
    negative, *prefix_bars = pieces.bars(tf.constant(
        [[[ID["▁Datei"], PREFIX_END, 0], [WORD_START, ID["Datei"], PREFIX_END]]], tf.int32))
    model = _table_model([ID[s] for s in preferred] + [1], len(SURFACES))
    sequences, scores, _ = constrained_beam_search(
        model, {}, {}, 1, len(SURFACES), tf.zeros([1, 0, 1, 1], tf.int32), negative,
        beam_size=3, alpha=0.0, max_decode_length=6, word_starts=starts, word_ends=ends,
        prefix_bars=prefix_bars)
    for row, score in zip(sequences.numpy()[0], scores.numpy()[0]):
        if score > -np.inf:
            text = "".join(SURFACES[t] for t in row if t > 2).replace("▁", " ")
            assert not any(word.startswith("Datei") or word.startswith("»Datei")
                           for word in text.split()), text
