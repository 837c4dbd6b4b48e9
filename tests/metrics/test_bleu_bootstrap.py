"""Paired bootstrap resamples of BLEU: sacreBLEU's own corpus score, the same resamples for every
system, and the tests built on them (difference, equivalence, Holm)."""
import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU

from t2t_lite.errors import UserError
from t2t_lite.metrics import bleu_bootstrap

WORDS = "the cat sat on mat a dog runs in park hello world how are you today".split()


def _noisy(references, share, seed):
    """The references with `share` of their words replaced: higher share, lower BLEU."""
    rnd = random.Random(seed)
    return [" ".join(w if rnd.random() > share else rnd.choice(WORDS) for w in s.split())
            for s in references]


def _lines(count, share, seed):
    rnd = random.Random(seed)
    references = [" ".join(rnd.choice(WORDS) for _ in range(8)) for _ in range(count)]
    return references, _noisy(references, share, seed + 1)


def test_scores_are_sacrebleus_and_resamples_are_shared_and_seeded():
    references, hypotheses = _lines(200, 0.3, 0)
    resamples = bleu_bootstrap.PairedResamples(references)
    corpus, resampled = resamples.scores(hypotheses)
    assert corpus == pytest.approx(BLEU().corpus_score(hypotheses, [references]).score, abs=1e-9)
    assert resampled.shape == (bleu_bootstrap.SAMPLES,)
    assert abs(resampled.mean() - corpus) < 1.0 and resampled.std() > 0.5
    # The same seed draws the same resamples: scores repeat exactly, and a system scored
    # against itself differs by exactly 0 on every resample (the pairing).
    again = bleu_bootstrap.PairedResamples(references).scores(hypotheses)[1]
    np.testing.assert_array_equal(resampled, again)
    other = bleu_bootstrap.PairedResamples(references, seed=7).scores(hypotheses)[1]
    assert not np.array_equal(resampled, other)
    with pytest.raises(UserError, match="translation has 199 lines but reference has 200"):
        resamples.scores(hypotheses[:-1])


def test_a_real_difference_is_told_from_chance():
    references, good = _lines(300, 0.3, 0)
    # The same share of words replaced, and twice it.
    also_good, bad = _noisy(references, 0.3, 2), _noisy(references, 0.6, 3)
    resamples = bleu_bootstrap.PairedResamples(references)
    (good_bleu, good_resampled), (bad_bleu, bad_resampled), (_, also_resampled) = (
        resamples.scores(lines) for lines in (good, bad, also_good))
    assert bad_bleu < good_bleu - 10
    assert bleu_bootstrap.difference_p_value(good_resampled - bad_resampled) < 0.01
    assert bleu_bootstrap.difference_p_value(good_resampled - also_resampled) > 0.05


def test_difference_and_equivalence_p_values():
    zeros = np.zeros(999)
    assert bleu_bootstrap.difference_p_value(zeros) == 1.0
    assert bleu_bootstrap.equivalence_p_value(zeros, 0.5) == pytest.approx(1 / 1000)
    assert bleu_bootstrap.equivalence_p_value(zeros, 0.0) == 1.0  # a zero margin is never shown
    shifted = np.linspace(1.0, 3.0, 999)  # all above 0: a difference, not within ±2
    assert bleu_bootstrap.difference_p_value(shifted) == pytest.approx(2 / 1000)
    assert bleu_bootstrap.equivalence_p_value(shifted, 2.0) == pytest.approx(501 / 1000)
    assert bleu_bootstrap.equivalence_p_value(shifted, 3.5) == pytest.approx(1 / 1000)
    # 50 of 999 at or below 0: two-sided p is twice that tail.
    mixed = np.concatenate([-np.ones(50), np.ones(949)])
    assert bleu_bootstrap.difference_p_value(mixed) == pytest.approx(2 * 51 / 1000)


def test_holm_adjusts_in_the_order_given():
    assert bleu_bootstrap.holm([]) == []
    assert bleu_bootstrap.holm([0.04]) == [0.04]
    assert bleu_bootstrap.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    # Monotone in the sorted order, capped at 1.
    assert bleu_bootstrap.holm([0.5, 0.001, 0.4, 0.3]) == pytest.approx([0.9, 0.004, 0.9, 0.9])
