"""Table 3 of "Attention Is All You Need" (model variations) as one resumable command.

Every row of the table is an hparams set, `table3/<row>` (t2t_lite/hparams_sets/table3/). For
each selected row, `run_table` trains the row in its own model_dir with the real
`t2t-lite-trainer` (a subprocess: TensorFlow state never leaks from one row into the next, and a
row that crashes does not take the table with it), then evaluates it as the paper's Table 3 does
(section 6.2): the last checkpoint, no checkpoint averaging; dev perplexity per subword token and
dev BLEU of a beam-4, alpha-0.6 decode (`t2t-lite-decoder`). Every row gets the same data,
vocabulary, seed, precision and step budget. Everything goes under one folder:

    O/table3.json        what the table is (problem, scale, budget, data, precision, machine) and
                         every row's model_dir, evaluation and seconds
    O/table3.md, .csv    the table in the paper's layout, the paper's own numbers beside ours
    O/table3.png         each row's effect on dev BLEU and perplexity relative to base
    O/dev.src, dev.ref   the dev split (problem.text_path(data_dir, "dev")) as two files
    O/<row>/model/       the row's model_dir
    O/<row>/dev.translation, decode_summary.json, bleu.txt   the row's dev decode and its score
    O/<row>/result.json  the row's evaluation, written last: a row that has one is finished
    O/<row>/failure.json why the row failed (a re-run tries it again)

Re-running the same command skips finished rows and resumes a killed one (the trainer continues
from the row's latest checkpoint). An out_dir holding a table of another problem, scale, budget
or data is refused before anything is written.

`--scale=cpu` maps every row to a size a 2-core CPU trains in minutes, by rules applied to the
row's own set (`cpu_bindings`): the rows keep what they vary, in proportion to the CPU base.
`--scale=paper` trains the sets as they are.
"""
import csv
import dataclasses
import io
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import time
from typing import Optional, Sequence

from t2t_lite import atomic, cpu, hparams, registry, stderr_filter
from t2t_lite.errors import UserError
from t2t_lite.progress import format_duration

TABLE_JSON, TABLE_MD, TABLE_CSV, TABLE_PNG = "table3.json", "table3.md", "table3.csv", "table3.png"
RESULT, FAILURE = "result.json", "failure.json"
DEV_SOURCE, DEV_REFERENCE = "dev.src", "dev.ref"
SCALES = ("cpu", "paper")
DEFAULT_SCALE = "cpu"
# With neither --train_steps nor --train_minutes: the CPU scale trains base for this many minutes
# and every other row for the steps base reached; the paper scale trains the sets' own steps.
DEFAULT_CPU_MINUTES = 10.0
# Table 3's evaluation (section 6.2): beam search as in section 6.1, no checkpoint averaging.
BEAM_SIZE, ALPHA = 4, 0.6
GROUPS = ("base", "A", "B", "C", "D", "E")


@dataclasses.dataclass(frozen=True)
class PaperRow:
    """One row of the paper's Table 3 (arXiv 1706.03762v7): its set and the paper's numbers on
    newstest2013 after 100K steps (params None where the paper leaves the cell blank)."""
    name: str
    ppl: float
    bleu: float
    params: Optional[int] = None  # millions

    @property
    def group(self):
        return "base" if self.name == "base" else self.name[0]


PAPER = (
    PaperRow("base", 4.92, 25.8, 65),
    PaperRow("A_heads1_dk512", 5.29, 24.9),
    PaperRow("A_heads4_dk128", 5.00, 25.5),
    PaperRow("A_heads16_dk32", 4.91, 25.8),
    PaperRow("A_heads32_dk16", 5.01, 25.4),
    PaperRow("B_dk16", 5.16, 25.1, 58),
    PaperRow("B_dk32", 5.01, 25.4, 60),
    PaperRow("C_layers2", 6.11, 23.7, 36),
    PaperRow("C_layers4", 5.19, 25.3, 50),
    PaperRow("C_layers8", 4.88, 25.5, 80),
    PaperRow("C_dmodel256_dk32", 5.75, 24.5, 28),
    PaperRow("C_dmodel1024_dk128", 4.66, 26.0, 168),
    PaperRow("C_dff1024", 5.12, 25.4, 53),
    PaperRow("C_dff4096", 4.75, 26.2, 90),
    PaperRow("D_dropout0", 5.77, 24.6),
    PaperRow("D_dropout02", 4.95, 25.5),
    PaperRow("D_smoothing0", 4.67, 25.3),
    PaperRow("D_smoothing02", 5.47, 25.7),
    PaperRow("E_learned_positions", 4.92, 25.7),
)
PAPER_STEPS = 100_000
ROWS = tuple(row.name for row in PAPER)
PAPER_BY_ROW = {row.name: row for row in PAPER}
GROUP_LABELS = {"E": "positional embedding instead of sinusoids"}

# ---- the CPU scale ------------------------------------------------------------------------------

