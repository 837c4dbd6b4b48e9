"""The table's outputs from its rows' records: table3.md (the paper's layout, its numbers beside
ours), table3.csv, table3.png (each row's effect against base) and table3.json."""
import csv
import dataclasses
import io
import math
import os
from typing import Optional

from t2t_lite import atomic
from t2t_lite.progress_line import format_duration
from t2t_lite.table3 import findings
from t2t_lite.table3.machine import describe_machine
from t2t_lite.table3.mapping import describe_change
from t2t_lite.table3.paper import (ALPHA, BEAM_SIZE, GROUP_LABELS, PAPER_BY_ROW, PAPER_STEPS, ROWS,
                                   row_columns)
from t2t_lite.table3.table import (DEV_REFERENCE, DEV_TRANSLATION, TABLE_CSV, TABLE_JSON,
                                   TABLE_MD, TABLE_PNG)

COLUMN_ORDER = ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls")


@dataclasses.dataclass
class TableEntry:
    """One row as the outputs show it: its columns and status, its numbers (None until it is
    done), the paper's."""
    group: str  # the paper's: base, A-E
    row: str
    columns: Optional[dict]  # paper.row_columns of its configs
    status: str  # done, failed, not run
    reason: Optional[str]  # why it failed
    steps: Optional[int]
    ppl: Optional[float]  # dev perplexity
    bleu: Optional[float]  # dev BLEU
    chrf: Optional[float]
    params: Optional[int]
    train_seconds: Optional[float]
    evaluate_seconds: Optional[float]
    paper_ppl: Optional[float]
    paper_bleu: Optional[float]
    paper_params: Optional[int]
    model_dir: str
    precision: Optional[str]
    machine: Optional[dict]


def table_rows(table, plans):
    """A TableEntry per row the table holds, in the paper's order: from its plan, its RowResult
    when it is done (else its failure's reason), and the paper's numbers."""
    out = []
    for row in sorted(table.record.get("rows", {}), key=ROWS.index):
        plan = plans.get(row)
        result, failure = table.result(row), table.failure(row)
        paper = PAPER_BY_ROW[row]
        entry = TableEntry(
            group=paper.group, row=row,
            columns=row_columns(plan.configs) if plan else result and result.columns,
            status="done" if result else "failed" if failure else "not run",
            reason=(failure or {}).get("reason") if not result else None,
            params=plan.params if plan else result and result.params,
            paper_ppl=paper.ppl, paper_bleu=paper.bleu, paper_params=paper.params,
            model_dir=table.row_path(row, "model"), **_measured(result))
        out.append(entry)
    return out


def _measured(result):
    """A TableEntry's fields a done row's RowResult gives (None for a row not done)."""
    if not result:
        return dict.fromkeys(("steps", "ppl", "bleu", "chrf", "train_seconds",
                              "evaluate_seconds", "precision", "machine"))
    return dict(steps=result.steps, ppl=result.dev.perplexity, bleu=result.bleu,
                chrf=result.chrf, train_seconds=result.seconds.train,
                evaluate_seconds=result.seconds.evaluate, precision=result.precision,
                machine=result.machine)


def _fmt(value, digits):
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}f}"


def render_markdown(record, entries, plotted=False, checked_findings=()):
    lines = [*_markdown_header(record, entries), *_markdown_table(record, entries)]
    notes = [f"- `{e.row}` failed: {e.reason}" for e in entries
             if e.status != "done" and e.reason]
    lines += ["", "Empty cells are identical to base, as in the paper. time: training (across "
              "resumes) plus evaluation.", ""]
    if notes:
        lines += ["Failed rows:", "", *notes, ""]
    if plotted:
        lines += [f"![each row's effect on dev BLEU and perplexity relative to base, beside the "
                  f"paper's]({TABLE_PNG})", ""]
    if any(f["comparisons"] for f in checked_findings):
        lines += findings.render(checked_findings)
    return "\n".join(lines)


