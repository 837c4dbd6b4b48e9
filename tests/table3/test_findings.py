"""The paper's findings checked on a table's rows: each finding's verdict from made-up rows whose
dev translations and perplexities are built to agree with the paper, contradict it, tie, or be
too few to tell; the family of tests under Holm; missing files as errors (through run_table in
tests/table3/test_table3.py)."""
import random

import pytest

from t2t_lite.errors import UserError
from t2t_lite.table3 import findings
from t2t_lite.table3.findings import BETTER, NOT_BETTER, SAME, UNDECIDED, WORSE
from t2t_lite.table3.outputs import TableEntry


def _entry(row, status, ppl):
    """A TableEntry as table_rows makes it, with what the findings read (row, status, ppl)."""
    return TableEntry(group="", row=row, columns=None, status=status, reason=None, steps=None,
                      ppl=ppl, bleu=None, chrf=None, params=None, train_seconds=None,
                      evaluate_seconds=None, paper_ppl=None, paper_bleu=None, paper_params=None,
                      model_dir="", precision=None, machine=None)

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
    """make(rows, count): rows {row: (translation, dev perplexity)}, a translation being a share
    of words wrong (0.3 is base's translation itself; another share, noise of its own) or a
    function of the references giving the lines; `count` dev sentences. Returns the checked
    findings by key."""
    def make(rows, count=300):
        references = _sentences(count)
        (tmp_path / "dev.ref").write_text("\n".join(references) + "\n")
        entries = []
        for index, (row, (translation, ppl)) in enumerate(rows.items()):
            if callable(translation):
                lines = translation(references)
            else:
                lines = _noisy(references, translation, 0 if translation == 0.3 else index + 1)
            (tmp_path / row).mkdir()
            (tmp_path / row / "dev.translation").write_text("\n".join(lines) + "\n")
            entries.append(_entry(row, "done", ppl))
        entries.append(_entry("D_dropout0", "failed", None))
        checked = findings.check(entries, lambda row: str(tmp_path / row / "dev.translation"),
                                 str(tmp_path / "dev.ref"))
        return {f["key"]: f for f in checked}
    return make


def _base(references):
    return _noisy(references, 0.3, 0)


def _five_lines_worse(references):
    """base's translation with 5 of its 300 lines far noisier: a small loss."""
    lines = _base(references)
    for i in range(0, 300, 60):
        lines[i] = _noisy([references[i]], 0.9, i)[0]
    return lines


def test_each_finding_gets_the_verdict_its_rows_show(table):
    checked = table({
        "base": (0.3, 10.0),
        "A_heads1_dk512": (0.5, 12.0),  # worse on both, as in the paper
        "D_smoothing0": (0.1, 9.0),  # better BLEU: the paper found it worse
        "E_learned_positions": (0.3, 10.1),  # the same translation, perplexity within 2%
        "B_dk16": (0.5, 12.0), "B_dk32": (0.1, 9.0),  # one as the paper, one opposite
    })
    assert checked["one_head"]["verdict"] == "reproduced"
    comparison, = checked["one_head"]["comparisons"]
    assert comparison["bleu"] < comparison["against_bleu"] and comparison["p_value"] < 0.05
    low, high = comparison["interval"]
    assert low < high < 0 and comparison["p_same"] is None  # only tested where the paper ties
    assert (comparison["bleu_found"], comparison["ppl_found"]) == (WORSE, WORSE)
    assert comparison["paper"] == {"bleu": 24.9, "against_bleu": 25.8, "ppl": 5.29,
                                   "against_ppl": 4.92}
    # Label smoothing: the paper has it worse on BLEU and better on perplexity without it;
    # here it is better on both, so one of two differences is as in the paper, one opposite.
    smoothing, = checked["smoothing"]["comparisons"]
    assert (smoothing["bleu_found"], smoothing["ppl_found"]) == (BETTER, BETTER)
    assert checked["smoothing"]["verdict"] == "partly: 1 of 2 differences as in the paper, 1 contrary"
    # The same translation: no difference, and sameness shown within the margin.
    assert checked["positions"]["verdict"] == "reproduced"
    positions, = checked["positions"]["comparisons"]
    assert positions["p_value"] == 1.0 and positions["p_same"] < 0.05
    assert positions["margin"] == pytest.approx(0.04 * positions["against_bleu"])
    assert (positions["bleu_found"], positions["ppl_found"]) == (SAME, SAME)
    assert checked["small_dk"]["verdict"] == ("partly: 2 of 4 differences as in the paper, "
                                              "2 contrary")
    # A failed row and rows not run leave their findings unmeasured.
    assert checked["dropout"]["verdict"] == "not measured"
    assert checked["bigger"]["verdict"] == "not measured"
    text = "\n".join(findings.render(list(checked.values())))
    assert "- **Single-head attention is worse than the best setting**: reproduced." in text
    assert "`A_heads1_dk512` against `base`: BLEU" in text and "paper 24.9 vs 25.8: worse" in text
    assert "The table's 6 BLEU tests are one family" in text  # 5 differences, 1 sameness
    assert f"same within ±{positions['margin']:.2f}: p {positions['p_same']:.3f}: the same" in text


