"""The paper's findings from Table 3 (section 6.2), checked against a table's own rows.

Each finding is a set of comparisons between two rows, with what the paper found for the first row
against the second on dev BLEU and dev perplexity. BLEU is tested on the two rows' dev
translations by a paired bootstrap of the dev sentences (metrics/bleu_bootstrap.py):

- a difference counts when the two-sided test rejects "no difference";
- "the same" counts only when two one-sided tests (TOST) show the difference within
  ±BLEU_MARGIN of the second row's BLEU. A test too small to tell is "undecided", never "the
  same": without that, any underpowered comparison would show a claim of no difference;
- the tests a table's verdicts rest on (every comparison's difference test, and the equivalence
  test where the paper found no difference) are one family, held to a family-wise error rate of
  FAMILY_RATE by Holm's step-down correction: a table tests a dozen comparisons at once.

A perplexity difference counts beyond PPL_SAME (one run per row gives no spread to test it
against). Neither covers the spread between two training runs of a row, which one run per row
cannot measure. A finding is "reproduced" when every comparison shows what the paper found,
"contradicted" when none does and one shows a difference the paper did not find (or the
opposite of one it did), and otherwise says how far it got.
"""
import dataclasses
import math
from typing import Tuple

import numpy as np

from t2t_lite.errors import UserError
from t2t_lite.metrics import bleu_bootstrap
from t2t_lite.metrics.report import read_lines
from t2t_lite.table3.paper import PAPER_BY_ROW

FAMILY_RATE = 0.05  # family-wise error rate of a table's BLEU tests (Holm)
# Relative to the second row's BLEU: 1.0 BLEU at the paper's base 25.8. The paper calls 25.7
# against 25.8 "nearly identical" and counts N 8's 25.5 as no gain over base; at CPU scale
# (BLEU 2 to 15) a fixed number of points would mean another share at every size.
BLEU_MARGIN = 0.04
PPL_SAME = 0.02  # relative: perplexities closer than this count as the same
WORSE, BETTER, SAME = "worse", "better", "the same"
NOT_BETTER = "worse or the same"  # a claim a significant loss or a shown sameness supports
UNDECIDED = "undecided"  # neither a difference nor sameness shown


@dataclasses.dataclass(frozen=True)
class Comparison:
    row: str
    against: str
    bleu: str  # what the paper found for `row` against `against`: WORSE, BETTER, SAME or
    ppl: str  # NOT_BETTER (BLEU only)


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
    # below base: base "worse or the same" against it, so the same BLEU reproduces the paper's
    # numbers and a significantly better N 8 supports the claim.
    Finding("bigger", "bigger models are better",
            (_worse("C_layers2", "C_layers4"), _worse("C_layers4", "base"),
             Comparison("base", "C_layers8", NOT_BETTER, WORSE),
             _worse("C_dmodel256_dk32", "base"), _worse("base", "C_dmodel1024_dk128"),
             _worse("C_dff1024", "base"), _worse("base", "C_dff4096"))),
    Finding("dropout", "dropout is very helpful in avoiding over-fitting",
            (_worse("D_dropout0", "base"),)),
    Finding("smoothing", "label smoothing hurts perplexity but improves BLEU",
            (Comparison("D_smoothing0", "base", WORSE, BETTER),)),
    Finding("positions", "learned positional embeddings give nearly identical results to "
            "sinusoids", (Comparison("E_learned_positions", "base", SAME, SAME),)),
)


def _bleu_outcome(delta, p_difference, p_same):
    """What the (Holm-adjusted) tests show for a BLEU difference `delta` (row - against):
    sameness where it was tested and shown, else a significant difference, else UNDECIDED."""
    if p_same is not None and p_same < FAMILY_RATE:
        return SAME
    if p_difference < FAMILY_RATE:
        return BETTER if delta > 0 else WORSE
    return UNDECIDED


def _ppl_outcome(ppl, against):
    if abs(ppl / against - 1.0) <= PPL_SAME:
        return SAME
    return WORSE if ppl > against else BETTER


def _shows(expected, observed):
    return observed == expected or (expected == NOT_BETTER and observed in (WORSE, SAME))


def _verdict(checks):
    """checks: (expected, observed) pairs over every comparison and metric of a finding."""
    shown = sum(_shows(expected, observed) for expected, observed in checks)
    # Contrary: a difference that does not show the paper's finding (the opposite direction, or
    # one where the paper found none); an undecided test, or sameness where the paper found a
    # difference (within the margin, not the opposite), is neither shown nor contrary.
    contrary = sum(observed in (WORSE, BETTER) and not _shows(expected, observed)
                   for expected, observed in checks)
    if shown == len(checks):
        return "reproduced"
    if shown == 0:
        return "contradicted" if contrary else "not shown (within noise)"
    return (f"partly: {shown} of {len(checks)} differences as in the paper"
            + (f", {contrary} contrary" if contrary else ""))


