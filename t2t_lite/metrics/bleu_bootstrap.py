"""Paired bootstrap resamples of corpus BLEU, and the tests they give: a difference, an
equivalence within a margin, and Holm's correction over a family of tests (table3/findings.py).

Every system is scored on the same resamples of the sentences (the pairing), so the resampled
differences between two systems estimate how their difference varies with the choice of
sentences. An equivalence test and a family-wise correction need the resampled scores
themselves, which sacreBLEU's PairedTest does not return. They are computed as that test computes
them (each sentence's sufficient statistics, summed per resample), with its default seed, so a
table is reproducible.
"""
import numpy as np
from sacrebleu.metrics import BLEU

from t2t_lite.metrics.bleu import DEFAULT_TOKENIZER, check_line_pairs

SAMPLES = 1000
SEED = 12345  # sacreBLEU's default SACREBLEU_SEED


class PairedResamples:
    """`samples` resamples (with replacement) of the sentences of `references`, fixed by `seed`;
    `scores(hypotheses)` scores a system on each of them."""

    def __init__(self, references, samples=SAMPLES, seed=SEED, tokenize=DEFAULT_TOKENIZER):
        self.references = list(references)
        count = len(self.references)
        draws = np.random.default_rng(seed).choice(count, size=(samples, count), replace=True)
        # How often each sentence is drawn in each resample: a resample's statistics are then
        # one product, not `samples` gathers of every sentence's statistics.
        self._counts = np.stack([np.bincount(row, minlength=count) for row in draws])
        self._metric = BLEU(tokenize=tokenize)

    def scores(self, hypotheses):
        """(corpus BLEU, numpy array of the BLEU on each resample) of one system."""
        hypotheses = list(hypotheses)
        check_line_pairs(hypotheses, self.references)
        # sacreBLEU's significance module uses these same two methods.
        stats = np.array(self._metric._extract_corpus_statistics(hypotheses, [self.references]),
                         dtype=np.int64)
        corpus = self._metric._compute_score_from_stats(stats.sum(0).tolist()).score
        resampled = self._counts @ stats
        return corpus, np.array([self._metric._compute_score_from_stats(row.tolist()).score
                                 for row in resampled])


def difference_p_value(differences):
    """Two-sided p-value of "no difference" from resampled differences (percentile bootstrap):
    twice the share on the smaller side of 0, ties counted on both, with the +1 of a resampling
    test so that p is never 0."""
    differences = np.asarray(differences)
    tail = min(np.count_nonzero(differences <= 0), np.count_nonzero(differences >= 0))
    return float(min(1.0, 2.0 * (tail + 1) / (len(differences) + 1)))


def equivalence_p_value(differences, margin):
    """p-value of "the difference lies outside ±margin" by two one-sided tests (TOST): the
    larger of the shares of resampled differences at or beyond -margin and +margin. A small p
    shows the difference is within the margin; margin 0 can never be shown (p 1)."""
    if not margin > 0:
        return 1.0
    differences = np.asarray(differences)
    total = len(differences) + 1
    return float(max(np.count_nonzero(differences <= -margin) + 1,
                     np.count_nonzero(differences >= margin) + 1) / total)


def holm(p_values):
    """Holm's step-down adjusted p-values, in the order given: rejecting each hypothesis whose
    adjusted p is below alpha holds the family-wise error rate at alpha."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted, running = [1.0] * len(p_values), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[index]))
        adjusted[index] = running
    return adjusted
