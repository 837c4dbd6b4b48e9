"""Learning-rate schedules (paper section 5.3, and tensor2tensor's later variant)."""
import keras
from keras import ops

from t2t_lite.training.budget import BudgetSchedule
from t2t_lite.training.fused_adam import FusedAdam


@keras.saving.register_keras_serializable(package="t2t_lite")
class PaperSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """lr = scale * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), with step counted from 1.

    Linear warmup for `warmup_steps`, then decay with the inverse square root of the step.
    """

    def __init__(self, d_model, warmup_steps, scale=1.0):
        self.d_model, self.warmup_steps, self.scale = d_model, warmup_steps, scale

    def __call__(self, step):
        # Keras optimizers count iterations from 0; the paper's formula starts at step 1.
        step = ops.cast(step, "float32") + 1.0
        return (self.scale * self.d_model ** -0.5
                * ops.minimum(ops.rsqrt(step), step * self.warmup_steps ** -1.5))

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}


@keras.saving.register_keras_serializable(package="t2t_lite")
class T2TSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """tensor2tensor's "constant*linear_warmup*rsqrt_decay*rsqrt_hidden_size":
    lr = scale * d_model^-0.5 * min(step / warmup, 1) * max(step, warmup)^-0.5.
    """

    def __init__(self, d_model, warmup_steps, scale=1.0):
        self.d_model, self.warmup_steps, self.scale = d_model, warmup_steps, scale

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0
        warmup = float(self.warmup_steps)
        return (self.scale * self.d_model ** -0.5 * ops.minimum(step / warmup, 1.0)
                * ops.rsqrt(ops.maximum(step, warmup)))

    def get_config(self):
        return {"d_model": self.d_model, "warmup_steps": self.warmup_steps, "scale": self.scale}


def make_schedule(model_config, train_config, budget_variables=None):
    """The set's schedule; with `budget_variables` (warmup, total[, anchor step, anchor
    fraction]) the budgeted one, whose peak is the set's schedule at its own warmup_steps."""
    cls = {"paper": PaperSchedule, "t2t": T2TSchedule}[train_config.learning_rate_schedule]
    schedule = cls(model_config.d_model, train_config.warmup_steps,
                   train_config.learning_rate_scale)
    if budget_variables is None:
        return schedule
    warmup, total, *anchor = budget_variables
    return BudgetSchedule(peak_learning_rate(schedule, train_config), warmup, total,
                          train_config.budget_decay_fraction, *anchor)


def peak_learning_rate(schedule, train_config):
    return float(schedule(train_config.warmup_steps - 1))


def optimizer_with(schedule, train_config):
    """Adam with the paper's beta1=0.9, beta2=0.98, eps=1e-9 (from the set), following
    `schedule`; a caller that keeps the schedule can tell the learning rate of any step."""
    optimizer = FusedAdam(learning_rate=schedule, beta_1=train_config.adam_beta1,
                          beta_2=train_config.adam_beta2, epsilon=train_config.adam_epsilon)
    if train_config.mixed_precision == "mixed_float16":
        optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    return optimizer
