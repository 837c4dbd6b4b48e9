import math

import pytest

from t2t_lite.metrics import tokenized_bleu


def test_split_compounds_matches_the_perl_one_liner():
    assert tokenized_bleu.split_compounds("rich-text format") == "rich ##AT##-##AT## text format"
    assert (tokenized_bleu.split_compounds("die E-Mail-Adresse")
            == "die E ##AT##-##AT## Mail ##AT##-##AT## Adresse")
    # Perl's /g matching does not overlap: the "y" consumed by the first match is not reused.
    assert tokenized_bleu.split_compounds("x-y-z") == "x ##AT##-##AT## y-z"
    # A free-standing dash is no compound.
    assert tokenized_bleu.split_compounds("a - b") == "a - b"


def test_paper_tokenize_is_moses_then_compounds_for_german():
    line = "Die Nicht-Regierungsorganisation sagte: „Das ist’s“ & mehr."
    assert tokenized_bleu.paper_tokenize(line, lang="de") == (
        "Die Nicht ##AT##-##AT## Regierungsorganisation sagte : „ Das ist &apos; s &quot; "
        "&amp; mehr .")
    # Compounds are split only for German unless asked.
    assert "##AT##" not in tokenized_bleu.paper_tokenize("a well-known fact", lang="en")


def test_compound_splitting_is_applied_to_both_sides_before_scoring():
    hyp, ref = ["Die E-Mail kam gestern an."], ["Die E-Post kam gestern an."]
    split = tokenized_bleu.tokenized_bleu(hyp, ref, lang="de")
    unsplit = tokenized_bleu.tokenized_bleu(hyp, ref, lang="de", compounds=False)
    # "E-Mail" is one token unsplit and three split ("E", "##AT##-##AT##", "Mail").
    assert "hyp_len = 6 ref_len = 6" in unsplit["bleu_text"]
    assert "hyp_len = 8 ref_len = 8" in split["bleu_text"]
    # Split, the shared "E ##AT##-##AT##" earns unigram credit the unsplit compound cannot.
    assert split["bleu_text"].split()[3].startswith("87.5/")
    assert unsplit["bleu_text"].split()[3].startswith("83.3/")


def test_scored_like_multi_bleu_without_smoothing():
    # All n-grams match, hypothesis one token short: BLEU is the brevity penalty alone.
    result = tokenized_bleu.tokenized_bleu(["a b c d"], ["a b c d e"], lang="en")
    assert result["bleu"] == pytest.approx(100 * math.exp(1 - 5 / 4), abs=1e-6)
    # No 4-gram matches: multi-bleu.perl gives 0, not a smoothed value.
    assert tokenized_bleu.tokenized_bleu(["a b c x"], ["a b c d"], lang="en")["bleu"] == 0.0


def test_label_says_not_comparable_to_sacrebleu():
    label = tokenized_bleu.tokenized_bleu(["a"], ["a"], lang="de")["label"]
    assert "NOT comparable to sacreBLEU" in label and "compound splitting" in label
