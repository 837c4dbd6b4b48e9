"""The trainer's checkpoint saver: on a timer and/or a step count, keeping the newest N.

Checkpoints hold `model` and `optimizer`. How a save or a clean-up survives a kill, and how the
newest listed checkpoint is restored, is checkpoint_reader's module doc.
"""
import contextlib
import os
import shutil
import time

import tensorflow as tf

from t2t_lite import process_end
from t2t_lite.errors import UserError
from t2t_lite.model_dir.checkpoint_reader import listed_paths, restore, step_number


class CheckpointKeeper:
    """Saves every `minutes` and/or every `steps`, keeping the newest `keep`."""

    def __init__(self, checkpoint, directory, keep, minutes=0.0, steps=0):
        self.manager = tf.train.CheckpointManager(checkpoint, directory, max_to_keep=keep)
        self.minutes, self.steps = minutes, steps
        self._last_time = time.monotonic()
        self._last_step = self._last_path = None  # the step and path last saved (or restored)

    def restore_latest(self):
        """Restores the newest listed checkpoint; returns its path (None when nothing is listed).
        A damaged or missing newest checkpoint is a UserError, not a fallback: the user decides
        whether to lose it."""
        listed = listed_paths(self.manager.directory)
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
        self.saved_as(path)
        return path

    def saved_as(self, path):
        """Records that the checkpoint at `path` (restored, maybe from another folder) holds the
        weights of its step: a save at that step writes nothing and returns `path`. So a run that
        trains no step past a restored checkpoint (a finished command re-run, a signal before
        the first step) leaves it as it was: rewritten, its files' times and training-time
        counter would change, and a paused decode of that checkpoint would refuse to resume."""
        self._last_step, self._last_path = step_number(path), path

    def due(self, step, within=0.0):
        """Whether a save is due at `step`, or on the timer within `within` seconds."""
        if self.steps and step % self.steps == 0:
            return True
        return (bool(self.minutes)
                and time.monotonic() + within - self._last_time >= self.minutes * 60)

    def save(self, step):
        if step == self._last_step:
            return self._last_path
        try:
            path = self.manager.save(checkpoint_number=step)
        except Exception as error:  # pylint: disable=broad-except  (re-raised unless a write)
            raise failed_save(error, self.manager.directory, step,
                              "run the same command again to resume from it") from None
        self._last_time, self._last_step, self._last_path = time.monotonic(), step, path
        return path


def failed_save(error, directory, step, then, name="ckpt"):
    """`error` itself unless it is a failed write (a full disk, a quota, EIO); then its
    process_end.WriteFailed, in one line: the checkpoint that could not be written, the one that
    is still the newest (TensorFlow lists a checkpoint only once all its files are written), and
    `then`, what to do after freeing space. What the failed save left (its `<name>-N_temp`
    folder) is removed."""
    if not process_end.write_failure_reason(error):
        return error
    shutil.rmtree(os.path.join(directory, f"{name}-{step}_temp"), ignore_errors=True)
    listed = listed_paths(directory)
    prefix = os.path.join(directory, f"{name}-{step}")
    if prefix not in listed and os.path.basename(prefix) not in map(os.path.basename, listed):
        for left in tf.io.gfile.glob(prefix + ".index") + tf.io.gfile.glob(prefix + ".data-*"):
            with contextlib.suppress(OSError):
                os.remove(left)  # half a merge: never listed, never to be read
    kept = (f"the newest checkpoint is still {listed[-1]}" if listed
            else "no checkpoint was written")
    return process_end.write_failed(error, prefix,
                                    f"{kept}; free some space and {then}")
