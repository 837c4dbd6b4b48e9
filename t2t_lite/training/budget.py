"""Fitting a run to a wall-clock budget (TrainConfig.budget_schedule, used by the CPU recipes).

A fixed recipe tuned on one machine fails on the next: a slower CPU fits fewer steps into the
same minutes, spends most of them in warmup and averages checkpoints from the middle of training.
Under `--train_minutes` the trainer instead measures its own step rate over the first steps and
plans the run around the steps that will fit:

- total steps: what the measured rate fits into the budget left (minus the share kept for dev
  evaluation), capped by --train_steps;
- warmup: a fraction of them, to the set's peak learning rate, held there, then a linear decay
  to zero over the last `decay_fraction` of the run ("warmup-stable-decay"), so every run ends
  annealed whatever its length and short runs keep their high learning rate long enough;
- checkpoint averaging: `average_last` checkpoints spread over the last few percent of the run
  (as the paper averaged checkpoints from the end of training), never over half of it;
- dev evaluation: spaced so that evaluating costs at most `eval_fraction` of the planned run
  (the budget, or less when --train_steps caps the run below what the budget fits).

`plan` makes a plan; `BudgetPlanner`, a training-loop hook, measures, plans and re-plans as the
run goes. The paper's sets keep the paper's schedule; this is for budgeted runs only.
"""
import dataclasses
import math
import time
from typing import Optional

import keras
from keras import ops

from t2t_lite.training.hooks import Hook, decide_and_act, decide_before_the_first_step


@dataclasses.dataclass(frozen=True)
class BudgetPlan:
    total_steps: int
    warmup_steps: int
    average_steps: tuple  # the steps whose checkpoints get averaged, the last one = total_steps
    eval_every: int
    seconds_per_step: float
    steps_that_fit: Optional[int]  # None without a time budget
    decay_start: int = 0  # the step where the linear decay to 0 begins
    # A run resumed inside its decay: (step, learning rate as a fraction of the peak) it goes on
    # from, in a line to 0 at total_steps (no second warmup).
    resumed_decay: Optional[tuple] = None

    def describe(self, peak_learning_rate):
        fit = ("no time budget" if self.steps_that_fit is None else
               f"{self.seconds_per_step:.2f} s/step measured, {self.steps_that_fit} steps fit")
        if self.resumed_decay:
            step, fraction = self.resumed_decay
            shape = (f"warmup {self.warmup_steps} steps to lr {peak_learning_rate:.2e} done, "
                     f"the decay going on from lr {fraction * peak_learning_rate:.2e} at step "
                     f"{step}")
        else:
            shape = (f"warmup {self.warmup_steps} steps to lr {peak_learning_rate:.2e}, held to "
                     f"step {self.decay_start}, then linear decay")
        return (f"plan: {self.total_steps} steps ({fit}); {shape} to 0 at step "
                f"{self.total_steps}; "
                f"dev evaluation every {self.eval_every} steps; checkpoints averaged at steps "
                f"{', '.join(map(str, self.average_steps)) or 'none left (the run is complete)'}")


def plan(step, seconds_left, seconds_per_step, max_steps, average_last, warmup_fraction=0.2,
         average_fraction=0.05, eval_seconds=0.0, eval_fraction=0.05, warmup_steps=None,
         decay_fraction=0.8, resumed_decay=None):
    """The plan for a run at `step` with `seconds_left` of budget (None: no time limit).

    `warmup_steps` keeps an earlier plan's warmup once the run is past it (a resumed run
    re-plans its length, not its start). `resumed_decay` (step, fraction of the peak): a run
    resumed inside its decay plans only the steps left, its decay going on from there.
    """
    if seconds_left is None:
        fits = None
        total = max_steps
    else:
        # A little more kept back for checkpoint saves and step-rate noise: the run should end
        # on its plan, not on the deadline.
        training_seconds = max(seconds_left * _training_share(eval_fraction), 0.0)
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
    # Evaluations: as many as eval_fraction of the planned run pays for, at least one (at the
    # end). The planned run is the budget left; or, when --train_steps caps it below what the
    # budget fits, the time its steps take with the shares kept back above added again: a
    # short run under long minutes must not spend a share of all the minutes evaluating (its
    # interval would shrink as the steps left get fewer).
    if seconds_left is None or not eval_seconds:
        evals = 10
    else:
        run_seconds = seconds_left
        if total < fits:
            run_seconds = min(seconds_left, (total - step) * seconds_per_step
                              / _training_share(eval_fraction))
        evals = max(1, int(eval_fraction * run_seconds / eval_seconds))
    eval_every = max(1, math.ceil((total - step) / evals))
    return BudgetPlan(total_steps=total, warmup_steps=warmup_steps, average_steps=average_steps,
                      eval_every=eval_every, seconds_per_step=seconds_per_step,
                      steps_that_fit=fits,
                      decay_start=decay_start(warmup_steps, total, decay_fraction),
                      resumed_decay=resumed_decay)


