"""Stopping a run whose loss or weights are no longer finite, with the last good checkpoint kept."""
import math

import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.training.hooks import Hook
from t2t_lite.training.loss import token_statistics

ADVICE = "Try a lower learning rate or more warmup."


class DivergenceGuard(Hook):
    """After each step: is the step's loss finite? Before each save (`verify`): are the weights,
    and the loss they give on a fixed probe batch, finite?

    A step's loss is computed before its update, so a finite loss can still be followed by an
    update that ruins the weights; the probe's forward pass (once per checkpoint) catches that.
    Either way the run ends with a UserError before the suspect weights are saved.

    Args:
      model: the model being trained.
      probe_batch: a fixed dev batch.
      label_smoothing: the run's, for the probe's loss.
      keeper: the CheckpointKeeper, to name the checkpoint that was kept.
      loss_scaling: float16 loss scaling is on: a step whose gradient overflows is expected
        (the optimizer skips it and lowers the scale), only a non-finite loss is divergence.
    """

    def __init__(self, model, probe_batch, label_smoothing, keeper, loss_scaling=False):
        self.model, self.probe = model, probe_batch
        self.label_smoothing = label_smoothing
        self.keeper, self.loss_scaling = keeper, loss_scaling
        self._check = tf.function(self._finite, autograph=False)

    def after_step(self, state):
        loss = float(state.stats["loss"])
        grad_ok = math.isfinite(float(state.stats["grad_norm"]))
        if not math.isfinite(loss) or not (grad_ok or self.loss_scaling):
            # The in-memory weights are now suspect; the last good checkpoint stays the latest.
            raise UserError(f"training diverged at step {state.step}: loss is {loss}; "
                            f"{self._kept_checkpoint()}. {ADVICE}")

    def verify(self, step):
        if not bool(self._check()):
            raise UserError(
                f"training diverged at step {step}: the weights no longer give a finite loss; "
                f"{self._kept_checkpoint()}. {ADVICE}")

    def _finite(self):
        weights_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v))
                                    for v in self.model.trainable_variables])
        logits = self.model(self.probe, training=False)
        loss = token_statistics(logits, self.probe["targets"], self.label_smoothing)["loss"]
        return tf.logical_and(weights_ok, tf.math.is_finite(loss))

    def _kept_checkpoint(self):
        latest = self.keeper.manager.latest_checkpoint
        if latest:
            return f"the last good checkpoint ({latest}) was kept"
        return "no checkpoint was written (the run diverged before its first save)"