def _markdown_header(record, entries):
    """The page's title and what the table ran on: problem, machine, budget, evaluation."""
    budget = record.get("budget") or {}
    if "train_minutes" in budget:
        budget_text = (f"base trained {budget['train_minutes']:g} minutes and reached step "
                       f"{record.get('steps')}; every other row trains that many steps")
    else:
        budget_text = f"{record.get('steps')} steps per row"
    machines = []
    for e in entries:
        if e.machine and describe_machine(e.machine) not in machines:
            machines.append(describe_machine(e.machine))
    return [
        "# Table 3: variations on the Transformer",
        "",
        f"Reproduction of Vaswani et al. 2017, Table 3, with t2t-lite-table3: problem "
        f"`{record['problem']}`"
        + (f" ({', '.join(record['problem_params'])})" if record.get("problem_params") else "")
        + f", scale `{record['scale']}`, data `{record['data_dir']}` (vocabulary "
        f"{record.get('vocab_size'):,} subwords).",
        "",
        f"- Machine{'s' if len(machines) > 1 else ''}: "
        + ("; ".join(machines) if machines else describe_machine(record.get("machine", {})))
        + f". Precision: {record.get('precision')} ({record.get('precision_why')}).",
        f"- Budget: {budget_text}; the same data, vocabulary, seed and precision for every row"
        + (f"; extra bindings: {', '.join(f'`{g}`' for g in record['gin_params'])}"
           if record.get("gin_params") else "") + ".",
        f"- Evaluation: the last checkpoint, no checkpoint averaging. PPL (dev): perplexity per "
        f"subword token over the whole dev split; BLEU (dev): sacreBLEU of a beam-{BEAM_SIZE}, "
        f"alpha-{ALPHA} decode of {record.get('dev_sentences_decoded')} dev sentences. Paper: "
        f"newstest2013 after {PAPER_STEPS:,} steps on 8 P100 GPUs (its PPL per wordpiece, "
        "tokenized BLEU).",
        f"- Updated {record.get('updated', '')}.",
        "",
    ]


def _markdown_table(record, entries):
    """The table's header and one line per row; a cell equal to base's is left empty."""
    base = next((e for e in entries if e.row == "base"), None)
    base_columns = base.columns if base else None
    base_steps = base.steps if base else record.get("steps")
    names = list(COLUMN_ORDER)
    header = (["", "row", *names, "steps", "PPL (dev)", "BLEU (dev)", "params ×10^6",
               "paper PPL", "paper BLEU", "paper params ×10^6", "time"])
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    seen_groups = set()
    for e in entries:
        group = e.group
        first = group not in seen_groups
        seen_groups.add(group)
        label = ("base" if group == "base" else f"({group})") if first else ""
        cells = []
        for name in names:
            value = (e.columns or {}).get(name)
            if base_columns is not None and e.row != "base" and value == base_columns.get(name):
                cells.append("")
            else:
                cells.append("" if value is None else str(value))
        row_label = f"`{e.row}`"
        if (e.columns or {}).get("positions") == "learned":
            row_label += f" ({GROUP_LABELS['E']})"
        steps = e.steps
        steps_cell = ("" if steps is None or (e.row != "base" and steps == base_steps)
                      else f"{steps:,}")
        if e.status == "done":
            ppl, bleu = _fmt(e.ppl, 2), _fmt(e.bleu, 1)
        else:
            ppl, bleu = e.status, ""
        seconds = None
        if e.train_seconds is not None and e.evaluate_seconds is not None:
            seconds = e.train_seconds + e.evaluate_seconds
        lines.append("| " + " | ".join([
            label, row_label, *cells, steps_cell, ppl, bleu,
            _fmt(e.params / 1e6 if e.params else None, 1),
            _fmt(e.paper_ppl, 2), _fmt(e.paper_bleu, 1),
            "" if e.paper_params is None else str(e.paper_params),
            format_duration(seconds) if seconds is not None and math.isfinite(seconds) else "",
        ]) + " |")
    return lines


CSV_FIELDS = ("group", "row", "status", "reason", *COLUMN_ORDER, "positions", "steps",
              "ppl_dev", "bleu_dev", "chrf_dev", "params_millions", "paper_ppl", "paper_bleu",
              "paper_params_millions", "train_seconds", "evaluate_seconds", "precision",
              "model_dir")