# The CPU base: the `small` set's dimensions (d_k = d_v = d_model / h, as in the paper's base).
CPU_BASE = {"num_layers": 3, "d_model": 256, "d_ff": 1024, "num_heads": 4, "d_k": 64, "d_v": 64}
# Training at the CPU scale, the same for every row (nothing a row varies):
#  - 4,096-token batches: what 2 cores turn over in about a second (the `small` set's);
#  - precision "auto": bfloat16 where the CPU has bf16 units and a probe finds it faster, decided
#    once for the whole table (every row then trains in that precision);
#  - the budget planner's schedule (training/budget.py) over exactly the table's steps: warmup
#    over a third of them, held, linear decay to 0 over the last 40% (`small_cpu`'s measured
#    shape), so every row ends annealed. The peak is the paper's formula at the set's warmup
#    (4000): d_model^-0.5 * 4000^-0.5, 9.9e-4 at d_model 256, the best measured post-norm peak
#    for this size (docs/results.md), and it keeps the paper's dependence on the row's d_model;
#  - a checkpoint every 2 minutes: a killed row loses little.
CPU_TRAINING = (
    "TrainConfig.batch_tokens = 4096",
    "TrainConfig.max_tokens_per_replica = 4096",
    'TrainConfig.mixed_precision = "auto"',
    "TrainConfig.budget_schedule = True",
    "TrainConfig.budget_warmup_fraction = 0.33",
    "TrainConfig.budget_decay_fraction = 0.4",
    "TrainConfig.checkpoint_minutes = 2.0",
)
DIMENSIONS = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v")
# Column names of the paper's table for the config fields a row may vary.
COLUMNS = {"num_layers": "N", "d_model": "d_model", "d_ff": "d_ff", "num_heads": "h",
           "d_k": "d_k", "d_v": "d_v", "dropout": "P_drop", "label_smoothing": "eps_ls",
           "position_encoding": "positions"}


def set_name(row):
    return f"table3/{row}"


def _dims(model_config):
    """The paper's size columns of a ModelConfig (d_k, d_v resolved)."""
    return {"num_layers": model_config.num_layers, "d_model": model_config.d_model,
            "d_ff": model_config.d_ff, "num_heads": model_config.num_heads,
            "d_k": model_config.key_dim, "d_v": model_config.value_dim}


def cpu_dimensions(paper_base, paper_row):
    """The CPU row's sizes from the paper row's and the paper base's (ModelConfigs), by rules:

    - N, d_model and d_ff are scaled by the CPU base's ratio to the paper base (1/2 each):
      the row's N 2, 4, 8 of 6 become 1, 2, 4 of 3; d_model 256, 1024 of 512 become 128, 512
      of 256; d_ff 1024, 4096 of 2048 become 512, 2048 of 1024;
    - h is scaled the same way (4/8), at least 1: the paper's 1, 4, 16, 32 heads become 1, 2, 8,
      16 (one head cannot be halved, so the paper's h=1 stays 1);
    - d_k and d_v follow the total key (value) width h * d_k: its ratio to the base's is kept,
      then divided by the row's h. So rows A keep h * d_k = d_model (256/1, 256/2, 256/8,
      256/16), rows B scale d_k by 16/64 and 32/64, and rows C's d_model scales d_k with it.
    """
    base, row = _dims(paper_base), _dims(paper_row)

    def scaled(name, at_least=1):
        return max(at_least, round(CPU_BASE[name] * row[name] / base[name]))

    d_model = scaled("d_model", at_least=2)
    d_model += d_model % 2  # sinusoids need an even width
    heads = scaled("num_heads")
    cpu_width = {name: CPU_BASE["num_heads"] * CPU_BASE[name] for name in ("d_k", "d_v")}
    width = {name: row["num_heads"] * row[name] / (base["num_heads"] * base[name])
             for name in ("d_k", "d_v")}
    return {"num_layers": scaled("num_layers"), "d_model": d_model, "d_ff": scaled("d_ff"),
            "num_heads": heads,
            "d_k": max(1, round(cpu_width["d_k"] * width["d_k"] / heads)),
            "d_v": max(1, round(cpu_width["d_v"] * width["d_v"] / heads))}


def _load(row, gin_params=()):
    return hparams.load(set_name(row), list(gin_params))


def cpu_bindings(row):
    """The gin bindings that put `row` at the CPU scale, applied after the row's own set: its
    sizes (cpu_dimensions of the row's and table3/base's set values) and CPU_TRAINING."""
    paper_base, paper_row = _load("base")[0], _load(row)[0]
    sizes = cpu_dimensions(paper_base, paper_row)
    return [f"ModelConfig.{name} = {sizes[name]}" for name in DIMENSIONS] + list(CPU_TRAINING)


def scale_bindings(row, scale):
    if scale == "paper":
        return []
    if scale == "cpu":
        return cpu_bindings(row)
    raise UserError(f"unknown --scale {scale!r}; choose one of {', '.join(SCALES)}")


def _varied(configs, base_configs):
    """{field: value} of the configs (model, train, decode) that differ from base's, with d_k and
    d_v resolved; ordered as the paper's columns first."""
    values = {}
    for config, base in zip(configs, base_configs):
        mine, theirs = dataclasses.asdict(config), dataclasses.asdict(base)
        if hasattr(config, "key_dim"):
            mine.update(d_k=config.key_dim, d_v=config.value_dim)
            theirs.update(d_k=base.key_dim, d_v=base.value_dim)
        values.update({k: v for k, v in mine.items() if theirs.get(k) != v})
    order = list(COLUMNS)
    return dict(sorted(values.items(), key=lambda kv: (order.index(kv[0]) if kv[0] in order
                                                       else len(order), kv[0])))


