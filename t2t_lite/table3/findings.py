"""The paper's findings from Table 3 (section 6.2), checked against a table's own rows.

Each finding is a set of comparisons between two rows, with what the paper found for the first row
against the second on dev BLEU and dev perplexity. A table's BLEU difference counts when sacreBLEU's
paired bootstrap test (metrics/bleu.py) finds it significant at 5%, on the two rows' dev
translations; a perplexity difference counts beyond PPL_SAME (one run per row gives no spread to
test it against). Neither covers the spread between two training runs of a row, which one run
per row cannot measure. A finding is "reproduced" when every comparison shows what the paper found,
"contradicted" when none does and one shows a difference the paper did not find, and otherwise
says how far it got.
"""
import dataclasses
import math
from typing import Tuple

from t2t_lite.errors import UserError
from t2t_lite.metrics import bleu
from t2t_lite.metrics.report import read_lines
from t2t_lite.table3.paper import PAPER_BY_ROW

SIGNIFICANCE = 0.05
PPL_SAME = 0.02  # relative: perplexities closer than this count as the same
WORSE, BETTER, SAME = "worse", "better", "the same"


@dataclasses.dataclass(frozen=True)
class Comparison:
    row: str
    against: str
    bleu: str  # what the paper found for `row` against `against`: WORSE, BETTER or SAME
    ppl: str


@dataclasses.dataclass(frozen=True)
class Finding:
    key: str
    claim: str  # the paper's words (section 6.2), shortened
    comparisons: Tuple[Comparison, ...]


def _worse(row, against, ppl=WORSE):
    return Comparison(row, against, WORSE, ppl)


FINDINGS = (
    Finding("one_head", "single-head attention is worse than the best setting",
            (_worse("A_heads1_dk512", "base"),)),
    Finding("many_heads", "quality drops off with too many heads",
            (_worse("A_heads32_dk16", "A_heads16_dk32"),)),
    Finding("small_dk", "reducing the attention key size d_k hurts model quality",
            (_worse("B_dk16", "base"), _worse("B_dk32", "base"))),
    # The paper's perplexities fall with every step up in size; its BLEU too, except N 8, 0.3
    # below base, which is counted as the same.
    Finding("bigger", "bigger models are better",
            (_worse("C_layers2", "C_layers4"), _worse("C_layers4", "base"),
             Comparison("base", "C_layers8", SAME, WORSE),
             _worse("C_dmodel256_dk32", "base"), _worse("base", "C_dmodel1024_dk128"),
             _worse("C_dff1024", "base"), _worse("base", "C_dff4096"))),
    Finding("dropout", "dropout is very helpful in avoiding over-fitting",
            (_worse("D_dropout0", "base"),)),
    Finding("smoothing", "label smoothing hurts perplexity but improves BLEU",
            (Comparison("D_smoothing0", "base", WORSE, BETTER),)),
    Finding("positions", "learned positional embeddings give nearly identical results to "
            "sinusoids", (Comparison("E_learned_positions", "base", SAME, SAME),)),
)


def _bleu_outcome(delta, p_value):
    if p_value >= SIGNIFICANCE:
        return SAME
    return BETTER if delta > 0 else WORSE


def _ppl_outcome(ppl, against):
    if abs(ppl / against - 1.0) <= PPL_SAME:
        return SAME
    return WORSE if ppl > against else BETTER


def _verdict(checks):
    """checks: (expected, observed) pairs over every comparison and metric of a finding."""
    shown = sum(expected == observed for expected, observed in checks)
    # Contrary: a difference the paper did not find (a direction other than the paper's, or one
    # where it found none); a difference within noise is neither shown nor contrary.
    contrary = sum(observed not in (expected, SAME) for expected, observed in checks)
    if shown == len(checks):
        return "reproduced"
    if shown == 0:
        return "contradicted" if contrary else "not shown (within noise)"
    return (f"partly: {shown} of {len(checks)} differences as in the paper"
            + (f", {contrary} contrary" if contrary else ""))


def check(entries, translation_path, reference_path):
    """Each finding checked on the table's finished rows.

    entries: table_rows' dicts (row, status, bleu, ppl). translation_path(row): the row's dev
    translation. Comparisons with a row not finished are left out; a finding with none left is
    "not measured". Returns one dict per finding: key, claim, verdict and its comparisons.
    """
    done = {e["row"]: e for e in entries if e["status"] == "done"
            and e["ppl"] is not None and math.isfinite(e["ppl"])}
    references = None
    out = []
    for finding in FINDINGS:
        compared, checks = [], []
        for c in finding.comparisons:
            if c.row not in done or c.against not in done:
                continue
            try:
                if references is None:
                    references = read_lines(reference_path, "reference")
                against_bleu, row_bleu, p_value = bleu.paired_bootstrap(
                    read_lines(translation_path(c.against), "translation"),
                    read_lines(translation_path(c.row), "translation"), references)
            except UserError:  # a row folder edited by hand: that comparison is left out
                continue
            row_ppl, against_ppl = done[c.row]["ppl"], done[c.against]["ppl"]
            observed_bleu = _bleu_outcome(row_bleu - against_bleu, p_value)
            observed_ppl = _ppl_outcome(row_ppl, against_ppl)
            checks += [(c.bleu, observed_bleu), (c.ppl, observed_ppl)]
            paper, paper_against = PAPER_BY_ROW[c.row], PAPER_BY_ROW[c.against]
            compared.append({
                "row": c.row, "against": c.against,
                "bleu": row_bleu, "against_bleu": against_bleu, "p_value": p_value,
                "bleu_found": observed_bleu, "bleu_paper": c.bleu,
                "ppl": row_ppl, "against_ppl": against_ppl,
                "ppl_found": observed_ppl, "ppl_paper": c.ppl,
                "paper": {"bleu": paper.bleu, "against_bleu": paper_against.bleu,
                          "ppl": paper.ppl, "against_ppl": paper_against.ppl}})
        out.append({"key": finding.key, "claim": finding.claim,
                    "verdict": _verdict(checks) if checks else "not measured",
                    "comparisons": compared})
    return out


def render(findings):
    """Markdown lines: each finding, its verdict and the numbers behind it."""
    lines = ["## The paper's findings on this table", "",
             f"Dev BLEU differences are tested with sacreBLEU's paired bootstrap (1,000 "
             f"resamples; significant at p < {SIGNIFICANCE}); perplexities within "
             f"{PPL_SAME:.0%} count as the same. Neither covers the spread between two "
             "training runs of one row (a table trains each row once). 'paper' gives the "
             "paper's numbers for the same two rows.", ""]
    for finding in findings:
        lines.append(f"- **{finding['claim'][0].upper()}{finding['claim'][1:]}**: "
                     f"{finding['verdict']}.")
        for c in finding["comparisons"]:
            paper = c["paper"]
            lines.append(
                f"  - `{c['row']}` against `{c['against']}`: BLEU {c['bleu']:.1f} vs "
                f"{c['against_bleu']:.1f} (p {c['p_value']:.3f}: {c['bleu_found']}; paper "
                f"{paper['bleu']} vs {paper['against_bleu']}: {c['bleu_paper']}), PPL "
                f"{c['ppl']:.2f} vs {c['against_ppl']:.2f} ({c['ppl_found']}; paper "
                f"{paper['ppl']} vs {paper['against_ppl']}: {c['ppl_paper']})")
    lines.append("")
    return lines
