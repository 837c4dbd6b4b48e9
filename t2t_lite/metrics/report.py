"""Scores a translation file against a reference file, as t2t-lite-bleu prints them."""
import os

from t2t_lite.data.lines import split_lines
from t2t_lite.errors import UserError
from t2t_lite.metrics import bleu, tokenized_bleu


def read_lines(path, what):
    """The file's lines without their ends (data/lines.py: only "\\n" ends a line, as the decoder
    writes them)."""
    if not os.path.isfile(path):
        raise UserError(f"{what} file not found: {path}")
    try:
        with open(path, encoding="utf-8", newline="") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise UserError(f"{what} file is not UTF-8 text: {path} ({e.reason} at byte {e.start})")
    return split_lines(text)


def score_files(translation_path, reference_path, tokenize=bleu.DEFAULT_TOKENIZER, lang="de"):
    """(the report, the scores): the report is sacreBLEU BLEU and chrF with signatures, then the
    paper's tokenized BLEU, as t2t-lite-bleu prints it; the scores are bleu.corpus_scores'."""
    hypotheses = read_lines(translation_path, "translation")
    references = read_lines(reference_path, "reference")
    bleu.check_line_pairs(hypotheses, references)
    scores = bleu.corpus_scores(hypotheses, references, tokenize=tokenize)
    paper = tokenized_bleu.tokenized_bleu(hypotheses, references, lang=lang)
    return "\n".join([
        f"sacreBLEU {scores['bleu_text']}",
        f"  signature: {scores['signature']}",
        f"sacreBLEU chrF2 = {scores['chrf']:.2f}",
        f"  signature: {scores['chrf_signature']}",
        f"{paper['label']}, lang={lang}:",
        f"  {paper['bleu_text']}",
    ]), scores