def render_csv(entries):
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for e in entries:
        columns = e.columns or {}
        writer.writerow({
            "group": e.group, "row": e.row, "status": e.status,
            "reason": e.reason or "", **{n: columns.get(n, "") for n in COLUMN_ORDER},
            "positions": columns.get("positions", ""), "steps": e.steps or "",
            "ppl_dev": "" if e.ppl is None else f"{e.ppl:.4f}",
            "bleu_dev": "" if e.bleu is None else f"{e.bleu:.2f}",
            "chrf_dev": "" if e.chrf is None else f"{e.chrf:.2f}",
            "params_millions": f"{e.params / 1e6:.2f}" if e.params else "",
            "paper_ppl": e.paper_ppl, "paper_bleu": e.paper_bleu,
            "paper_params_millions": e.paper_params or "",
            "train_seconds": "" if e.train_seconds is None else e.train_seconds,
            "evaluate_seconds": "" if e.evaluate_seconds is None else e.evaluate_seconds,
            "precision": e.precision or "", "model_dir": e.model_dir})
    return buffer.getvalue()


def plot(entries, path, plans):
    """Each finished row's change in dev BLEU and perplexity against base (bars), with the
    paper's change for the row (markers). Returns False when matplotlib or base is missing."""
    base = next((e for e in entries if e.row == "base" and e.status == "done"), None)
    others = [e for e in entries if e.row != "base" and e.status == "done"]
    if base is None or not others:
        return False
    try:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.figure import Figure
    except ImportError:
        return False
    colours = {"A": "tab:blue", "B": "tab:orange", "C": "tab:green", "D": "tab:red",
               "E": "tab:purple"}
    labels = [f"({e.group}) {describe_change(plans[e.row].varied) if e.row in plans else e.row}"
              for e in others]
    positions = list(range(len(others)))[::-1]
    figure = Figure(figsize=(11, 0.45 * len(others) + 1.8))
    for column, (key, title) in enumerate((("bleu", "BLEU (dev) - base"),
                                           ("ppl", "PPL (dev) - base"))):
        axes = figure.add_subplot(1, 2, column + 1)
        ours = [getattr(e, key) - getattr(base, key) for e in others]
        paper = [getattr(e, f"paper_{key}") - getattr(base, f"paper_{key}") for e in others]
        axes.barh(positions, ours, height=0.6, color=[colours[e.group] for e in others],
                  label="this run")
        axes.scatter(paper, positions, marker="x", color="black", zorder=3, label="paper")
        axes.axvline(0, color="grey", linewidth=0.8)
        axes.set_title(title)
        axes.set_yticks(positions)
        axes.set_yticklabels(labels if column == 0 else [""] * len(labels), fontsize=8)
        if column == 0:
            axes.legend(fontsize=8, loc="lower left")
    figure.suptitle(f"Table 3 relative to base (base: PPL {base.ppl:.2f}, BLEU "
                    f"{base.bleu:.1f}; paper: {base.paper_ppl}, {base.paper_bleu})",
                    fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    return True


def write_outputs(table, plans, echo=print):
    """table3.md, .csv, .png and .json from the rows' records."""
    entries = table_rows(table, plans)
    plotted = plot(entries, table.path(TABLE_PNG), plans)
    if not plotted and os.path.isfile(table.path(TABLE_PNG)):
        os.remove(table.path(TABLE_PNG))
    atomic.write_text(table.path(TABLE_CSV), render_csv(entries))
    checked = findings.check(entries, lambda row: table.row_path(row, DEV_TRANSLATION),
                             table.path(DEV_REFERENCE))
    table.record["findings"] = checked
    markdown = render_markdown(table.record, entries, plotted, checked)
    atomic.write_text(table.path(TABLE_MD), markdown)
    table.save()
    echo("", flush=True)
    echo(markdown, flush=True)
    echo(f"table: {table.path(TABLE_MD)}, {table.path(TABLE_CSV)}, {table.path(TABLE_JSON)}"
         + (f", {table.path(TABLE_PNG)}" if plotted else " (no plot: needs matplotlib, base and "
            "another finished row)"), flush=True)
