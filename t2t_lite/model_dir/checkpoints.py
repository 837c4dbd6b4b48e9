"""A model_dir's checkpoints: saving on a timer or step count, resolving, restoring, averaging.

Checkpoints hold `model` (and `optimizer` while training). TensorFlow writes the data files first
and updates the `checkpoint` state file last with an atomic rename, so a kill at any moment leaves
the previous checkpoint as the latest one that loads. Deleting old checkpoints is the other way
round: TensorFlow lists the new checkpoint, deletes the oldest files (`.index` first), then lists
again; a kill in between leaves the list naming old checkpoints whose files are gone, never the
newest. Such an entry (no `.index`, older than the newest) is skipped with a warning wherever
listed checkpoints are loaded. A checkpoint with files missing or damaged otherwise, the newest
included, is the user's to look at: loading it is a UserError naming the file, never a traceback,
and never a quiet fall back to an older one that would then be trained over it.
"""
import os
import time

import numpy as np
import tensorflow as tf
from absl import logging

from t2t_lite.errors import UserError


class CheckpointKeeper:
    """Saves every `minutes` and/or every `steps`, keeping the newest `keep`."""

    def __init__(self, checkpoint, directory, keep, minutes=0.0, steps=0):
        self.manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
        self.minutes, self.steps = minutes, steps
        self._last_time = time.monotonic()
        self._last_step = None

    def restore_latest(self):
        """Restores the newest listed checkpoint; returns its path (None when nothing is listed).
        A damaged or missing newest checkpoint is a UserError, not a fallback: the user decides
        whether to lose it."""
        listed = _listed(self.manager.directory)
        if not listed:
            return None
        path = listed[-1]
        try:
            restore(self.manager.checkpoint, path)
        except UserError as error:
            state = os.path.join(self.manager.directory, "checkpoint")
            raise UserError(f"cannot resume: {error}. Put the file back; or, to resume from an "
                            f"older checkpoint, delete {os.path.basename(path)}'s lines from "
                            f"{state} and name that one in its model_checkpoint_path") from None
        return path

    def due(self, step):
        if self.steps and step % self.steps == 0:
            return True
        return bool(self.minutes) and time.monotonic() - self._last_time >= self.minutes * 60

    def save(self, step):
        if step == self._last_step:
            return self.manager.latest_checkpoint
        path = self.manager.save(checkpoint_number=step)
        self._last_time, self._last_step = time.monotonic(), step
        return path


def _listed(directory):
    """Checkpoint paths the state file lists, oldest first, the latest included."""
    state = tf.train.get_checkpoint_state(directory)
    if not state:
        return []
    paths = list(state.all_model_checkpoint_paths)
    if state.model_checkpoint_path and state.model_checkpoint_path not in paths:
        paths.append(state.model_checkpoint_path)
    return paths


def _present(paths):
    """`paths` less the older ones whose `.index` is gone (an interrupted clean-up, see the module
    doc), each with a warning. The newest stays whatever its state: restoring it names what is
    missing."""
    kept = []
    for path in paths[:-1]:
        if tf.io.gfile.exists(path + ".index"):
            kept.append(path)
        else:
            logging.warning("skipping checkpoint %s: it is listed but its files are gone (an "
                            "interrupted clean-up)", path)
    return kept + paths[-1:]


def missing_files(path):
    """The files checkpoint `path` needs that do not exist (`.index`, then data shards)."""
    if not tf.io.gfile.exists(path + ".index"):
        return [path + ".index"]
    directory, base = os.path.split(path)
    prefix = base + ".data-"
    shards = [name for name in tf.io.gfile.listdir(directory or ".") if name.startswith(prefix)]
    if not shards:
        return [path + ".data-00000-of-00001"]
    count = shards[0].rsplit("-of-", 1)[-1]
    if not count.isdigit():
        return []  # not a name TensorFlow writes: let the restore judge it
    expected = [f"{prefix}{i:05d}-of-{int(count):05d}" for i in range(int(count))]
    return [os.path.join(directory, name) for name in expected if name not in shards]


