"""Checkpoints: saving on a timer or step count, restoring, loading a trained model, averaging.

Checkpoints hold `model` (and `optimizer` while training). TensorFlow writes the data files first
and updates the `checkpoint` state file last with an atomic rename, so a kill at any moment leaves
the previous checkpoint as the latest one that loads.
"""
import os
import time

import numpy as np
import tensorflow as tf

from t2t_lite.errors import UserError


class CheckpointKeeper:
    """Saves every `minutes` and/or every `steps`, keeping the newest `keep`."""

    def __init__(self, checkpoint, directory, keep, minutes=0.0, steps=0):
        self.manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
        self.minutes, self.steps = minutes, steps
        self._last_time = time.monotonic()
        self._last_step = None

    def restore_latest(self):
        path = self.manager.latest_checkpoint
        if path:
            self.manager.checkpoint.restore(path).assert_existing_objects_matched()
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


def checkpoint_paths(model_dir):
    """All checkpoints the state file lists, oldest first."""
    state = tf.train.get_checkpoint_state(model_dir)
    return list(state.all_model_checkpoint_paths) if state else []


def resolve_checkpoint(model_dir, checkpoint_path=None):
    """The checkpoint to load: an explicit path, the averaged one if present, else the latest."""
    if checkpoint_path:
        if not tf.io.gfile.exists(checkpoint_path + ".index"):
            raise UserError(f"no checkpoint at {checkpoint_path}")
        return checkpoint_path
    averaged = tf.train.latest_checkpoint(os.path.join(model_dir, "averaged"))
    latest = tf.train.latest_checkpoint(model_dir)
    if averaged and (not latest or _number(averaged) >= _number(latest)):
        return averaged
    if latest:
        return latest
    raise UserError(f"no checkpoint in {model_dir}; train first (t2t-lite-trainer)")


def _number(path):
    try:
        return int(path.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return -1


def load_model(model_dir, checkpoint_path=None, gin_params=()):
    """(model, (model_config, train_config, decode_config), tokenizer, checkpoint path)."""
    from t2t_lite.data import tokenizers
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training import model_dir as model_dir_lib

    configs = model_dir_lib.load_configs(model_dir, gin_params)
    info = model_dir_lib.read_run_info(model_dir)
    tokenizer = tokenizers.load_tokenizer(model_dir_lib.vocab_path(model_dir))
    model = Transformer(configs[0], info["vocab_size"])
    path = resolve_checkpoint(model_dir, checkpoint_path)
    tf.train.Checkpoint(model=model).restore(path).expect_partial().assert_existing_objects_matched()
    return model, configs, tokenizer, path


def average_checkpoints(model_dir, num_last, output_dir=None):
    """Averages the model weights of the last `num_last` checkpoints (paper: 5 base, 20 big).

    Writes a checkpoint with the same structure (`model/...`) to output_dir (default
    model_dir/averaged), numbered like the newest input, which the decoder and exporter prefer.
    Returns (written path, averaged paths).
    """
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training import model_dir as model_dir_lib

    if num_last < 1:
        raise UserError(f"--num_last must be >= 1, got {num_last}")
    paths = checkpoint_paths(model_dir)
    if not paths:
        raise UserError(f"no checkpoints in {model_dir}")
    chosen = paths[-num_last:]

    configs = model_dir_lib.load_configs(model_dir)
    info = model_dir_lib.read_run_info(model_dir)
    model = Transformer(configs[0], info["vocab_size"])
    checkpoint = tf.train.Checkpoint(model=model)
    sums = None
    for path in chosen:
        try:
            checkpoint.restore(path).expect_partial().assert_existing_objects_matched()
        except (ValueError, AssertionError, tf.errors.InvalidArgumentError) as error:
            # A checkpoint whose variables or shapes differ from the model_dir's model.
            raise UserError(f"cannot average {path}: it does not fit this model "
                            f"({' '.join(str(error).split())[:300]})") from None
        values = [np.asarray(w, dtype=np.float64) for w in model.weights]
        sums = values if sums is None else [a + b for a, b in zip(sums, values)]
    for weight, total in zip(model.weights, sums):
        weight.assign(tf.cast(total / len(chosen), weight.dtype))
    output_dir = output_dir or os.path.join(model_dir, "averaged")
    manager = tf.train.CheckpointManager(checkpoint, output_dir, max_to_keep=1)
    return manager.save(checkpoint_number=max(_number(chosen[-1]), 0)), chosen
