"""Detokenized corpus scores with sacreBLEU: the numbers to report and compare across papers.

sacreBLEU tokenizes plain (detokenized) text itself and prints a signature naming every setting,
so a score with its signature can be reproduced by anyone. The trainer's evaluation and
t2t-lite-bleu both call `corpus_scores`.
"""
from sacrebleu.metrics import BLEU, CHRF

from t2t_lite.errors import UserError
from t2t_lite.progress_line import counted

# sacreBLEU's tokenizers that need nothing beyond sacreBLEU itself (no MeCab, no SentencePiece
# model download), so they work on any machine.
TOKENIZERS = ("13a", "intl", "zh", "char", "none")
DEFAULT_TOKENIZER = "13a"


def check_line_pairs(hypotheses, references):
    """Raises UserError unless there is one hypothesis per reference and at least one of each."""
    if len(hypotheses) != len(references):
        raise UserError(
            f"translation has {counted(len(hypotheses), 'line')} but reference has "
            f"{len(references)}; "
            "they must match line for line")
    if not hypotheses:
        raise UserError("nothing to score: translation and reference are empty")


def corpus_scores(hypotheses, references, tokenize=DEFAULT_TOKENIZER):
    """sacreBLEU corpus BLEU and chrF of detokenized hypotheses against one reference each.

    Args:
      hypotheses: list of str, one translation per sentence.
      references: list of str, the reference for each sentence, same order and length.
      tokenize: one of TOKENIZERS ("13a", sacreBLEU's and WMT's default).

    Returns:
      dict with "bleu" and "chrf" (floats, 0-100), "signature" (the BLEU signature),
      "chrf_signature", and "bleu_text" (sacreBLEU's one-line BLEU summary: n-gram precisions,
      brevity penalty, lengths).
    """
    if tokenize not in TOKENIZERS:
        raise UserError(f"unknown tokenize={tokenize!r}; choose one of {', '.join(TOKENIZERS)}")
    hypotheses, references = list(hypotheses), list(references)
    check_line_pairs(hypotheses, references)
    bleu = BLEU(tokenize=tokenize)
    chrf = CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return {
        "bleu": bleu_score.score,
        "chrf": chrf_score.score,
        "signature": str(bleu.get_signature()),
        "chrf_signature": str(chrf.get_signature()),
        "bleu_text": str(bleu_score),
    }

