"""The out_dir of one table: its file names, its record (table3.json), the rows' result and
failure files, and what the table is (its identity), which a re-run must match."""
import json
import os
import time

from t2t_lite import atomic
from t2t_lite.errors import UserError
from t2t_lite.table3.mapping import DEFAULT_SCALE, SCALES

TABLE_JSON, TABLE_MD, TABLE_CSV, TABLE_PNG = "table3.json", "table3.md", "table3.csv", "table3.png"
RESULT, FAILURE = "result.json", "failure.json"
DEV_SOURCE, DEV_REFERENCE = "dev.src", "dev.ref"
DEV_TRANSLATION = "dev.translation"  # in each row's folder


# What a table is: a re-run must match these (a budget or scale left out adopts the recorded).
IDENTITY = ("problem", "problem_params", "scale", "data_dir", "gin_params", "budget",
            "dev_sentences")


class Table:
    """The out_dir of one table: its record (table3.json) and the rows' folders."""

    def __init__(self, out_dir, echo=print):
        self.dir = os.path.abspath(out_dir)
        self.echo = echo
        self.record = None
        path = self.path(TABLE_JSON)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    self.record = json.load(f)
            except (OSError, ValueError) as error:
                raise UserError(f"cannot read {path}: {' '.join(str(error).split())[:200]}; "
                                "use another --out_dir") from None
            if not isinstance(self.record, dict) or "problem" not in self.record:
                raise UserError(f"{path} is not a t2t-lite-table3 record; use another --out_dir")
        elif os.path.isdir(self.dir) and os.listdir(self.dir):
            raise UserError(f"--out_dir {self.dir} holds files but no {TABLE_JSON}: not a table "
                            "of t2t-lite-table3; use a new or empty folder")
        elif os.path.exists(self.dir) and not os.path.isdir(self.dir):
            raise UserError(f"--out_dir {self.dir} is a file; name a folder")

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def row_path(self, row, *parts):
        return os.path.join(self.dir, row, *parts)

    def result(self, row):
        """The row's RowResult, None until it is finished (or when its file is damaged)."""
        from t2t_lite.table3.result import RowResult

        values = read_json(self.row_path(row, RESULT))
        return None if values is None else RowResult.from_json(values)

    def failure(self, row):
        return read_json(self.row_path(row, FAILURE))

    def save(self):
        self.record["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
        atomic.write_json(self.path(TABLE_JSON), self.record, indent=2)


def read_json(path):
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None  # a damaged record counts as absent: the row runs (resumes) again


def table_identity(options, scale, budget):
    from t2t_lite import problems, registry  # noqa: F401  (problems registers the aliases)

    # An alias is the same problem: a table started under wmt14_ende resumes under its name.
    return {"problem": registry.canonical_name(options.problem),
            "problem_params": list(options.problem_params),
            "scale": scale, "data_dir": os.path.abspath(options.data_dir),
            "gin_params": list(options.gin_params), "budget": budget,
            "dev_sentences": int(options.dev_sentences)}


def _check_budget(options):
    if options.train_steps is not None and options.train_minutes is not None:
        raise UserError("give --train_steps or --train_minutes, not both")
    if options.train_steps is not None and options.train_steps < 1:
        raise UserError(f"--train_steps must be >= 1, got {options.train_steps}")
    if options.train_minutes is not None and not options.train_minutes > 0:
        raise UserError(f"--train_minutes must be > 0, got {options.train_minutes}")
    if options.dev_sentences < 0:
        raise UserError(f"--dev_sentences must be >= 0, got {options.dev_sentences}")
    if options.train_steps is not None:
        return {"train_steps": int(options.train_steps)}
    if options.train_minutes is not None:
        return {"train_minutes": float(options.train_minutes)}
    return None


def resolve_identity(table, options):
    """(scale, budget) of this run; a table already in out_dir must be the same table."""
    if options.scale is not None and options.scale not in SCALES:
        raise UserError(f"unknown --scale {options.scale!r}; choose one of {', '.join(SCALES)}")
    budget = _check_budget(options)
    recorded = table.record
    if recorded is None:
        return options.scale or DEFAULT_SCALE, budget
    scale = options.scale or recorded.get("scale")
    budget = budget or recorded.get("budget")
    mine = table_identity(options, scale, budget)
    for key in IDENTITY:
        if recorded.get(key) != mine[key]:
            raise UserError(
                f"{table.dir} holds a Table 3 of another run ({key} {recorded.get(key)!r} there, "
                f"{mine[key]!r} here: problem {recorded.get('problem')!r}, scale "
                f"{recorded.get('scale')!r}); re-run with its flags to resume it, or use another "
                "--out_dir")
    return scale, budget
