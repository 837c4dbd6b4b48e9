"""A finished row's result (RowResult): what row_runner measured, what run.py writes as the row's
result.json and table3.json's `evaluation`, what outputs.py reports. Its JSON is
dataclasses.asdict's, key for key the dict older versions wrote, so their files read back."""
import dataclasses
from typing import List, Optional

from t2t_lite import isolated


@dataclasses.dataclass
class DevMetrics:
    """A checkpoint over the whole dev split, as the trainer's evaluation computes them."""
    loss: float
    perplexity: float  # exp of the unsmoothed per-token NLL
    token_accuracy: float


@dataclasses.dataclass
class RowSeconds:
    train: float  # the trainer's, across resumes (the checkpoint's record; nan if it has none)
    evaluate: float  # perplexity + decode
    perplexity: float
    decode: float
    wall_this_run: Optional[float] = None  # the row's wall clock in the run that finished it


@dataclasses.dataclass
class RowResult:
    row: str
    status: str  # "done"
    set: str  # the hparams set, table3/<row>
    bindings: List[str]  # the scale's, then the user's: with the set, they give the configs
    model_dir: str
    checkpoint: str  # the last one, evaluated as it is
    steps: int  # the trainer's last step (its TrainResult)
    averaged: bool  # False: the paper's Table 3 evaluates without averaging
    columns: dict  # the paper's columns (paper.row_columns)
    varied: dict  # what the row sets apart from base
    params: int
    precision: str
    dev: DevMetrics
    bleu: float
    chrf: float
    bleu_signature: str
    bleu_report: str
    beam_size: int
    alpha: float
    translation: str  # the row's dev translation
    seconds: RowSeconds
    machine: dict  # machine.machine()
    finished: str  # local time, %Y-%m-%d %H:%M:%S

    def to_json(self):
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, values):
        """The result a result.json (or table3.json's `evaluation`) holds; None for one that is
        not a row's result (damaged, or of an unknown layout): the row runs again."""
        try:
            result = isolated.rebuild(cls, values)
        except (TypeError, ValueError, AttributeError):
            return None
        return result if result.status == "done" else None
