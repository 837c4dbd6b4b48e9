"""Reading a model_dir's checkpoints: listing, resolving which to load, restoring.

TensorFlow writes a checkpoint's data files first and updates the `checkpoint` state file last
with an atomic rename, so a kill at any moment leaves the previous checkpoint as the latest one
that loads. Deleting old checkpoints is the other way round: TensorFlow lists the new checkpoint,
deletes the oldest files (`.index` first), then lists again; a kill in between leaves the list
naming old checkpoints whose files are gone, never the newest. Such an entry (no `.index`, older
than the newest) is skipped with a warning wherever listed checkpoints are loaded. A checkpoint
with files missing or damaged otherwise, the newest included, is the user's to look at: loading
it is a UserError naming the file, never a traceback, and never a quiet fall back to an older one
that would then be trained over it.
"""
import os

import tensorflow as tf
from absl import logging

from t2t_lite.errors import UserError


def listed_paths(directory):
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
    return _present(listed_paths(model_dir))


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
        averaged = (listed_paths(os.path.join(model_dir, "averaged")) or [None])[-1]
        latest = (listed_paths(model_dir) or [None])[-1]
        if averaged and (not latest or step_number(averaged) >= step_number(latest)):
            chosen = averaged
        elif latest:
            chosen = latest
        else:
            raise UserError(f"no checkpoint in {model_dir}; train first (t2t-lite-trainer)")
    missing = missing_files(chosen)
    if missing:
        raise UserError(f"checkpoint {chosen} is incomplete: {missing[0]} is missing")
    return chosen


def step_number(path):
    """The step a checkpoint path is numbered with (`.../ckpt-1600` -> 1600), -1 if none."""
    try:
        return int(path.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1