def _training_share(eval_fraction):
    """The share of a run's seconds planned for steps: less evaluation, and 3% for checkpoint
    saves and step-rate noise."""
    return (1.0 - eval_fraction) * 0.97


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

    def __init__(self, peak, warmup, total, decay_fraction=0.8, anchor_step=0,
                 anchor_fraction=1.0):
        self.peak = peak
        self.warmup = warmup  # tf.Variable (int64) or a number
        self.total = total
        self.decay_fraction = decay_fraction
        # A run resumed inside its decay (BudgetPlanner.begin): the decay goes on from the
        # fraction of the peak its last step had, at (schedule) step `anchor_step`, in a line
        # to 0 at the new total. 0: no anchor, the decay starts where decay_start says.
        self.anchor_step, self.anchor_fraction = anchor_step, anchor_fraction

    def __call__(self, step):
        step = ops.cast(step, "float32") + 1.0  # the optimizer counts from 0
        warmup = ops.cast(self.warmup, "float32")
        total = ops.maximum(ops.cast(self.total, "float32"), warmup + 1.0)
        start = ops.maximum(warmup, ops.round(total - self.decay_fraction * total))
        anchor = ops.cast(self.anchor_step, "float32")
        fraction = ops.maximum(ops.cast(self.anchor_fraction, "float32"), 1e-6)
        start = ops.where(anchor > 0.0, total + 1.0 - (total + 1.0 - anchor) / fraction, start)
        rise = step / warmup
        # +1: the last planned step still moves the weights.
        fall = (total + 1.0 - step) / (total + 1.0 - start)
        return self.peak * ops.clip(ops.minimum(rise, fall), 0.0, 1.0)

    def get_config(self):
        return {"peak": self.peak, "warmup": int(self.warmup), "total": int(self.total),
                "decay_fraction": self.decay_fraction, "anchor_step": int(self.anchor_step),
                "anchor_fraction": float(self.anchor_fraction)}


# Steps before the step rate is measured (tracing, first batches), and how many to time.
RATE_SKIP_STEPS = 2
RATE_STEPS = 10
# A re-plan is printed when it moves the run's length by more than this share of the plan last
# printed; smaller moves (a busy machine's rate swings) and a moved dev evaluation interval alone
# (the first timed evaluation usually moves it) change the plan silently: nothing the user acts on.
REPRINT_FRACTION = 0.1
# The step rate falling below half the first measured one is warned about, once.
SLOW_WARNING_FACTOR = 2.0


def plan_change(shown, new):
    """Why `new` is worth printing after the plan `shown` was ("the step rate fell 12%", ...),
    or None when it moves the run's length by no more than REPRINT_FRACTION."""
    if abs(new.total_steps - shown.total_steps) <= REPRINT_FRACTION * shown.total_steps:
        return None
    if shown.seconds_per_step and new.seconds_per_step:
        change = shown.seconds_per_step / new.seconds_per_step - 1  # of the step rate
        if abs(change) >= 0.01:
            return f"the step rate {'rose' if change > 0 else 'fell'} {abs(change):.0%}"
    return f"{new.total_steps} steps instead of {shown.total_steps}"


