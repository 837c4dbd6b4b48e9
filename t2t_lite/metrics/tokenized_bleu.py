"""The paper's BLEU: Moses-tokenized text with hyphenated compounds split, scored as multi-bleu.

"Attention Is All You Need" reports BLEU the way tensor2tensor's get_ende_bleu.sh computes it:
  1. Moses replace-unicode-punctuation.perl -l de
  2. Moses tokenizer.perl -l de (HTML-escapes & " ' < > [ ] | as the script does by default)
  3. compound splitting: perl -ple 's{(\\S)-(\\S)}{$1 ##AT##-##AT## $2}g'
  4. multi-bleu.perl: case-sensitive 4-gram BLEU on whitespace tokens, no smoothing.
Steps 1-2 use sacremoses (the maintained Python port of the Moses scripts), step 4 sacreBLEU with
tokenize="none" and smooth_method="none". In the original recipe only the hypotheses went through
step 1; the reference was a Moses-tokenized file. Here both sides start as plain text and get
steps 1-3 alike.

These scores depend on the tokenization and are higher than sacreBLEU's for the same output
(splitting compounds adds easy n-gram matches): they are comparable only to papers that used the
same recipe, never to sacreBLEU.
"""
import functools
import re

from sacrebleu.metrics import BLEU
from sacremoses import MosesPunctNormalizer, MosesTokenizer

LABEL = "tokenized BLEU (Moses tokenizer{compounds}, as in the paper; NOT comparable to sacreBLEU)"

# Perl's s{(\S)-(\S)}{...}g: non-overlapping, left to right, so "x-y-z" becomes
# "x ##AT##-##AT## y-z" exactly as in the original script (the regex consumes "y").
_COMPOUND_HYPHEN = re.compile(r"(\S)-(\S)")


def split_compounds(line):
    """Puts hyphenated compounds in ##AT## form: "rich-text" -> "rich ##AT##-##AT## text"."""
    return _COMPOUND_HYPHEN.sub(r"\1 ##AT##-##AT## \2", line)


@functools.lru_cache(maxsize=None)
def _moses(lang):
    return MosesPunctNormalizer(lang=lang), MosesTokenizer(lang=lang)


def moses_tokenize(line, lang="de"):
    """replace-unicode-punctuation.perl then tokenizer.perl -l lang, as one string."""
    normalizer, tokenizer = _moses(lang)
    return tokenizer.tokenize(normalizer.replace_unicode_punct(line), return_str=True, escape=True)


def paper_tokenize(line, lang="de", compounds=None):
    """The recipe's text preprocessing; compounds defaults to True for German only."""
    if compounds is None:
        compounds = lang == "de"
    tokenized = moses_tokenize(line, lang)
    return split_compounds(tokenized) if compounds else tokenized


def tokenized_bleu(hypotheses, references, lang="de", compounds=None):
    """multi-bleu.perl-style BLEU after the paper's tokenization of both sides.

    Returns:
      dict with "bleu" (float), "bleu_text" (sacreBLEU's summary line) and "label" (what it is).
    """
    if compounds is None:
        compounds = lang == "de"
    hyp_tokens = [paper_tokenize(line, lang, compounds) for line in hypotheses]
    ref_tokens = [paper_tokenize(line, lang, compounds) for line in references]
    # force=True: the text is tokenized on purpose, so sacreBLEU's warning does not apply.
    score = BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(
        hyp_tokens, [ref_tokens])
    return {
        "bleu": score.score,
        "bleu_text": str(score),
        "label": LABEL.format(compounds=" + compound splitting" if compounds else ""),
    }