def test_a_test_too_small_to_tell_is_undecided_not_the_same(table):
    """6 dev sentences and a 17 BLEU gap: no significant difference, but no sameness either, so
    the paper's "nearly identical" is not shown."""
    checked = table({"base": (0.3, 10.0),
                     "E_learned_positions": (lambda refs: _noisy(refs, 0.5, 7), 10.1)}, count=6)
    positions, = checked["positions"]["comparisons"]
    assert positions["against_bleu"] - positions["bleu"] > 15
    assert positions["p_value"] > 0.05 and positions["p_same"] > 0.05
    assert positions["bleu_found"] == UNDECIDED
    assert checked["positions"]["verdict"] == "partly: 1 of 2 differences as in the paper"


def test_sameness_is_shown_within_the_margin_even_past_significance(table):
    """Five of 300 lines worse: a real but small difference, inside ±4% of base's BLEU, is the
    same; 300 sentences of another run's noise are too few to show sameness."""
    checked = table({"base": (0.3, 10.0), "E_learned_positions": (_five_lines_worse, 10.1)})
    positions, = checked["positions"]["comparisons"]
    assert positions["p_value"] < 0.05 and positions["p_same"] < 0.05
    assert positions["bleu_found"] == SAME and checked["positions"]["verdict"] == "reproduced"


def test_another_noise_of_the_same_size_is_undecided(table):
    checked = table({"base": (0.3, 10.0),
                     "E_learned_positions": (lambda refs: _noisy(refs, 0.3, 5), 10.1)})
    positions, = checked["positions"]["comparisons"]
    assert positions["p_value"] > 0.05 and positions["p_same"] > 0.05
    assert positions["bleu_found"] == UNDECIDED


def test_a_significantly_better_bigger_model_supports_bigger_is_better(table):
    # base against N 8: the paper found the same BLEU; N 8 significantly better is no contrary.
    checked = table({"base": (0.3, 10.0), "C_layers8": (0.1, 9.0)})
    comparison, = checked["bigger"]["comparisons"]
    assert (comparison["bleu_paper"], comparison["bleu_found"]) == (NOT_BETTER, WORSE)
    assert checked["bigger"]["verdict"] == "reproduced"
    # base significantly better than N 8 is against it; the same BLEU is the paper's.
    assert findings._verdict([(NOT_BETTER, BETTER), (WORSE, BETTER)]) == "contradicted"
    assert findings._verdict([(NOT_BETTER, SAME), (WORSE, WORSE)]) == "reproduced"
    assert findings._verdict([(NOT_BETTER, UNDECIDED), (WORSE, WORSE)]) == (
        "partly: 1 of 2 differences as in the paper")


def test_the_family_of_tests_is_held_by_holm(table, tmp_path_factory):
    assert findings.bleu_bootstrap.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])

    # Alone, five worse lines of a single head are a significant loss (raw p 0.014) ...
    alone = table({"base": (0.3, 10.0), "A_heads1_dk512": (_five_lines_worse, 12.0)})
    comparison, = alone["one_head"]["comparisons"]
    assert comparison["p_value"] == pytest.approx(14 / 1001)
    assert alone["one_head"]["verdict"] == "reproduced"
    # ... but in a family of four tests (three others far from significance) Holm multiplies
    # its p by four, past 5%, and the loss is no longer shown.
    folder = tmp_path_factory.mktemp("family")
    references = _sentences()
    (folder / "dev.ref").write_text("\n".join(references) + "\n")
    translations = {"base": _base(references), "A_heads1_dk512": _five_lines_worse(references),
                    "B_dk16": _noisy(references, 0.3, 2), "B_dk32": _noisy(references, 0.3, 4),
                    "D_smoothing0": _noisy(references, 0.3, 9)}
    for row, text in translations.items():
        (folder / f"{row}.txt").write_text("\n".join(text) + "\n")
    entries = [_entry(row, "done", 10.0) for row in translations]
    entries[1].ppl = 12.0
    checked = {f["key"]: f for f in findings.check(
        entries, lambda row: str(folder / f"{row}.txt"), str(folder / "dev.ref"))}
    comparison, = checked["one_head"]["comparisons"]
    assert comparison["p_value"] == pytest.approx(4 * 14 / 1001)
    assert comparison["bleu_found"] == UNDECIDED
    assert checked["one_head"]["verdict"] == "partly: 1 of 2 differences as in the paper"
    others = [c["p_value"] for key in ("small_dk", "smoothing") for c in checked[key]["comparisons"]]
    assert len(others) == 3 and all(p > 0.5 for p in others)