class BudgetPlanner(Hook):
    """Drives a budgeted run: measures the step rate, plans, re-plans as it goes.

    The plan sets the schedule's variables (`warmup_var`, `total_var`) and state.total_steps,
    and decides (hooks.Decisions) the averaging window, its checkpoints (checkpoint_due) and
    the dev evaluations (evaluation_due). It re-plans at every progress report until the
    averaging window starts, so a machine that slows down (or a resumed run with a larger
    budget) still ends with a full decay and window. Under a cluster every worker plans on its
    own clock, but only the chief's decisions and schedule are applied (preemption.py).
    """

    def __init__(self, train_config, max_steps, warmup_var, total_var, peak, log_every,
                 eval_batches, bleu_sentences, anchor=None):
        self.config, self.max_steps = train_config, max_steps
        self.warmup_var, self.total_var, self.peak = warmup_var, total_var, peak
        # The schedule's anchor variables (BudgetSchedule.anchor_step, anchor_fraction) and a
        # callback that keeps them in the checkpoint once set: (step, fraction, keep).
        self.anchor = anchor
        self.resumed_decay = None
        self.log_every, self.eval_batches = log_every, eval_batches
        self.bleu_sentences = bleu_sentences
        self.timed_seconds, self.timed_steps = 0.0, 0
        self.plan = self.printed_plan = None
        self.first_seconds_per_step, self.warned_slow = None, False
        self.next_eval = None
        self.start_step, self.deadline, self.kept_warmup = 0, None, None

    @property
    def total_steps(self):
        return self.plan.total_steps if self.plan else self.max_steps

    def begin(self, state):
        self.start_step, self.deadline = state.step, state.deadline
        if self._resumes_a_finished_plan(state):
            print(f"warning: the run's plan ended at step {state.step} with its learning rate "
                  "decayed to 0: steps a larger budget adds go on from there and change the "
                  "model little; to train on at the peak rate, start a new --model_dir with "
                  "--warm_start_from from this one", flush=True)
        restored_warmup = int(self.warmup_var.numpy())
        # A resumed run past its warmup keeps it: only the length is re-planned.
        self.kept_warmup = (restored_warmup if state.step and state.step >= restored_warmup
                            else None)
        if self.kept_warmup is not None and self.anchor is not None:
            self._anchor_a_resumed_decay(state.step)
        if self.deadline is None:
            self._make_plan(state, seconds_per_step=0.0)  # --train_steps alone: nothing to time
        else:
            first = state.step + RATE_SKIP_STEPS + 1
            print(f"plan: measuring this machine's step rate over steps {first}"
                  f"-{first + RATE_STEPS - 1}, then fitting the run to "
                  f"{(self.deadline - time.monotonic()) / 60:.1f} min left", flush=True)
        state.total_steps = self.total_steps
        decide_before_the_first_step(state, self._decide)

    def after_step(self, state):
        self._measure(state)
        state.total_steps = self.total_steps
        # The plan acts on nothing itself: it decides, first, for the hooks after it.
        decide_and_act(state, self._decide, lambda state: None)

    def _decide(self, state):
        step, deciding = state.deciding_step, state.deciding
        if self.plan:
            deciding.averaging_from = (self.plan.average_steps[0] if self.plan.average_steps
                                       else None)
            if step in self.plan.average_steps:
                deciding.checkpoint_due = True
        deciding.evaluation_due = self._eval_due(step)

    def end(self, state):
        if state.stopped_because == "train_steps" and self.total_steps < self.max_steps:
            state.stopped_because = "end of the budget plan"

    def _resumes_a_finished_plan(self, state):
        """True for a re-run, with room for more steps, of a run that ended on its plan."""
        room = self.max_steps > state.step and (state.deadline is None
                                                or state.deadline > time.monotonic())
        return bool(state.step) and room and state.step >= int(self.total_var.numpy())

    def _anchor_a_resumed_decay(self, step):
        """A run resumed inside its decay goes on from the learning rate of its last step, in a
        line to 0 at whatever total the plans set: no second warmup to the peak."""
        anchor_step, anchor_fraction, keep = self.anchor
        restored = BudgetSchedule(1.0, self.warmup_var, self.total_var,
                                  self.config.budget_decay_fraction, anchor_step,
                                  anchor_fraction)
        fraction = float(restored(step - 1))  # the last step's (schedule step `step`)
        if fraction >= 1.0:
            return  # still at the peak: a longer plan holds it longer
        anchor_step.assign(step)
        anchor_fraction.assign(fraction)
        keep()
        self.resumed_decay = (step, fraction)

    def _measure(self, state):
        step = state.step
        if step - self.start_step > RATE_SKIP_STEPS:
            self.timed_seconds += state.step_seconds
            self.timed_steps += 1
        if self.deadline is None or self.timed_steps < RATE_STEPS:
            return
        # The plan freezes a little before its averaging window, so the window's checkpoints
        # are not moved past while they are being written.
        frozen = self.plan and (not self.plan.average_steps
                                or step >= self.plan.average_steps[0] - 2 * self.log_every)
        if self.plan is None or (step % self.log_every == 0 and not frozen):
            self._make_plan(state, self.timed_seconds / self.timed_steps)

    def _estimated_eval_seconds(self, evaluation_seconds, seconds_per_step):
        if evaluation_seconds:
            return sum(evaluation_seconds) / len(evaluation_seconds)
        # Before an evaluation has been timed, a guess: a dev batch's forward pass costs about
        # a third of a training step (no backward pass), and greedy decoding a fraction of a
        # second per sentence on a CPU.
        return self.eval_batches * seconds_per_step / 3 + 0.1 * self.bleu_sentences

    def _make_plan(self, state, seconds_per_step):
        step = state.step
        seconds_left = None if self.deadline is None else self.deadline - time.monotonic()
        new = plan(
            step, seconds_left, seconds_per_step, self.max_steps, self.config.average_last,
            warmup_fraction=self.config.budget_warmup_fraction,
            average_fraction=self.config.budget_average_fraction,
            eval_seconds=self._estimated_eval_seconds(state.evaluation_seconds,
                                                      seconds_per_step),
            eval_fraction=self.config.budget_eval_fraction, warmup_steps=self.kept_warmup,
            decay_fraction=self.config.budget_decay_fraction, resumed_decay=self.resumed_decay)
        if self.plan is None or self.next_eval is None:
            self.next_eval = step + new.eval_every
        elif new.eval_every != self.plan.eval_every:
            self.next_eval = min(self.next_eval, step + new.eval_every)
        self.plan = new
        if step >= new.warmup_steps:
            self.kept_warmup = new.warmup_steps
        self.warmup_var.assign(new.warmup_steps)
        self.total_var.assign(new.total_steps)
        state.total_steps = new.total_steps
        self._report(new, seconds_per_step)

    def _report(self, new, seconds_per_step):
        """Prints the first plan, and a re-plan that changes it materially (plan_change) with
        why; warns once when the step rate falls below half the first measured one."""
        if seconds_per_step > 0 and self.first_seconds_per_step is None:
            self.first_seconds_per_step = seconds_per_step
        first = self.first_seconds_per_step
        if (first and not self.warned_slow
                and seconds_per_step > SLOW_WARNING_FACTOR * first):
            self.warned_slow = True
            print(f"warning: the step rate fell below half the first measurement "
                  f"({seconds_per_step:.2f} s/step against {first:.2f}): other work on this "
                  "machine? The plan shrinks to fit the budget", flush=True)
        if self.printed_plan is None:
            self.printed_plan = new
            print(new.describe(self.peak), flush=True)
            return
        why = plan_change(self.printed_plan, new)
        if why:
            self.printed_plan = new
            print(f"{new.describe(self.peak)} (re-planned: {why})", flush=True)

    def _eval_due(self, step):
        if self.next_eval is not None and step >= self.next_eval and step < self.total_steps:
            self.next_eval = step + self.plan.eval_every
            return True
        return False
