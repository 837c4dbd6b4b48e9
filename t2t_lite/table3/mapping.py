"""The scales a row trains at: `--scale=cpu` maps each row's set to a CPU size by rules
(cpu_dimensions, cpu_bindings), `--scale=paper` keeps the set; and what a row varies against
base (varied_fields, describe_change), with the CPU mapping as the markdown docs/table3.md shows."""
import dataclasses
import functools

from t2t_lite import hparams
from t2t_lite.config import MODEL_DIMENSIONS
from t2t_lite.errors import UserError
from t2t_lite.table3.paper import ROWS, set_name

SCALES = ("cpu", "paper")
DEFAULT_SCALE = "cpu"


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
# Column names of the paper's table for the config fields a row may vary.
COLUMNS = {"num_layers": "N", "d_model": "d_model", "d_ff": "d_ff", "num_heads": "h",
           "d_k": "d_k", "d_v": "d_v", "dropout": "P_drop", "label_smoothing": "eps_ls",
           "position_encoding": "positions"}


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


def load_row(row, gin_params=()):
    return hparams.load(set_name(row), list(gin_params))


@functools.lru_cache(maxsize=None)
def paper_configs(row):
    """The configs of the row's set as it is (the paper scale, no bindings): read once."""
    return load_row(row)


def cpu_bindings(row):
    """The gin bindings that put `row` at the CPU scale, applied after the row's own set: its
    sizes (cpu_dimensions of the row's and table3/base's set values) and CPU_TRAINING."""
    paper_base, paper_row = paper_configs("base")[0], paper_configs(row)[0]
    sizes = cpu_dimensions(paper_base, paper_row)
    return ([f"ModelConfig.{name} = {sizes[name]}" for name in MODEL_DIMENSIONS]
            + list(CPU_TRAINING))


def scale_bindings(row, scale):
    if scale == "paper":
        return []
    if scale == "cpu":
        return cpu_bindings(row)
    raise UserError(f"unknown --scale {scale!r}; choose one of {', '.join(SCALES)}")


def varied_fields(configs, base_configs):
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
    paper_base = paper_configs("base")
    cpu_base = load_row("base", cpu_bindings("base"))
    out = []
    for row in ROWS:
        paper = paper_configs(row)
        mapped = load_row(row, cpu_bindings(row))
        others = {k: v for k, v in varied_fields(paper, paper_base).items()
                  if k not in MODEL_DIMENSIONS}
        out.append((row, _dims(paper[0]), _dims(mapped[0]), others,
                    varied_fields(mapped, cpu_base)))
    return out


def mapping_markdown():
    """The CPU mapping as a markdown table (docs/table3.md holds this text; a test checks it)."""
    names = [COLUMNS[name] for name in MODEL_DIMENSIONS]
    lines = ["| row | paper: " + " | ".join(names) + " | cpu: " + " | ".join(names)
             + " | also varies (both scales) |",
             "|---" * (2 + 2 * len(MODEL_DIMENSIONS)) + "|"]
    for row, paper, mapped, others, _ in mapping_rows():
        also = ", ".join(f"{COLUMNS.get(k, k)} {v}" for k, v in others.items()
                         if k != "max_length") or ""
        lines.append(f"| `{row}` | " + " | ".join(str(paper[n]) for n in MODEL_DIMENSIONS)
                     + " | " + " | ".join(str(mapped[n]) for n in MODEL_DIMENSIONS)
                     + f" | {also} |")
    return "\n".join(lines)
