"""The trainer's checkpoint saver: on a timer and/or a step count, keeping the newest N.

Checkpoints hold `model` and `optimizer`. How a save or a clean-up survives a kill, and how the
newest listed checkpoint is restored, is checkpoint_reader's module doc.
"""
import os
import time

import tensorflow as tf

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
        path = self.manager.save(checkpoint_number=step)
        self._last_time, self._last_step, self._last_path = time.monotonic(), step, path
        return path
