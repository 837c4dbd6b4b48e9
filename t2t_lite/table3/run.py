"""run_table: the rows in order, finished ones skipped, failed ones recorded, base first under a
minutes budget; the dev split, the ETA and the record kept up to date, then the outputs."""
import dataclasses
import math
import os
import time
from typing import Optional, Sequence

from t2t_lite import atomic
from t2t_lite.errors import UserError
from t2t_lite.problem_spec import ProblemSpec, write_eval_split
from t2t_lite.progress_line import format_duration
from t2t_lite.table3.machine import describe_machine, machine
from t2t_lite.table3.mapping import describe_change
from t2t_lite.table3.outputs import write_outputs
from t2t_lite.table3.paper import ALPHA, BEAM_SIZE, ROWS
from t2t_lite.table3.plan import plan_row, plan_rows
from t2t_lite.table3.row_runner import RowFailed, RowRunner
from t2t_lite.table3.selection import select_rows
from t2t_lite.table3.table import (DEV_REFERENCE, DEV_SOURCE, FAILURE, RESULT, Table,
                                   resolve_identity, table_identity)
from t2t_lite.training import precision as training_precision

# With neither --train_steps nor --train_minutes: the CPU scale trains base for this many minutes
# and every other row for the steps base reached; the paper scale trains the sets' own steps.
DEFAULT_CPU_MINUTES = 10.0


@dataclasses.dataclass
class TableOptions:
    problem: str
    data_dir: str
    out_dir: str
    rows: str = "all"  # --rows
    scale: Optional[str] = None  # None: the out_dir's table's, else DEFAULT_SCALE
    train_steps: Optional[int] = None
    train_minutes: Optional[float] = None
    gin_params: Sequence[str] = ()
    problem_params: Sequence[str] = ()
    problem_modules: Sequence[str] = ()
    dev_sentences: int = 0  # BLEU on the first N dev sentences (0: all)


def _check_data(problem, data_dir):
    """UserError unless data_dir holds the problem's vocabulary, train and dev data and dev text."""
    if not os.path.isdir(data_dir):
        raise UserError(f"--data_dir {data_dir} does not exist; run t2t-lite-datagen "
                        f"--problem={problem.name} --data_dir={data_dir} first")
    problem.tokenizer(data_dir)  # names the missing vocabulary and the datagen command
    for split in ("train", "dev"):
        problem.manifest(data_dir, split)
    if not os.path.isfile(problem.text_path(data_dir, "dev")):
        raise UserError(f"no dev text {problem.text_path(data_dir, 'dev')}; run "
                        f"t2t-lite-datagen --problem={problem.name} --data_dir={data_dir}")


def share_gpus():
    """Keeps this process off the GPUs' memory: TensorFlow reserves nearly all of it at its first
    op, and the rows' trainers and decoders (other processes) need it. Call before any op."""
    import tensorflow as tf

    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # already initialised (the table run as a library, after other work)
            pass