def describe_change(varied):
    """"h=1, d_k=256, d_v=256" for a row's varied fields ("base" when none)."""
    if not varied:
        return "base"
    parts = []
    for name, value in varied.items():
        if name == "position_encoding":
            parts.append(f"{value} positions")
        elif name in ("max_length",):
            continue
        else:
            parts.append(f"{COLUMNS.get(name, name)}={value}")
    return ", ".join(parts)


def mapping_rows():
    """[(row, paper sizes, cpu sizes, other varied fields)] for every row."""
    paper_base = _load("base")
    cpu_base = _load("base", cpu_bindings("base"))
    out = []
    for row in ROWS:
        paper = _load(row)
        mapped = _load(row, cpu_bindings(row))
        others = {k: v for k, v in _varied(paper, paper_base).items() if k not in DIMENSIONS}
        out.append((row, _dims(paper[0]), _dims(mapped[0]), others,
                    _varied(mapped, cpu_base)))
    return out


def mapping_markdown():
    """The CPU mapping as a markdown table (docs/table3.md holds this text; a test checks it)."""
    names = [COLUMNS[name] for name in DIMENSIONS]
    lines = ["| row | paper: " + " | ".join(names) + " | cpu: " + " | ".join(names)
             + " | also varies (both scales) |",
             "|---" * (2 + 2 * len(DIMENSIONS)) + "|"]
    for row, paper, mapped, others, _ in mapping_rows():
        also = ", ".join(f"{COLUMNS.get(k, k)} {v}" for k, v in others.items()
                         if k != "max_length") or ""
        lines.append(f"| `{row}` | " + " | ".join(str(paper[n]) for n in DIMENSIONS) + " | "
                     + " | ".join(str(mapped[n]) for n in DIMENSIONS) + f" | {also} |")
    return "\n".join(lines)


# ---- selecting rows -----------------------------------------------------------------------------

def select_rows(spec):
    """--rows (comma-separated set names under table3/, group letters A-E, "base" or "all";
    empty: all) -> row names in the paper's order. Unknown names are a UserError."""
    tokens = [t.strip() for t in (spec or "all").split(",") if t.strip()]
    chosen, unknown = set(), []
    for token in tokens:
        if token == "all":
            chosen.update(ROWS)
        elif token in ROWS:
            chosen.add(token)
        elif token.upper() in GROUPS[1:] and len(token) == 1:
            chosen.update(r for r in ROWS if PAPER_BY_ROW[r].group == token.upper())
        else:
            unknown.append(token)
    if unknown:
        raise UserError(f"unknown Table 3 row{'s' if len(unknown) > 1 else ''} "
                        f"{', '.join(map(repr, unknown))}; known: all, A, B, C, D, E, "
                        f"{', '.join(ROWS)}")
    if not chosen:
        raise UserError("--rows selects no row")
    return [r for r in ROWS if r in chosen]


# ---- the run ------------------------------------------------------------------------------------

@dataclasses.dataclass
class TableOptions:
    problem: str
    data_dir: str
    out_dir: str
    rows: Optional[str] = None  # --rows; None: all
    scale: Optional[str] = None  # None: the out_dir's table's, else DEFAULT_SCALE
    train_steps: Optional[int] = None
    train_minutes: Optional[float] = None
    gin_params: Sequence[str] = ()
    problem_params: Sequence[str] = ()
    problem_modules: Sequence[str] = ()
    dev_sentences: int = 0  # BLEU on the first N dev sentences (0: all)


class RowFailed(Exception):
    """A row that could not be trained or evaluated; its message is the table's reason."""


# What a table is: a re-run must match these (a budget or scale left out adopts the recorded).
IDENTITY = ("problem", "problem_params", "scale", "data_dir", "gin_params", "budget",
            "dev_sentences")