def damaged_file(path):
    """Which file of an unreadable checkpoint is at fault, or None if every tensor reads."""
    try:
        reader = tf.train.load_checkpoint(path)
    except (tf.errors.OpError, IndexError, ValueError):
        return path + ".index"
    try:
        for name in reader.get_variable_to_shape_map():
            reader.get_tensor(name)
    except (tf.errors.OpError, IndexError, ValueError):
        directory, base = os.path.split(path)
        shards = sorted(n for n in tf.io.gfile.listdir(directory or ".")
                        if n.startswith(base + ".data-"))
        return " / ".join(os.path.join(directory, n) for n in shards) or path + ".data-*"
    return None


def restore(checkpoint, path, partial=False):
    """checkpoint.restore(path), checked; missing or damaged files become a UserError naming the
    file, and a checkpoint of some other model one saying so."""
    missing = missing_files(path)
    if missing:
        raise UserError(f"checkpoint {path} is incomplete: {missing[0]} is missing")
    try:
        status = checkpoint.restore(path)
        if partial:
            status = status.expect_partial()
        status.assert_existing_objects_matched()
    except (tf.errors.OpError, IndexError, ValueError, AssertionError) as error:
        detail = " ".join(str(error).split())[:300]
        damaged = damaged_file(path)
        if damaged:
            raise UserError(f"cannot read checkpoint {path}: {damaged} is damaged or truncated "
                            f"({detail})") from None
        raise UserError(f"checkpoint {path} does not fit this model ({detail})") from None


def checkpoint_paths(model_dir):
    """The checkpoints the state file lists, oldest first, less older ones whose files are gone
    (the newest is kept: loading it says what is missing)."""
    return _present(_listed(model_dir))


def resolve_checkpoint(model_dir, checkpoint_path=None):
    """The checkpoint to load: an explicit path, the averaged one if present, else the latest.

    The chosen checkpoint must have all its files (UserError naming the missing one)."""
    if checkpoint_path:
        if not tf.io.gfile.exists(checkpoint_path + ".index"):
            raise UserError(f"no checkpoint at {checkpoint_path} (no {checkpoint_path}.index)")
        chosen = checkpoint_path
    else:
        # Read the lists directly: tf.train.latest_checkpoint returns None for a listed
        # checkpoint whose files are gone, which would read as "never trained".
        averaged = (_listed(os.path.join(model_dir, "averaged")) or [None])[-1]
        latest = (_listed(model_dir) or [None])[-1]
        if averaged and (not latest or _number(averaged) >= _number(latest)):
            chosen = averaged
        elif latest:
            chosen = latest
        else:
            raise UserError(f"no checkpoint in {model_dir}; train first (t2t-lite-trainer)")
    missing = missing_files(chosen)
    if missing:
        raise UserError(f"checkpoint {chosen} is incomplete: {missing[0]} is missing")
    return chosen


def _number(path):
    try:
        return int(path.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def checkpoints_to_average(model_dir, num_last, window="last"):
    """The checkpoints `average_checkpoints` should average, and why.

    window "last": the last `num_last` (the paper's recipe). "dev": the same while the run still
    improved into them; when the run's dev history (dev_history.py) has its best evaluation
    before them, the evaluated checkpoints at the best instead (dev_history.choose_window).
    """
    from t2t_lite.config import AVERAGE_WINDOWS
    from t2t_lite.model_dir import dev_history

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
    numbered = [(_number(path), path) for path in paths]
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
    """
    from t2t_lite import models
    from t2t_lite.model_dir import files

    chosen = paths or checkpoints_to_average(model_dir, num_last)[0]
    newest = checkpoint_paths(model_dir)[-1]

    from t2t_lite.model_dir import check

    model_config = files.load_configs(model_dir)[0]
    vocab_size = files.read_run_info(model_dir)["vocab_size"]
    for path in chosen:
        try:
            check.check_model_dir(model_config, vocab_size, path, files.configs_where(model_dir))
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
    output_dir = output_dir or os.path.join(model_dir, "averaged")
    manager = tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=1)
    return manager.save(checkpoint_number=max(_number(newest), 0)), chosen