def check(entries, translation_path, reference_path):
    """Each finding checked on the table's finished rows.

    entries: outputs.table_rows' TableEntry values (their row, status and ppl are read). translation_path(row): the row's dev
    translation. Comparisons with a row not finished are left out; a finding with none left is
    "not measured". A finished row's translation or the reference missing, unreadable or of
    another line count is a UserError, not a comparison left out. Returns one dict per finding:
    key, claim, verdict and its comparisons.
    """
    done = {e.row: e for e in entries if e.status == "done"
            and e.ppl is not None and math.isfinite(e.ppl)}
    measured = [(finding, c) for finding in FINDINGS for c in finding.comparisons
                if c.row in done and c.against in done]
    scores = _scores(measured, translation_path, reference_path)
    differences = [scores[c.row][1] - scores[c.against][1] for _, c in measured]
    adjusted = _adjusted_p_values(measured, scores, differences)
    by_finding = {finding.key: ([], []) for finding in FINDINGS}
    for index, (finding, c) in enumerate(measured):
        compared, checks = by_finding[finding.key]
        row_bleu, against_bleu = scores[c.row][0], scores[c.against][0]
        low, high = np.percentile(differences[index], [2.5, 97.5])
        p_difference, p_same = adjusted[(index, "difference")], adjusted.get((index, "same"))
        observed_bleu = _bleu_outcome(row_bleu - against_bleu, p_difference, p_same)
        row_ppl, against_ppl = done[c.row].ppl, done[c.against].ppl
        observed_ppl = _ppl_outcome(row_ppl, against_ppl)
        checks += [(c.bleu, observed_bleu), (c.ppl, observed_ppl)]
        paper, paper_against = PAPER_BY_ROW[c.row], PAPER_BY_ROW[c.against]
        compared.append({
            "row": c.row, "against": c.against,
            "bleu": row_bleu, "against_bleu": against_bleu,
            "interval": [float(low), float(high)],  # 95% of the resampled differences
            "p_value": p_difference, "p_same": p_same,  # Holm-adjusted over the table
            "margin": BLEU_MARGIN * against_bleu,
            "bleu_found": observed_bleu, "bleu_paper": c.bleu,
            "ppl": row_ppl, "against_ppl": against_ppl,
            "ppl_found": observed_ppl, "ppl_paper": c.ppl,
            "paper": {"bleu": paper.bleu, "against_bleu": paper_against.bleu,
                      "ppl": paper.ppl, "against_ppl": paper_against.ppl}})
    out = []
    for finding in FINDINGS:
        compared, checks = by_finding[finding.key]
        out.append({"key": finding.key, "claim": finding.claim,
                    "verdict": _verdict(checks) if checks else "not measured",
                    "comparisons": compared})
    return out


def _scores(measured, translation_path, reference_path):
    """{row: (dev BLEU, BLEU on each resample)} for each row of the `measured` comparisons,
    all on the same paired resamples of the reference; a file not read is a UserError."""
    scores = {}
    if measured:
        try:
            resamples = bleu_bootstrap.PairedResamples(read_lines(reference_path, "reference"))
        except UserError as error:
            raise UserError(f"cannot check the paper's findings: {error}") from None
        for row in sorted({name for _, c in measured for name in (c.row, c.against)}):
            try:
                scores[row] = resamples.scores(read_lines(translation_path(row), "translation"))
            except UserError as error:
                raise UserError(f"cannot check the paper's findings on row {row}: "
                                f"{error}") from None
    return scores


def _adjusted_p_values(measured, scores, differences):
    """{(comparison index, "difference" or "same"): Holm-adjusted p-value}. The family: each
    comparison's difference test, and its equivalence test where the paper found no
    difference; all adjusted together (Holm)."""
    tests, raw = [], []
    for index, (_, c) in enumerate(measured):
        tests.append((index, "difference"))
        raw.append(bleu_bootstrap.difference_p_value(differences[index]))
        if c.bleu in (SAME, NOT_BETTER):
            tests.append((index, "same"))
            raw.append(bleu_bootstrap.equivalence_p_value(
                differences[index], BLEU_MARGIN * scores[c.against][0]))
    return dict(zip(tests, bleu_bootstrap.holm(raw)))


def render(findings):
    """Markdown lines: each finding, its verdict and the numbers behind it."""
    tests = sum(1 + (c["p_same"] is not None) for f in findings for c in f["comparisons"])
    lines = ["## The paper's findings on this table", "",
             f"Dev BLEU is compared by a paired bootstrap of the dev sentences "
             f"({bleu_bootstrap.SAMPLES:,} resamples, seeded). A difference is found when the "
             f"two-sided test rejects \"no difference\"; \"the same\" only when two one-sided "
             f"tests show the difference within ±{BLEU_MARGIN:.0%} of the second row's BLEU "
             f"(the margin below; 1.0 BLEU at the paper's 25.8), else it is "
             f"\"{UNDECIDED}\". The table's {tests} BLEU tests are one family, held to a "
             f"family-wise error rate of {FAMILY_RATE:.0%} by Holm's correction; the p values "
             f"below are Holm-adjusted, the intervals are 95% of the resampled differences. "
             f"Perplexities within {PPL_SAME:.0%} count as the same. Neither covers the spread "
             "between two training runs of one row (a table trains each row once). 'paper' "
             "gives the paper's numbers for the same two rows.", ""]
    for finding in findings:
        lines.append(f"- **{finding['claim'][0].upper()}{finding['claim'][1:]}**: "
                     f"{finding['verdict']}.")
        for c in finding["comparisons"]:
            paper = c["paper"]
            low, high = c["interval"]
            same = (f", same within ±{c['margin']:.2f}: p {c['p_same']:.3f}"
                    if c["p_same"] is not None else "")
            lines.append(
                f"  - `{c['row']}` against `{c['against']}`: BLEU {c['bleu']:.1f} vs "
                f"{c['against_bleu']:.1f} (difference {c['bleu'] - c['against_bleu']:+.2f}, "
                f"[{low:+.2f}, {high:+.2f}]; p {c['p_value']:.3f}{same}: {c['bleu_found']}; "
                f"paper {paper['bleu']} vs {paper['against_bleu']}: {c['bleu_paper']}), PPL "
                f"{c['ppl']:.2f} vs {c['against_ppl']:.2f} ({c['ppl_found']}; paper "
                f"{paper['ppl']} vs {paper['against_ppl']}: {c['ppl_paper']})")
    lines.append("")
    return lines