def machine():
    """This machine, as the table reports it: CPU model, cores, the flags that decide speed and
    precision, GPUs (names only when TensorFlow is loaded), Python and TensorFlow versions."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), "")
    except OSError:
        pass
    flags = cpu.cpu_flags()
    gpus = []
    if "tensorflow" in sys.modules:
        import tensorflow as tf

        gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
        tf_version = tf.__version__
    else:
        tf_version = None
    return {"cpu": model or platform.processor() or platform.machine(),
            "cores": cpu.available_cores(),
            "cpu_flags": sorted(f for f in flags if f in ("avx2", "avx512f", "avx512_bf16",
                                                           "amx_bf16", "amx_tile")),
            "gpus": gpus, "python": platform.python_version(), "tensorflow": tf_version}


def describe_machine(m):
    text = f"{m.get('cpu') or 'unknown CPU'}, {m.get('cores')} cores"
    flags = m.get("cpu_flags") or []
    text += f" ({' '.join(flags)})" if flags else " (no AVX2/AVX-512/AMX flags)"
    if m.get("gpus"):
        text += f", {len(m['gpus'])} GPU{'s' if len(m['gpus']) > 1 else ''}"
    return text


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
        return _read_json(self.row_path(row, RESULT))

    def failure(self, row):
        return _read_json(self.row_path(row, FAILURE))

    def save(self):
        self.record["updated"] = time.strftime("%Y-%m-%d %H:%M:%S")
        atomic.write_json(self.path(TABLE_JSON), self.record, indent=2)


def _read_json(path):
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None  # a damaged record counts as absent: the row runs (resumes) again


def _identity(options, scale, budget):
    return {"problem": options.problem, "problem_params": list(options.problem_params),
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


def _resolve_identity(table, options):
    """(scale, budget) of this run; a table already in out_dir must be the same table."""
    if options.scale is not None and options.scale not in SCALES:
        raise UserError(f"unknown --scale {options.scale!r}; choose one of {', '.join(SCALES)}")
    budget = _check_budget(options)
    recorded = table.record
    if recorded is None:
        return options.scale or DEFAULT_SCALE, budget
    scale = options.scale or recorded.get("scale")
    budget = budget or recorded.get("budget")
    mine = _identity(options, scale, budget)
    for key in IDENTITY:
        if recorded.get(key) != mine[key]:
            raise UserError(
                f"{table.dir} holds a Table 3 of another run ({key} {recorded.get(key)!r} there, "
                f"{mine[key]!r} here: problem {recorded.get('problem')!r}, scale "
                f"{recorded.get('scale')!r}); re-run with its flags to resume it, or use another "
                "--out_dir")
    return scale, budget


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


def _write_dev_split(table, problem, data_dir, sentences):
    pairs = problem.eval_text_pairs(data_dir, "dev")
    if sentences:
        pairs = pairs[:sentences]
    if not pairs:
        raise UserError(f"the dev split of {problem.name} in {data_dir} is empty")
    for name, column in ((DEV_SOURCE, 0), (DEV_REFERENCE, 1)):
        text = "".join((pair[column] if len(pair) > column else "") + "\n" for pair in pairs)
        path = table.path(name)
        if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
            atomic.write_text(path, text)
    return len(pairs)


@dataclasses.dataclass
class RowPlan:
    """What one row trains: its set, bindings, effective configs, size and cost."""
    row: str
    bindings: list
    configs: tuple
    varied: dict
    params: int
    cost: float  # training FLOPs of one 25-by-25-token sentence pair: the ETA's weights


def _plan(row, scale, gin_params, precision, vocab_size, base_configs=None):
    """The row's bindings (its scale's, the user's, the table's precision) and what they give."""
    from t2t_lite.models.params import analytic_parameter_count
    from t2t_lite.training.flops import training_flops

    bindings = scale_bindings(row, scale) + list(gin_params)
    configs = _load(row, bindings)
    if configs[1].mixed_precision != precision:  # "auto": decided once, for every row
        bindings.append(f'TrainConfig.mixed_precision = "{precision}"')
        configs = _load(row, bindings)
    return RowPlan(row, bindings, configs, _varied(configs, base_configs or configs),
                   analytic_parameter_count(configs[0], vocab_size),
                   training_flops(configs[0], vocab_size, 25, 25))


def share_gpus():
    """Keeps this process off the GPUs' memory: TensorFlow reserves nearly all of it at its first
    op, and the rows' trainers and decoders (other processes) need it. Call before any op."""
    import tensorflow as tf

    for gpu in tf.config.list_physical_devices("GPU"):
        try:
            tf.config.experimental.set_memory_growth(gpu, True)
        except RuntimeError:  # already initialised (the table run as a library, after other work)
            pass


def _precision(train_config):
    """(the Keras policy every row trains in, why): the set's, or "auto" decided once here."""
    if train_config.mixed_precision != "auto":
        return train_config.mixed_precision, "set by the hparams set / --gin_param"
    import tensorflow as tf

    from t2t_lite.training import precision as precision_lib

    has_gpu = bool(tf.config.list_logical_devices("GPU"))
    return precision_lib.choose("auto", has_gpu=has_gpu)