def run_table(options: TableOptions, echo=print):
    """Trains and evaluates the selected rows, skipping finished ones; writes the table.

    Returns table3.json's record."""
    rows = select_rows(options.rows)
    table = Table(options.out_dir, echo)
    scale, budget = resolve_identity(table, options)

    share_gpus()
    problem = ProblemSpec.of(options).build()
    _check_data(problem, options.data_dir)
    vocab_size = problem.tokenizer(options.data_dir).vocab_size
    # Every row's configs, gin read once per row (base included even when not selected: the
    # rows' changes are against it, and --train_minutes trains it first).
    everything = sorted(set(rows) | set((table.record or {}).get("rows", {})) | {"base"},
                        key=ROWS.index)
    plans = {row: plan_row(row, scale, options.gin_params, vocab_size) for row in everything}
    if budget is None:  # a new table without a budget flag
        budget = ({"train_minutes": DEFAULT_CPU_MINUTES} if scale == "cpu" else
                  {"train_steps": plans["base"].configs[1].train_steps})

    precision, precision_why = _table_precision(table, plans)
    plans = plan_rows(plans, precision)

    if table.record is None:
        table.record = _new_record(options, scale, budget, (precision, precision_why),
                                   vocab_size)
    os.makedirs(table.dir, exist_ok=True)
    for row in rows:
        table.record["rows"].setdefault(row, {"model_dir": table.row_path(row, "model"),
                                              "status": "not run"})
    table.save()
    dev_lines = write_eval_split(problem, options.data_dir, "dev", table.path(DEV_SOURCE),
                                 table.path(DEV_REFERENCE), limit=options.dev_sentences).lines
    table.record["dev_sentences_decoded"] = dev_lines
    minutes = budget.get("train_minutes")
    rows = _base_first(table, rows, minutes, echo)

    if table.record.get("steps") is None and table.result("base"):
        table.record["steps"] = table.result("base").steps  # killed before it was recorded
    runner = RowRunner(table, problem, options, echo)
    echo(f"table3: {options.problem} at scale {scale}, {len(rows)} row"
         f"{'s' if len(rows) > 1 else ''} selected; precision {precision} ({precision_why}); "
         f"{describe_machine(machine())}; out_dir {table.dir}", flush=True)
    start = time.monotonic()
    try:
        for index, row in enumerate(rows, 1):
            _run_one(table, runner, plans, rows, index, row, minutes, echo, start)
    except KeyboardInterrupt:
        raise UserError("interrupted; re-run the same command to resume (finished rows are "
                        "kept, the interrupted row resumes from its latest checkpoint)") from None
    finally:
        if table.record is not None and os.path.isdir(table.dir):
            _refresh_rows(table, plans)
            table.save()
    write_outputs(table, plans, echo)
    return table.record


def _table_precision(table, plans):
    """(precision, why) of the table: the record's, else chosen now from base's
    mixed_precision; one choice for every row: "auto" is decided here, once."""
    precision = table.record.get("precision") if table.record else None
    precision_why = table.record.get("precision_why") if table.record else None
    if precision is None:
        precision, precision_why = training_precision.choose(
            plans["base"].configs[1].mixed_precision)
    return precision, precision_why


def _new_record(options, scale, budget, precision, vocab_size):
    """table3.json's record for a new table, no row in it yet. precision: (precision, why)."""
    precision, precision_why = precision
    record = dict(table_identity(options, scale, budget), table="Vaswani et al. 2017, "
                  "Table 3 (variations on the Transformer)", steps=None,
                  precision=precision, precision_why=precision_why,
                  machine=machine(), vocab_size=vocab_size,
                  created=time.strftime("%Y-%m-%d %H:%M:%S"), rows={})
    if "train_steps" in budget:
        record["steps"] = budget["train_steps"]
    return record


def _base_first(table, rows, minutes, echo):
    """The rows to run: with --train_minutes (`minutes`), base's steps become everyone's, so
    base trains first, even unselected, unless it has finished (its record row is added)."""
    if minutes and "base" not in rows and not table.result("base"):
        echo("table3: --train_minutes trains base first: the steps it reaches are every row's "
             "step budget", flush=True)
        rows = ["base"] + rows
        table.record["rows"].setdefault("base", {"model_dir": table.row_path("base", "model"),
                                                 "status": "not run"})
    return rows


