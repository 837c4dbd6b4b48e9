"""Sentence splitting of long source lines (t2t_lite.data.sentences)."""
import pytest

from t2t_lite.data import sentences
from t2t_lite.errors import UserError

LONG = ("By default, connection logs only show the IP address of the connecting host. If you want "
        "them to show the host name you can turn this on, but it may slow the server down.")


def test_a_long_line_splits_at_its_sentence_ends():
    splitting = sentences.SentenceSplitting("en")
    assert splitting.split(LONG) == [
        "By default, connection logs only show the IP address of the connecting host.",
        "If you want them to show the host name you can turn this on, but it may slow the "
        "server down."]


def test_short_lines_and_single_sentences_stay_whole():
    splitting = sentences.SentenceSplitting("en")
    assert splitting.split("Not found. Try again.") == ["Not found. Try again."]
    assert splitting.split("Usage: %s OPTION... COMMAND") == ["Usage: %s OPTION... COMMAND"]
    single = " ".join(["word"] * 30) + "."
    assert splitting.split(single) == [single]
    assert sentences.SentenceSplitting("en", min_words=1).split("Not found. Try again.") == [
        "Not found.", "Try again."]


def test_non_breaking_prefixes_and_lower_case_starts_do_not_split():
    splitting = sentences.SentenceSplitting("en", min_words=1)
    for text in ("Ask Mr. Smith about the new version of the tool before you install it.",
                 "Use a wildcard, e.g. *.foo.com or 192.168.0.0/24 as the value.",
                 "It failed. and then it worked."):
        assert splitting.split(text) == [text]
    german = sentences.SentenceSplitting("de", min_words=1)
    text = "Geben Sie z. B. Ihren Namen ein."
    assert german.split(text) == [text]


def test_split_all_spans_map_pieces_back_to_lines():
    splitting = sentences.SentenceSplitting("en")
    texts = ["short one", LONG, "", "another short one"]
    pieces, spans = splitting.split_all(texts)
    assert spans == [(0, 1), (1, 3), (3, 4), (4, 5)]
    assert [" ".join(pieces[a:b]) for a, b in spans] == texts


def test_settings_resolve_to_a_splitter_or_none():
    assert sentences.splitting_for("en").language == "en"
    assert sentences.splitting_for(None) is None  # a problem without a source language
    assert sentences.splitting_for("xx") is None  # auto: a language the rules do not know
    assert sentences.splitting_for("en", "off") is None
    assert sentences.splitting_for(None, "de").language == "de"
    with pytest.raises(UserError, match="no sentence splitting rules for language 'xx'"):
        sentences.splitting_for(None, "xx")


def test_join_translations_drops_empty_pieces():
    assert sentences.join_translations([" Erster Satz.", "", "Zweiter Satz. "]) == (
        "Erster Satz. Zweiter Satz.")


def test_the_decoder_splits_translation_problems_in_their_source_language():
    from t2t_lite.inference import batch_decode
    from t2t_lite.problems import gettext

    for name in ("translate_ende_gettext", "translate_enfr_wmt14"):
        assert batch_decode.sentence_splitting(name).language == "en"
    # Parsing writes a tree over the source words, toy tasks have no sentences.
    for name in ("parsing_wsj", "algorithmic_reverse", "not_a_problem", None):
        assert batch_decode.sentence_splitting(name) is None
    assert gettext.TranslateGettext(target_lang="fr", source_lang="de").source_language == "de"