def run_table(options: TableOptions, echo=print):
    """Trains and evaluates the selected rows, skipping finished ones; writes the table.

    Returns table3.json's record."""
    rows = select_rows(options.rows)
    table = Table(options.out_dir, echo)
    scale, budget = _resolve_identity(table, options)

    share_gpus()
    for module in options.problem_modules:
        registry.import_problem_module(module)
    registry.list_problems()  # problem configurables exist before gin reads --gin_param
    problem = registry.problem(options.problem, **registry.parse_params(options.problem_params))
    _check_data(problem, options.data_dir)
    vocab_size = problem.tokenizer(options.data_dir).vocab_size
    if budget is None:  # a new table without a budget flag
        budget = ({"train_minutes": DEFAULT_CPU_MINUTES} if scale == "cpu" else
                  {"train_steps": _load("base", list(options.gin_params))[1].train_steps})

    precision = table.record.get("precision") if table.record else None
    precision_why = table.record.get("precision_why") if table.record else None
    everything = sorted(set(rows) | set((table.record or {}).get("rows", {})), key=ROWS.index)
    if precision is None:
        precision, precision_why = _precision(
            _load("base", scale_bindings("base", scale) + list(options.gin_params))[1])
    base_configs = _plan("base", scale, options.gin_params, precision, vocab_size).configs
    plans = {row: _plan(row, scale, options.gin_params, precision, vocab_size, base_configs)
             for row in everything}

    if table.record is None:
        table.record = dict(_identity(options, scale, budget), table="Vaswani et al. 2017, "
                            "Table 3 (variations on the Transformer)", steps=None,
                            precision=precision, precision_why=precision_why,
                            machine=machine(), vocab_size=vocab_size,
                            created=time.strftime("%Y-%m-%d %H:%M:%S"), rows={})
        if "train_steps" in budget:
            table.record["steps"] = budget["train_steps"]
    os.makedirs(table.dir, exist_ok=True)
    for row in rows:
        table.record["rows"].setdefault(row, {"model_dir": table.row_path(row, "model"),
                                              "status": "not run"})
    table.save()
    dev_lines = _write_dev_split(table, problem, options.data_dir, options.dev_sentences)
    table.record["dev_sentences_decoded"] = dev_lines
    minutes = budget.get("train_minutes")
    # With --train_minutes, base's steps become everyone's: it trains first, even unselected.
    if minutes and "base" not in rows and not table.result("base"):
        echo("table3: --train_minutes trains base first: the steps it reaches are every row's "
             "step budget", flush=True)
        rows = ["base"] + rows
        table.record["rows"].setdefault("base", {"model_dir": table.row_path("base", "model"),
                                                 "status": "not run"})
        if "base" not in plans:
            plans["base"] = _plan("base", scale, options.gin_params, precision, vocab_size,
                                  base_configs)

    if table.record.get("steps") is None and table.result("base"):
        table.record["steps"] = table.result("base")["steps"]  # killed before it was recorded
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
    result["seconds"]["wall_this_run"] = round(time.monotonic() - row_start, 1)
    atomic.write_json(table.row_path(row, RESULT), result, indent=2)
    if os.path.isfile(table.row_path(row, FAILURE)):
        os.remove(table.row_path(row, FAILURE))
    if table.record.get("steps") is None and row == "base":
        table.record["steps"] = result["steps"]
        echo(f"table3: base reached step {result['steps']} in {minutes:g} minutes: every row "
             f"trains {result['steps']} steps", flush=True)
    _refresh_rows(table, plans)
    table.save()
    eta = _eta(table, plans, rows[index:], minutes)
    echo(f"table3: {label}: done: dev perplexity {result['dev']['perplexity']:.2f}, BLEU "
         f"{result['bleu']:.2f} (beam {BEAM_SIZE}, alpha {ALPHA}) at step {result['steps']}; "
         f"trained {format_duration(result['seconds']['train'])}, evaluated "
         f"{format_duration(result['seconds']['evaluate'])}"
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
    measured = [(table.result(r), plans[r]) for r in plans if table.result(r)
                and math.isfinite(table.result(r)["seconds"]["train"])]
    steps = table.record.get("steps")
    seconds = 0.0
    if measured:
        work = sum(res["steps"] * plan.cost for res, plan in measured)
        rate = sum(res["seconds"]["train"] for res, plan in measured) / max(work, 1e-9)
        evaluate = sum(res["seconds"]["evaluate"] for res, _ in measured) / len(measured)
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
            entry.update(status="done", evaluation=result, seconds=result.get("seconds"))
        elif failure:
            entry.update(status="failed", reason=failure.get("reason"))
        else:
            entry.update(status="not run")
        table.record["rows"][row] = entry


# ---- one row: train, evaluate -------------------------------------------------------------------

def run_tool(name, args, prefix, echo):
    """Runs `python -m t2t_lite.bin.<name> args`, its stdout and stderr streamed with `prefix`
    (TensorFlow's start-up noise dropped); returns (exit status, its last lines)."""
    echo(f"{prefix} $ t2t-lite-{name.replace('_', '-')} {shlex.join(args)}", flush=True)
    return run_streamed([sys.executable, "-m", f"t2t_lite.bin.{name}", *args], prefix, echo)


def run_streamed(command, prefix, echo):
    """Runs `command`, streaming its merged output with `prefix`; (exit status, last lines)."""
    tail = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, bufsize=1, errors="replace")
    try:
        for line in process.stdout:
            if stderr_filter.is_noise(line.encode("utf-8")):
                continue
            tail = (tail + [line.rstrip("\n")])[-40:]
            echo(f"{prefix} {line.rstrip()}", flush=True)
        process.wait()
    finally:
        if process.poll() is None:  # interrupted: the child must not outlive the table
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()
    return process.returncode, tail


def failure_reason(what, returncode, tail):
    """"<what>: <why>", why being the tool's last `error: ...` line (a divergence, a bad
    setting), else its exit status and last line."""
    for line in reversed(tail):
        if line.startswith("error: "):
            return f"{what}: {line[len('error: '):]}"
    if returncode < 0:
        how = f"killed by signal {-returncode}" + (" (out of memory?)" if returncode == -9
                                                    else "")
    else:
        how = f"exit {returncode}"
    last = next((line for line in reversed(tail) if line.strip()), "")
    return f"{what}: {how}" + (f": {last.strip()[:300]}" if last else "")