def _run_one(table, runner, plans, rows, index, row, minutes, echo, start):
    label = f"[{index}/{len(rows)}] {row}"
    if table.result(row):
        echo(f"table3: {label}: finished before, skipped ({table.row_path(row, RESULT)})",
             flush=True)
        return
    steps = table.record.get("steps")
    if steps is None and row != "base":
        if not minutes:
            raise RuntimeError("a table without steps must have a minutes budget")
        _fail(table, row, "not run: --train_minutes takes every row's step budget from base, "
              "which did not finish", echo)
        return
    previous = table.failure(row)
    if previous:
        echo(f"table3: {label}: failed before ({previous.get('reason')}); trying again",
             flush=True)
    eta = _eta(table, plans, rows[index - 1:], minutes)
    done = sum(1 for r in rows if table.result(r))
    budget = (f"{steps} steps" if steps is not None else f"{minutes:g} minutes (its steps become "
              "every row's)")
    echo(f"table3: {label}: training {budget}, {describe_change(plans[row].varied)}, "
         f"{plans[row].params / 1e6:.1f}M parameters; {done} of {len(rows)} rows done, "
         f"elapsed {format_duration(time.monotonic() - start)}"
         + (f", table eta {format_duration(eta)}" if eta is not None else ""), flush=True)
    row_start = time.monotonic()
    os.makedirs(table.row_path(row), exist_ok=True)
    try:
        result = runner.run(row, plans[row], steps, minutes if row == "base" and steps is None
                            else None)
    except RowFailed as failure:
        _fail(table, row, str(failure), echo)
        return
    result.seconds.wall_this_run = round(time.monotonic() - row_start, 1)
    atomic.write_json(table.row_path(row, RESULT), result.to_json(), indent=2)
    if os.path.isfile(table.row_path(row, FAILURE)):
        os.remove(table.row_path(row, FAILURE))
    if table.record.get("steps") is None and row == "base":
        table.record["steps"] = result.steps
        echo(f"table3: base reached step {result.steps} in {minutes:g} minutes: every row "
             f"trains {result.steps} steps", flush=True)
    _refresh_rows(table, plans)
    table.save()
    eta = _eta(table, plans, rows[index:], minutes)
    echo(f"table3: {label}: done: dev perplexity {result.dev.perplexity:.2f}, BLEU "
         f"{result.bleu:.2f} (beam {BEAM_SIZE}, alpha {ALPHA}) at step {result.steps}; "
         f"trained {format_duration(result.seconds.train)}, evaluated "
         f"{format_duration(result.seconds.evaluate)}"
         + (f"; table eta {format_duration(eta)}" if eta is not None else ""), flush=True)


def _fail(table, row, reason, echo):
    os.makedirs(table.row_path(row), exist_ok=True)
    atomic.write_json(table.row_path(row, FAILURE),
                      {"row": row, "status": "failed", "reason": reason,
                       "time": time.strftime("%Y-%m-%d %H:%M:%S")}, indent=2)
    echo(f"table3: {row}: FAILED: {reason}", flush=True)


def _eta(table, plans, remaining, minutes):
    """Seconds the remaining rows should take: training at the FLOP rate measured on the
    finished rows (weighted by each row's size), plus their mean evaluation time; base under
    --train_minutes takes its minutes. None before anything is measured."""
    results = {r: table.result(r) for r in plans}  # each reads and rebuilds the row's file
    measured = [(results[r], plans[r]) for r in plans
                if results[r] and math.isfinite(results[r].seconds.train)]
    steps = table.record.get("steps")
    seconds = 0.0
    if measured:
        work = sum(res.steps * plan.cost for res, plan in measured)
        rate = sum(res.seconds.train for res, plan in measured) / max(work, 1e-9)
        evaluate = sum(res.seconds.evaluate for res, _ in measured) / len(measured)
    for row in remaining:
        if table.result(row):
            continue
        if row == "base" and steps is None:
            seconds += minutes * 60
        elif not measured or steps is None:
            return None
        else:
            seconds += steps * plans[row].cost * rate + evaluate
    return seconds


def _refresh_rows(table, plans):
    """Each row's status, model_dir, evaluation and seconds into the table's record."""
    for row in table.record.get("rows", {}):
        entry = {"model_dir": table.row_path(row, "model")}
        result, failure = table.result(row), table.failure(row)
        if result:
            evaluation = result.to_json()
            entry.update(status="done", evaluation=evaluation, seconds=evaluation["seconds"])
        elif failure:
            entry.update(status="failed", reason=failure.get("reason"))
        else:
            entry.update(status="not run")
        table.record["rows"][row] = entry
