"""Fitting a run to a wall-clock budget (TrainConfig.budget_schedule, used by the CPU recipes).

A fixed recipe tuned on one machine fails on the next: a slower CPU that makes 430 steps in 20
minutes spends the whole run in a 400-step warmup and averages checkpoints from the middle of
training. Under `--train_minutes` the trainer instead measures its own step rate over the first
steps and plans the run around the steps that will fit:

- total steps: what the measured rate fits into the budget left (minus the share kept for dev
  evaluation), capped by --train_steps;
- warmup: a fraction of them, to the set's peak learning rate, held there, then a linear decay
  to zero over the last `decay_fraction` of the run ("warmup-stable-decay"), so every run ends
  annealed whatever its length and short runs keep their high learning rate long enough;
- checkpoint averaging: `average_last` checkpoints spread over the last few percent of the run
  (the paper averaged the last ~1-4% of training), never over half of it;
- dev evaluation: spaced so that evaluating costs at most `eval_fraction` of the budget.

The paper's sets keep the paper's schedule; this is for budgeted runs only.
"""
import dataclasses
import math
from typing import Optional

import keras
from keras import ops


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    total_steps: int
    warmup_steps: int
    average_steps: tuple  # the steps whose checkpoints get averaged, the last one = total_steps
    eval_every: int
    seconds_per_step: float
    steps_that_fit: Optional[int]  # None without a time budget
    decay_start: int = 0  # the step where the linear decay to 0 begins

    def describe(self, peak_learning_rate):
        fit = ("no time budget" if self.steps_that_fit is None else
               f"{self.seconds_per_step:.2f} s/step measured, {self.steps_that_fit} steps fit")
        return (f"plan: {self.total_steps} steps ({fit}); warmup {self.warmup_steps} steps to "
                f"lr {peak_learning_rate:.2e}, held to step {self.decay_start}, then linear "
                f"decay to 0 at step {self.total_steps}; "
                f"dev evaluation every {self.eval_every} steps; checkpoints averaged at steps "
                f"{', '.join(map(str, self.average_steps)) or 'none left (the run is complete)'}")


def plan(step, seconds_left, seconds_per_step, max_steps, average_last, warmup_fraction=0.2,
         average_fraction=0.05, eval_seconds=0.0, eval_fraction=0.05, warmup_steps=None,
         decay_fraction=0.8):
    """The plan for a run at `step` with `seconds_left` of budget (None: no time limit).

    `warmup_steps` keeps an earlier plan's warmup once the run is past it (a resumed run
    re-plans its length, not its start).
    """
    if seconds_left is None:
        fits = None
        total = max_steps
    else:
        # 3% more kept back for checkpoint saves and step-rate noise: the run should end on its
        # plan, not on the deadline.
        training_seconds = max(seconds_left * (1.0 - eval_fraction) * 0.97, 0.0)
        fits = step + int(training_seconds / max(seconds_per_step, 1e-9))
        total = min(max_steps, fits)
    # A finished run (re-run after its last step) plans no more steps: total = step.
    total = max(total, step, 1)
    if warmup_steps is None or step < warmup_steps:
        warmup_steps = max(1, round(warmup_fraction * total))
    warmup_steps = min(warmup_steps, total)
    # The averaging window: the last `average_fraction` of the run, at least one step per
    # checkpoint, spread evenly, ending at the last step.
    average_last = max(1, average_last)
    window = max(average_last, round(average_fraction * total))
    # A re-plan on a machine that slowed down can shorten the run so much that the window would
    # start behind this step: squeeze it into the steps left, so its checkpoints are still written.
    spacing = max(1, min(window, total - step) // average_last)
    average_steps = tuple(s for s in (total - spacing * i for i in reversed(range(average_last)))
                          if s > step)
    # Evaluations: as many as eval_fraction of the budget pays for, at least one (at the end).
    if seconds_left is None or not eval_seconds:
        evals = 10
    else:
        evals = max(1, int(eval_fraction * seconds_left / eval_seconds))
    eval_every = max(1, math.ceil((total - step) / evals))
    return BudgetPlan(total_steps=total, warmup_steps=warmup_steps, average_steps=average_steps,
                      eval_every=eval_every, seconds_per_step=seconds_per_step,
                      steps_that_fit=fits,
                      decay_start=decay_start(warmup_steps, total, decay_fraction))


def decay_start(warmup, total, decay_fraction):
    """The step where the decay begins: the last `decay_fraction` of the run, after warmup."""
    return max(warmup, total - round(decay_fraction * total))


@keras.saving.register_keras_serializable(package="t2t_lite")
class BudgetSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup to `peak` over `warmup` steps, held, then linear decay to 0 over the last
    `decay_fraction` of the `total` steps.

    `warmup` and `total` are variables, so a plan made after measuring the step rate (or a
    resumed run's new plan) changes the schedule of an optimizer already built; the checkpoint
    keeps them.
    """

    def __init__(self, peak, warmup, total, decay_fraction=0.8):
        self.peak = peak
        self.warmup = warmup  # tf.Variable (int64) or a number
        self.total = total
        self.decay_fraction = decay_fraction

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0  # the optimizer counts from 0
        warmup = ops.cast(self.warmup, "float32")
        total = ops.maximum(ops.cast(self.total, "float32"), warmup + 1.0)
        start = ops.maximum(warmup, ops.round(total - self.decay_fraction * total))
        rise = step / warmup
        # +1: the last planned step still moves the weights.
        fall = (total + 1.0 - step) / (total + 1.0 - start)
        return self.peak * ops.clip(ops.minimum(rise, fall), 0.0, 1.0)

    def get_config(self):
        return {"peak": self.peak, "warmup": int(self.warmup), "total": int(self.total),
                "decay_fraction": self.decay_fraction}
