import math

import pytest
import sacrebleu

from t2t_lite.errors import UserError
from t2t_lite.metrics import bleu

HYPOTHESES = ["The cat sat on the mat.", "It is raining today, isn't it?"]
REFERENCES = ["The cat sat on a mat.", "It rains today, doesn't it?"]


def test_identical_text_scores_100():
    scores = bleu.corpus_scores(REFERENCES, REFERENCES)
    assert scores["bleu"] == pytest.approx(100.0)
    assert scores["chrf"] == pytest.approx(100.0)


def test_scores_equal_sacrebleu_called_directly():
    scores = bleu.corpus_scores(HYPOTHESES, REFERENCES)
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score)
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score)
    assert 0 < scores["bleu"] < 100


def test_brevity_penalty_on_hand_computed_example():
    # Every n-gram of the hypothesis matches; only the brevity penalty exp(1 - 5/4) remains.
    scores = bleu.corpus_scores(["a b c d"], ["a b c d e"])
    assert scores["bleu"] == pytest.approx(100 * math.exp(1 - 5 / 4), abs=1e-6)


def test_signature_names_tokenizer_and_version():
    scores = bleu.corpus_scores(HYPOTHESES, REFERENCES, tokenize="intl")
    assert "tok:intl" in scores["signature"]
    assert f"version:{sacrebleu.__version__}" in scores["signature"]
    assert "nc:6" in scores["chrf_signature"]
    assert scores["bleu_text"].startswith("BLEU = ")


def test_line_count_mismatch_is_a_user_error():
    with pytest.raises(UserError, match="2 lines but reference has 1"):
        bleu.corpus_scores(HYPOTHESES, REFERENCES[:1])


def test_empty_input_and_unknown_tokenizer_are_user_errors():
    with pytest.raises(UserError, match="empty"):
        bleu.corpus_scores([], [])
    with pytest.raises(UserError, match="unknown tokenize"):
        bleu.corpus_scores(HYPOTHESES, REFERENCES, tokenize="ja-mecab")

