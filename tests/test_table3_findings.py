"""The paper's findings checked on a table's rows: each finding's verdict from made-up rows whose
dev translations and perplexities are built to agree with the paper, contradict it, or tie."""
import random

import pytest

from t2t_lite.table3 import findings
from t2t_lite.table3.findings import BETTER, SAME, WORSE

WORDS = "the cat sat on mat a dog runs in park hello world how are you today".split()


def _sentences(count=300, seed=0):
    rnd = random.Random(seed)
    return [" ".join(rnd.choice(WORDS) for _ in range(8)) for _ in range(count)]


def _noisy(references, share, seed):
    """The references with `share` of their words replaced: higher share, lower BLEU."""
    rnd = random.Random(seed)
    return [" ".join(w if rnd.random() > share else rnd.choice(WORDS) for w in s.split())
            for s in references]


@pytest.fixture
def table(tmp_path):
    """rows: {row: (share of words wrong in its translation, dev perplexity)} -> entries and the
    translation path of each row."""
    references = _sentences()
    (tmp_path / "dev.ref").write_text("\n".join(references) + "\n")

    def make(rows):
        entries = []
        for index, (row, (share, ppl)) in enumerate(rows.items()):
            (tmp_path / row).mkdir()
            seed = 0 if share == 0.3 else index + 1  # equal shares: the same translation
            (tmp_path / row / "dev.translation").write_text(
                "\n".join(_noisy(references, share, seed)) + "\n")
            entries.append({"row": row, "status": "done", "ppl": ppl})
        entries.append({"row": "D_dropout0", "status": "failed", "ppl": None})
        return findings.check(entries, lambda row: str(tmp_path / row / "dev.translation"),
                              str(tmp_path / "dev.ref"))
    return make


def test_each_finding_gets_the_verdict_its_rows_show(table):
    checked = {f["key"]: f for f in table({
        "base": (0.3, 10.0),
        "A_heads1_dk512": (0.5, 12.0),  # worse on both, as in the paper
        "D_smoothing0": (0.1, 9.0),  # better BLEU: the paper found it worse
        "E_learned_positions": (0.3, 10.1),  # the same translation, perplexity within 2%
        "B_dk16": (0.5, 12.0), "B_dk32": (0.1, 9.0),  # one as the paper, one opposite
    })}
    assert checked["one_head"]["verdict"] == "reproduced"
    comparison, = checked["one_head"]["comparisons"]
    assert comparison["bleu"] < comparison["against_bleu"] and comparison["p_value"] < 0.05
    assert (comparison["bleu_found"], comparison["ppl_found"]) == (WORSE, WORSE)
    assert comparison["paper"] == {"bleu": 24.9, "against_bleu": 25.8, "ppl": 5.29,
                                   "against_ppl": 4.92}
    # Label smoothing: the paper has it worse on BLEU and better on perplexity without it;
    # here it is better on both, so one of two differences is as in the paper, one opposite.
    smoothing, = checked["smoothing"]["comparisons"]
    assert (smoothing["bleu_found"], smoothing["ppl_found"]) == (BETTER, BETTER)
    assert checked["smoothing"]["verdict"] == "partly: 1 of 2 differences as in the paper, 1 contrary"
    assert checked["positions"]["verdict"] == "reproduced"
    positions, = checked["positions"]["comparisons"]
    assert positions["p_value"] == 1.0 and positions["ppl_found"] == SAME
    assert checked["small_dk"]["verdict"] == ("partly: 2 of 4 differences as in the paper, "
                                              "2 contrary")
    # A failed row and rows not run leave their findings unmeasured.
    assert checked["dropout"]["verdict"] == "not measured"
    assert checked["bigger"]["verdict"] == "not measured"
    text = "\n".join(findings.render(list(checked.values())))
    assert "- **Single-head attention is worse than the best setting**: reproduced." in text
    assert "`A_heads1_dk512` against `base`: BLEU" in text and "paper 24.9 vs 25.8: worse" in text


def test_opposite_everywhere_is_contradicted_and_small_differences_are_noise():
    assert findings._verdict([(WORSE, BETTER), (WORSE, BETTER)]) == "contradicted"
    # The paper found no difference; one found either way contradicts it.
    assert findings._verdict([(SAME, BETTER), (SAME, WORSE)]) == "contradicted"
    assert findings._verdict([(WORSE, SAME), (WORSE, SAME)]) == "not shown (within noise)"
    assert findings._verdict([(WORSE, WORSE), (WORSE, SAME)]) == ("partly: 1 of 2 differences "
                                                                  "as in the paper")
    assert findings._ppl_outcome(10.15, 10.0) == SAME and findings._ppl_outcome(10.3, 10.0) == WORSE
    assert findings._bleu_outcome(-2.0, 0.2) == SAME and findings._bleu_outcome(-2.0, 0.01) == WORSE


def test_every_finding_compares_rows_of_the_table_as_the_papers_numbers_order_them():
    from t2t_lite.table3.paper import PAPER_BY_ROW

    for finding in findings.FINDINGS:
        for c in finding.comparisons:
            row, against = PAPER_BY_ROW[c.row], PAPER_BY_ROW[c.against]
            if c.bleu != SAME:
                assert (row.bleu < against.bleu) == (c.bleu == WORSE), (finding.key, c)
            if c.ppl != SAME:
                assert (row.ppl > against.ppl) == (c.ppl == WORSE), (finding.key, c)
            else:
                assert row.ppl == against.ppl, (finding.key, c)