def test_a_missing_or_short_file_is_an_error_not_unmeasured(tmp_path):
    references = _sentences(20)
    (tmp_path / "dev.ref").write_text("\n".join(references) + "\n")
    (tmp_path / "base.txt").write_text("\n".join(_base(references)) + "\n")
    (tmp_path / "A_heads1_dk512.txt").write_text("\n".join(_base(references)[:19]) + "\n")
    entries = [_entry(row, "done", 10.0)
               for row in ("base", "A_heads1_dk512", "E_learned_positions")]

    def check(reference="dev.ref"):
        return findings.check(entries, lambda row: str(tmp_path / f"{row}.txt"),
                              str(tmp_path / reference))

    with pytest.raises(UserError) as error:
        check()
    assert str(error.value) == (
        "cannot check the paper's findings on row A_heads1_dk512: translation has 19 lines "
        "but reference has 20; they must match line for line")
    (tmp_path / "A_heads1_dk512.txt").write_text("\n".join(_base(references)) + "\n")
    with pytest.raises(UserError) as error:
        check()
    assert str(error.value) == ("cannot check the paper's findings on row E_learned_positions: "
                                f"translation file not found: {tmp_path}/E_learned_positions.txt")
    (tmp_path / "E_learned_positions.txt").write_text("\n".join(_base(references)) + "\n")
    with pytest.raises(UserError) as error:
        check("no.ref")
    assert str(error.value) == ("cannot check the paper's findings: reference file not found: "
                                f"{tmp_path}/no.ref")
    # 20 identical lines: sameness shown; perplexities the same.
    assert {f["key"]: f["verdict"] for f in check()}["positions"] == "reproduced"
    # Rows not finished need no files.
    assert all(f["verdict"] == "not measured" for f in findings.check(
        [_entry("base", "done", 10.0)], lambda row: "none", "none"))


def test_opposite_everywhere_is_contradicted_and_undecided_is_neither():
    assert findings._verdict([(WORSE, BETTER), (WORSE, BETTER)]) == "contradicted"
    # The paper found no difference; one found either way contradicts it.
    assert findings._verdict([(SAME, BETTER), (SAME, WORSE)]) == "contradicted"
    assert findings._verdict([(WORSE, UNDECIDED), (WORSE, SAME)]) == "not shown (within noise)"
    assert findings._verdict([(SAME, UNDECIDED), (SAME, SAME)]) == ("partly: 1 of 2 differences "
                                                                    "as in the paper")
    assert findings._verdict([(WORSE, WORSE), (WORSE, SAME)]) == ("partly: 1 of 2 differences "
                                                                  "as in the paper")
    assert findings._ppl_outcome(10.15, 10.0) == SAME and findings._ppl_outcome(10.3, 10.0) == WORSE
    # p values as Holm adjusted them: sameness first where tested, then a difference.
    assert findings._bleu_outcome(-2.0, 0.2, None) == UNDECIDED
    assert findings._bleu_outcome(-2.0, 0.2, 0.3) == UNDECIDED
    assert findings._bleu_outcome(-2.0, 0.01, None) == WORSE
    assert findings._bleu_outcome(0.5, 0.01, 0.01) == SAME
    assert findings._bleu_outcome(2.0, 0.01, 0.2) == BETTER


def test_every_finding_compares_rows_of_the_table_as_the_papers_numbers_order_them():
    from t2t_lite.table3.paper import PAPER_BY_ROW

    for finding in findings.FINDINGS:
        for c in finding.comparisons:
            row, against = PAPER_BY_ROW[c.row], PAPER_BY_ROW[c.against]
            if c.bleu in (SAME, NOT_BETTER):
                # The paper's own gap is within the margin "the same" is shown inside.
                assert abs(row.bleu - against.bleu) <= findings.BLEU_MARGIN * against.bleu, c
            else:
                assert (row.bleu < against.bleu) == (c.bleu == WORSE), (finding.key, c)
            if c.ppl != SAME:
                assert (row.ppl > against.ppl) == (c.ppl == WORSE), (finding.key, c)
            else:
                assert row.ppl == against.ppl, (finding.key, c)