class RowRunner:
    """Trains one row with t2t-lite-trainer and evaluates its last checkpoint."""

    def __init__(self, table, problem, options, echo):
        self.table, self.problem, self.options, self.echo = table, problem, options, echo

    def train(self, row, plan, steps, minutes):
        prefix = f"[{row}]"
        args = [f"--problem={self.options.problem}",
                *[f"--problem_param={p}" for p in self.options.problem_params],
                *[f"--problem_module={m}" for m in self.options.problem_modules],
                f"--data_dir={os.path.abspath(self.options.data_dir)}",
                f"--model_dir={self.table.row_path(row, 'model')}",
                f"--hparams_set={set_name(row)}",
                *[f"--gin_param={g}" for g in plan.bindings],
                "--bleu_sentences=0"]  # the table decodes dev itself, with beam 4
        if minutes:
            args.append(f"--train_minutes={minutes:g}")
        else:
            args += [f"--train_steps={steps}", "--train_minutes=0"]
        returncode, tail = run_tool("trainer", args, prefix, self.echo)
        if returncode:
            raise RowFailed(failure_reason("t2t-lite-trainer", returncode, tail))

    def evaluate(self, row, plan):
        """The last checkpoint's dev perplexity (in process) and dev BLEU (t2t-lite-decoder,
        beam 4, alpha 0.6, no averaging)."""
        from t2t_lite.metrics.report import score_files
        from t2t_lite.model_dir import checkpoints

        model_dir = self.table.row_path(row, "model")
        listed = checkpoints.checkpoint_paths(model_dir) if os.path.isdir(model_dir) else []
        if not listed:
            raise RowFailed(f"no checkpoint in {model_dir} after training")
        checkpoint = listed[-1]
        start = time.monotonic()
        dev = self.perplexity(row, model_dir, checkpoint)
        if not math.isfinite(dev["loss"]):
            raise RowFailed(f"diverged: dev loss {dev['loss']} at {checkpoint}")
        perplexity_seconds = time.monotonic() - start
        translation = self.table.row_path(row, "dev.translation")
        summary = self.table.row_path(row, "decode_summary.json")
        start = time.monotonic()
        returncode, tail = run_tool("decoder", [
            f"--model_dir={model_dir}", f"--checkpoint_path={checkpoint}",
            f"--beam_size={BEAM_SIZE}", f"--alpha={ALPHA}",
            f"--decode_from_file={self.table.path(DEV_SOURCE)}",
            f"--decode_to_file={translation}", f"--summary_file={summary}", "--start_over"],
            f"[{row}]", self.echo)
        if returncode:
            raise RowFailed(failure_reason("t2t-lite-decoder", returncode, tail))
        decode_seconds = time.monotonic() - start
        try:
            report, scores = score_files(translation, self.table.path(DEV_REFERENCE))
        except UserError as error:
            raise RowFailed(f"scoring the dev translation: {error}") from None
        atomic.write_text(self.table.row_path(row, "bleu.txt"), report + "\n")
        return checkpoint, dev, scores, report, perplexity_seconds, decode_seconds

    def perplexity(self, row, model_dir, checkpoint):
        """dev_loss_metrics in a subprocess of its own, so that the model (and on a GPU, its
        memory) is gone before the next row trains."""
        path = self.table.row_path(row, "dev_perplexity.json")
        if os.path.isfile(path):
            os.remove(path)
        request = {"problem": self.options.problem,
                   "problem_params": list(self.options.problem_params),
                   "problem_modules": list(self.options.problem_modules),
                   "data_dir": os.path.abspath(self.options.data_dir), "model_dir": model_dir,
                   "checkpoint": checkpoint, "output": path}
        self.echo(f"[{row}] dev perplexity of {checkpoint} over the whole dev split", flush=True)
        returncode, tail = run_streamed([sys.executable, "-c", PERPLEXITY_WORKER,
                                         json.dumps(request)], f"[{row}]", self.echo)
        metrics = _read_json(path)
        if returncode or not isinstance(metrics, dict) or "loss" not in metrics:
            raise RowFailed(failure_reason("dev perplexity", returncode or 1, tail))
        return metrics

    def run(self, row, plan, steps, minutes):
        self.train(row, plan, steps, minutes)
        checkpoint, dev, scores, report, ppl_seconds, decode_seconds = self.evaluate(row, plan)
        step = checkpoint_step(checkpoint)
        model, train, decode = plan.configs
        return {
            "row": row, "status": "done", "set": set_name(row), "bindings": plan.bindings,
            "model_dir": self.table.row_path(row, "model"), "checkpoint": checkpoint,
            "steps": step, "averaged": False,
            "columns": row_columns(plan.configs), "varied": plan.varied,
            "params": plan.params, "precision": train.mixed_precision,
            "dev": {k: float(v) for k, v in dev.items()},
            "bleu": round(scores["bleu"], 4), "chrf": round(scores["chrf"], 4),
            "bleu_signature": scores["signature"], "bleu_report": report,
            "beam_size": BEAM_SIZE, "alpha": ALPHA,
            "translation": self.table.row_path(row, "dev.translation"),
            "seconds": {"train": round(trained_seconds(checkpoint), 1),
                        "evaluate": round(ppl_seconds + decode_seconds, 1),
                        "perplexity": round(ppl_seconds, 1), "decode": round(decode_seconds, 1)},
            "machine": machine(),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        }


