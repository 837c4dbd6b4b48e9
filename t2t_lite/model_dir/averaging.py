"""Averaging a model_dir's checkpoints: choosing which, and writing their mean as a checkpoint.

The paper averages the last 5 (base) or 20 (big) checkpoints; window "dev" lets the run's dev
history (dev_history.py) move the window back to the best evaluation.

    averaged = average(model_dir)      # the run's own TrainConfig.average_last and _window
    print(averaged.message)            # the line t2t-lite-avg-checkpoints prints
"""
import dataclasses
import json
import os
from typing import List

import numpy as np
import tensorflow as tf

from t2t_lite import models
from t2t_lite.config import AVERAGE_WINDOWS
from t2t_lite.errors import UserError
from t2t_lite.model_dir import dev_history, files, limits, outputs
from t2t_lite.model_dir.checkpoint_reader import checkpoint_paths, restore, step_number
from t2t_lite.model_dir.checkpoint_saver import failed_save


def checkpoints_to_average(model_dir, num_last, window="last"):
    """The checkpoints `average_checkpoints` should average, and why.

    window "last": the last `num_last` (the paper's recipe). "dev": the same while the run still
    improved into them; when the run's dev history (dev_history.py) has its best evaluation
    before them, the evaluated checkpoints at the best instead (dev_history.choose_window).
    """
    if num_last < 1:
        raise UserError(f"--num_last must be >= 1, got {num_last}")
    if window not in AVERAGE_WINDOWS:
        raise UserError(f"--window must be one of {', '.join(AVERAGE_WINDOWS)}, got "
                        f"{window!r}")
    paths = checkpoint_paths(model_dir)
    if not paths:
        raise UserError(f"no checkpoints in {model_dir}")
    if window == "last":
        chosen = paths[-num_last:]
        return chosen, f"the last {len(chosen)}"
    numbered = [(step_number(path), path) for path in paths]
    chosen, reason = dev_history.choose_window(numbered, dev_history.read(model_dir), num_last)
    return [path for _, path in chosen], reason


def average_checkpoints(model_dir, num_last, output_dir=None, paths=None):
    """Averages the model weights of the last `num_last` checkpoints (paper: 5 base, 20 big), or
    of `paths` (checkpoints_to_average's choice).

    Writes a checkpoint with the same structure (`model/...`) to output_dir (default
    model_dir/averaged), numbered like the newest checkpoint of model_dir, so that the decoder and
    exporter prefer it. Older listed checkpoints whose files are gone are skipped (with a
    warning); a newest one with files missing is a UserError. Fewer than `num_last` are averaged
    if fewer exist. Returns (written path, averaged paths).

    An output_dir that is the model_dir, its best/, another model_dir or a folder of checkpoints
    other than averages is refused before anything is read (outputs.check_average_output): the
    average's manager would delete the checkpoints there. The folder written records what it
    averaged (outputs.AVERAGE_RECORD), which marks it as an average for the next run.
    """
    output_dir = output_dir or os.path.join(model_dir, outputs.AVERAGED)
    outputs.check_average_output(output_dir, model_dir)
    chosen = paths or checkpoints_to_average(model_dir, num_last)[0]
    newest = checkpoint_paths(model_dir)[-1]

    model_config = files.load_configs(model_dir)[0]
    vocab_size = files.read_run_info(model_dir)["vocab_size"]
    for path in chosen:
        try:
            limits.check_model_dir(model_config, vocab_size, path, files.configs_where(model_dir))
        except UserError as error:
            raise UserError(f"cannot average: {error}") from None
    model = models.build(model_config, vocab_size)
    checkpoint = tf.train.Checkpoint(model=model)
    sums = None
    for path in chosen:
        try:
            restore(checkpoint, path, partial=True)
        except UserError as error:
            raise UserError(f"cannot average: {error}") from None
        values = [np.asarray(w, dtype=np.float64) for w in model.weights]
        sums = values if sums is None else [a + b for a, b in zip(sums, values)]
    for weight, total in zip(model.weights, sums):
        weight.assign(tf.cast(total / len(chosen), weight.dtype))
    number = max(step_number(newest), 0)
    record = os.path.join(output_dir, outputs.AVERAGE_RECORD)
    text = json.dumps({"model_dir": os.path.abspath(model_dir),
                       "checkpoints": [os.path.basename(path) for path in chosen]}, indent=1)
    try:
        os.makedirs(output_dir, exist_ok=True)
        if not os.path.exists(record):  # first: a save cut short leaves a folder marked as ours
            files.write_if_changed(record, text + "\n")
        manager = tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=1)
        path = manager.save(checkpoint_number=number)
    except Exception as error:  # pylint: disable=broad-except  (re-raised unless a write)
        raise failed_save(error, output_dir, number, "average again") from None
    files.write_if_changed(record, text + "\n")  # what the average written is the mean of
    return path, chosen


@dataclasses.dataclass
class Averaged:
    """What `average` wrote: the checkpoint, the checkpoints it is the mean of, and the line that
    says so (t2t-lite-avg-checkpoints prints it)."""
    path: str
    checkpoints: List[str]
    message: str


def average(model_dir, num_last=None, window=None, output_dir=None):
    """Averages a model_dir as t2t-lite-avg-checkpoints does: its last `num_last` checkpoints
    chosen by `window` ("last" or "dev"; both default to the run's TrainConfig.average_last and
    average_window), written to output_dir (default model_dir/averaged). Returns Averaged."""
    outputs.check_average_output(output_dir or os.path.join(model_dir, outputs.AVERAGED),
                                 model_dir)
    train_config = files.load_configs(model_dir)[1]
    num_last = train_config.average_last if num_last is None else num_last
    window = window or train_config.average_window
    chosen, reason = checkpoints_to_average(model_dir, num_last, window)
    path, averaged = average_checkpoints(model_dir, num_last, output_dir, paths=chosen)
    names = ", ".join(p.rsplit("/", 1)[-1] for p in averaged)
    if window == "last" and len(averaged) < num_last:  # not silently: the paper's needs N
        message = (f"averaged {len(averaged)} of the {num_last} checkpoints asked for: only "
                   f"{len(averaged)} in {model_dir} ({names}) into {path}")
    else:
        message = f"averaged {len(averaged)} checkpoints ({names}; {reason}) into {path}"
    return Averaged(path=path, checkpoints=list(averaged), message=message)