def checkpoint_step(path):
    try:
        return int(path.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def trained_seconds(checkpoint):
    """The trainer's training seconds across resumes, as the checkpoint recorded them."""
    import tensorflow as tf

    try:
        return float(tf.train.load_variable(checkpoint,
                                            "trained_seconds/.ATTRIBUTES/VARIABLE_VALUE"))
    except (tf.errors.OpError, ValueError):
        return float("nan")


PERPLEXITY_WORKER = ("import sys; from t2t_lite import table3; "
                     "table3.perplexity_worker(sys.argv[1])")


def perplexity_worker(request):
    """The dev-perplexity subprocess: a JSON request in, dev_loss_metrics written to its
    "output" file; a UserError becomes one `error:` line and exit status 1."""
    try:
        request = json.loads(request)
        for module in request["problem_modules"]:
            registry.import_problem_module(module)
        problem = registry.problem(request["problem"],
                                   **registry.parse_params(request["problem_params"]))
        metrics = dev_loss_metrics(problem, request["data_dir"], request["model_dir"],
                                   request["checkpoint"])
    except UserError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    atomic.write_json(request["output"], {k: float(v) for k, v in metrics.items()}, indent=1)
    print(f"dev perplexity {metrics['perplexity']:.4f} (loss {metrics['loss']:.4f}, token "
          f"accuracy {metrics['token_accuracy']:.4f})", flush=True)


def dev_loss_metrics(problem, data_dir, model_dir, checkpoint):
    """Loss, perplexity (exp of the unsmoothed per-token NLL) and token accuracy of a checkpoint
    over the whole dev split, as the trainer's evaluation computes them."""
    from t2t_lite.model_dir import loaded
    from t2t_lite.training.evaluation import Evaluator

    run = loaded.load(model_dir, checkpoint)
    evaluator = Evaluator(run.model, problem, data_dir, run.tokenizer, *run.configs,
                          max_batches=2 ** 31 - 1, bleu_sentences=0)
    return evaluator.loss_metrics()


def row_columns(configs):
    model, train, _ = configs
    return {"N": model.num_layers, "d_model": model.d_model, "d_ff": model.d_ff,
            "h": model.num_heads, "d_k": model.key_dim, "d_v": model.value_dim,
            "P_drop": model.dropout, "eps_ls": train.label_smoothing,
            "positions": model.position_encoding}


# ---- the outputs ----------------------------------------------------------------------------------

COLUMN_ORDER = ("N", "d_model", "d_ff", "h", "d_k", "d_v", "P_drop", "eps_ls")


def table_rows(table, plans):
    """One dict per row the table holds, in the paper's order: its columns, status, numbers and
    the paper's."""
    out = []
    for row in sorted(table.record.get("rows", {}), key=ROWS.index):
        plan = plans.get(row)
        result, failure = table.result(row), table.failure(row)
        paper = PAPER_BY_ROW[row]
        entry = {"group": paper.group, "row": row,
                 "columns": row_columns(plan.configs) if plan else (result or {}).get("columns"),
                 "status": "done" if result else "failed" if failure else "not run",
                 "reason": (failure or {}).get("reason") if not result else None,
                 "steps": (result or {}).get("steps"),
                 "ppl": (result or {}).get("dev", {}).get("perplexity"),
                 "bleu": (result or {}).get("bleu"), "chrf": (result or {}).get("chrf"),
                 "params": plan.params if plan else (result or {}).get("params"),
                 "train_seconds": ((result or {}).get("seconds") or {}).get("train"),
                 "evaluate_seconds": ((result or {}).get("seconds") or {}).get("evaluate"),
                 "paper_ppl": paper.ppl, "paper_bleu": paper.bleu, "paper_params": paper.params,
                 "model_dir": table.row_path(row, "model"),
                 "precision": (result or {}).get("precision"),
                 "machine": (result or {}).get("machine")}
        out.append(entry)
    return out


def _fmt(value, digits):
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return f"{value:.{digits}f}"


def render_markdown(record, entries, plotted=False):
    base = next((e for e in entries if e["row"] == "base"), None)
    base_columns = base["columns"] if base else None
    base_steps = base["steps"] if base else record.get("steps")
    budget = record.get("budget") or {}
    if "train_minutes" in budget:
        budget_text = (f"base trained {budget['train_minutes']:g} minutes and reached step "
                       f"{record.get('steps')}; every other row trains that many steps")
    else:
        budget_text = f"{record.get('steps')} steps per row"
    machines = []
    for e in entries:
        if e["machine"] and describe_machine(e["machine"]) not in machines:
            machines.append(describe_machine(e["machine"]))
    lines = [
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
    names = list(COLUMN_ORDER)
    header = (["", "row", *names, "steps", "PPL (dev)", "BLEU (dev)", "params ×10^6",
               "paper PPL", "paper BLEU", "paper params ×10^6", "time"])
    lines.append("| " + " | ".join(header) + " |")
    lines.append("|" + "---|" * len(header))
    seen_groups = set()
    notes = []
    for e in entries:
        group = e["group"]
        first = group not in seen_groups
        seen_groups.add(group)
        label = ("base" if group == "base" else f"({group})") if first else ""
        cells = []
        for name in names:
            value = (e["columns"] or {}).get(name)
            if base_columns is not None and e["row"] != "base" and value == base_columns.get(name):
                cells.append("")
            else:
                cells.append("" if value is None else str(value))
        row_label = f"`{e['row']}`"
        if (e["columns"] or {}).get("positions") == "learned":
            row_label += f" ({GROUP_LABELS['E']})"
        steps = e["steps"]
        steps_cell = ("" if steps is None or (e["row"] != "base" and steps == base_steps)
                      else f"{steps:,}")
        if e["status"] == "done":
            ppl, bleu = _fmt(e["ppl"], 2), _fmt(e["bleu"], 1)
        else:
            ppl, bleu = e["status"], ""
            if e["reason"]:
                notes.append(f"- `{e['row']}` failed: {e['reason']}")
        seconds = None
        if e["train_seconds"] is not None and e["evaluate_seconds"] is not None:
            seconds = e["train_seconds"] + e["evaluate_seconds"]
        lines.append("| " + " | ".join([
            label, row_label, *cells, steps_cell, ppl, bleu,
            _fmt(e["params"] / 1e6 if e["params"] else None, 1),
            _fmt(e["paper_ppl"], 2), _fmt(e["paper_bleu"], 1),
            "" if e["paper_params"] is None else str(e["paper_params"]),
            format_duration(seconds) if seconds is not None and math.isfinite(seconds) else "",
        ]) + " |")
    lines += ["", "Empty cells are identical to base, as in the paper. time: training (across "
              "resumes) plus evaluation.", ""]
    if notes:
        lines += ["Failed rows:", "", *notes, ""]
    if plotted:
        lines += [f"![each row's effect on dev BLEU and perplexity relative to base, beside the "
                  f"paper's]({TABLE_PNG})", ""]
    return "\n".join(lines)


CSV_FIELDS = ("group", "row", "status", "reason", *COLUMN_ORDER, "positions", "steps",
              "ppl_dev", "bleu_dev", "chrf_dev", "params_millions", "paper_ppl", "paper_bleu",
              "paper_params_millions", "train_seconds", "evaluate_seconds", "precision",
              "model_dir")


def render_csv(entries):
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for e in entries:
        columns = e["columns"] or {}
        writer.writerow({
            "group": e["group"], "row": e["row"], "status": e["status"],
            "reason": e["reason"] or "", **{n: columns.get(n, "") for n in COLUMN_ORDER},
            "positions": columns.get("positions", ""), "steps": e["steps"] or "",
            "ppl_dev": "" if e["ppl"] is None else f"{e['ppl']:.4f}",
            "bleu_dev": "" if e["bleu"] is None else f"{e['bleu']:.2f}",
            "chrf_dev": "" if e["chrf"] is None else f"{e['chrf']:.2f}",
            "params_millions": f"{e['params'] / 1e6:.2f}" if e["params"] else "",
            "paper_ppl": e["paper_ppl"], "paper_bleu": e["paper_bleu"],
            "paper_params_millions": e["paper_params"] or "",
            "train_seconds": "" if e["train_seconds"] is None else e["train_seconds"],
            "evaluate_seconds": "" if e["evaluate_seconds"] is None else e["evaluate_seconds"],
            "precision": e["precision"] or "", "model_dir": e["model_dir"]})
    return buffer.getvalue()


def plot(entries, path, plans):
    """Each finished row's change in dev BLEU and perplexity against base (bars), with the
    paper's change for the row (markers). Returns False when matplotlib or base is missing."""
    base = next((e for e in entries if e["row"] == "base" and e["status"] == "done"), None)
    others = [e for e in entries if e["row"] != "base" and e["status"] == "done"]
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
    labels = [f"({e['group']}) {describe_change(plans[e['row']].varied) if e['row'] in plans else e['row']}"
              for e in others]
    positions = list(range(len(others)))[::-1]
    figure = Figure(figsize=(11, 0.45 * len(others) + 1.8))
    for column, (key, title) in enumerate((("bleu", "BLEU (dev) - base"),
                                           ("ppl", "PPL (dev) - base"))):
        axes = figure.add_subplot(1, 2, column + 1)
        ours = [e[key] - base[key] for e in others]
        paper = [e[f"paper_{key}"] - base[f"paper_{key}"] for e in others]
        axes.barh(positions, ours, height=0.6, color=[colours[e["group"]] for e in others],
                  label="this run")
        axes.scatter(paper, positions, marker="x", color="black", zorder=3, label="paper")
        axes.axvline(0, color="grey", linewidth=0.8)
        axes.set_title(title)
        axes.set_yticks(positions)
        axes.set_yticklabels(labels if column == 0 else [""] * len(labels), fontsize=8)
        if column == 0:
            axes.legend(fontsize=8, loc="lower left")
    figure.suptitle(f"Table 3 relative to base (base: PPL {base['ppl']:.2f}, BLEU "
                    f"{base['bleu']:.1f}; paper: {base['paper_ppl']}, {base['paper_bleu']})",
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
    markdown = render_markdown(table.record, entries, plotted)
    atomic.write_text(table.path(TABLE_MD), markdown)
    table.save()
    echo("", flush=True)
    echo(markdown, flush=True)
    echo(f"table: {table.path(TABLE_MD)}, {table.path(TABLE_CSV)}, {table.path(TABLE_JSON)}"
         + (f", {table.path(TABLE_PNG)}" if plotted else " (no plot: needs matplotlib, base and "
            "another finished row)"), flush=True)
