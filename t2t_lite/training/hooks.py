"""What the training loop shares with the jobs around it: a `TrainState` and the `Hook` interface.

Each job beside the optimizer step (the budget plan, the divergence guard, the progress line,
checkpoints, dev evaluation, TensorBoard summaries) is one hook, so the loop stays short and each
job can be read, tested and left out on its own. Hooks run in the order the trainer lists them,
and one may leave a request or a result on the state for those after it; each such field of
`TrainState` names its writer and its readers, which the trainer's order puts after the writer:

    BudgetPlanner -> RegularisationPlan -> DivergenceGuard -> Progress -> Checkpoints
        -> Evaluation -> Summaries

(the plan asks for a checkpoint and an evaluation, the checkpointer says it saved one, the
evaluation reads that, the summaries write what progress and evaluation measured).

What every worker of a cluster must do alike (save, evaluate, the averaging window, the
regularisation rates) is a `Decisions`: hooks write theirs to `state.deciding`, for the step
`state.deciding_step`, and act on `state.decided`. On one process the two are one object and the
step is the current one. Under a cluster (preemption.ClusterStopping) only the chief decides
(`state.decides`), for the next step; the next step's all-reduce carries its decisions, and every
worker, the chief too, acts on what that step's sums say, so all act at the same step. The
hooks that decide keep this order through `decide_before_the_first_step` and `decide_and_act`.
"""
import dataclasses
import time
from typing import Any, Callable, Optional


@dataclasses.dataclass
class Decisions:
    """What a step does that every worker must do alike. Writer -> readers."""

    checkpoint_due: bool = False  # BudgetPlanner -> Checkpoints: the averaging window's save
    evaluation_due: bool = False  # BudgetPlanner -> Checkpoints, Evaluation: the plan's evaluation
    save: bool = False  # Checkpoints: the step's weights are saved (every worker saves)
    evaluate: bool = False  # Evaluation: the step is evaluated (on the chief)
    # Kept from step to step:
    # BudgetPlanner -> Checkpoints: the first step of the plan's averaging window, when a plan
    # has one: from there on only the window's own checkpoints are written, so that no other
    # save crowds it out of "the last N".
    averaging_from: Optional[int] = None
    # RegularisationPlan: the planned passes over the data and, per TrainConfig rule
    # ("budget_dropout", ...), the index of the rate chosen in it; None until it chooses.
    passes: Optional[float] = None
    rates: dict = dataclasses.field(default_factory=dict)

    def following(self):
        """The next step's: what is kept from step to step, nothing due."""
        return Decisions(averaging_from=self.averaging_from, passes=self.passes,
                         rates=dict(self.rates))


@dataclasses.dataclass
class TrainState:
    """What the loop and its hooks share: the run's position and limits, what hooks said about
    the current step, and what the run has produced so far."""

    model: Any
    optimizer: Any
    schedule: Callable  # the optimizer's learning-rate schedule: iteration -> rate
    step: int  # optimizer steps applied so far, this run and the ones it resumes
    total_steps: int  # the loop stops here; BudgetPlanner moves it, RegularisationPlan and
    # Progress read it
    deadline: Optional[float] = None  # time.monotonic() when --train_minutes runs out
    start: float = dataclasses.field(default_factory=time.monotonic)  # when this run began
    trained_before: float = 0.0  # training seconds of the runs this one resumes

    # This step's, cleared before each step (and before the hooks' `end`). Writer -> readers.
    stats: Optional[dict] = None  # summed token statistics: loss, nll, correct, tokens, ...
    step_seconds: float = 0.0
    saved: bool = False  # Checkpoints: this step's checkpoint was written
    # Progress -> Summaries: the progress line's values, when one was printed.
    train_metrics: Optional[dict] = None
    dev_metrics: Optional[dict] = None  # Evaluation -> Summaries: a dev evaluation's metrics

    # The run's.
    evaluation_seconds: list = dataclasses.field(default_factory=list)  # each dev evaluation's
    last_checkpoint: Optional[str] = None
    best_metrics: Optional[dict] = None  # the best dev evaluation, with its "step"
    last_train_metrics: Optional[dict] = None
    stopped_because: Optional[str] = None
    # Who decides where the run stops (preemption.py): None, the loop alone on one process.
    stopping: Any = None
    signal: Optional[int] = None  # the signal (SIGTERM, SIGINT) the run stopped to save on
    # What this step does (`decided`), and what the hooks decide for `deciding_step`: the same
    # object on one process; under a cluster the stopping's `agree` sets `decided` from the
    # step's sums (the module doc).
    decided: Decisions = dataclasses.field(default_factory=Decisions)
    deciding: Optional[Decisions] = None

    def __post_init__(self):
        if self.deciding is None:
            self.deciding = self.decided.following() if self.ahead else self.decided

    @property
    def ahead(self):
        """How many steps ahead the hooks decide: 0 on one process, 1 under a cluster."""
        return getattr(self.stopping, "ahead", 0)

    @property
    def decides(self):
        """Whether this process' hooks decide (all but a cluster's other workers)."""
        return getattr(self.stopping, "decides", True)

    @property
    def deciding_step(self):
        return self.step + self.ahead

    # This step's decisions, by the names the hooks used before Decisions existed.
    checkpoint_due = property(lambda self: self.decided.checkpoint_due)
    evaluation_due = property(lambda self: self.decided.evaluation_due)
    averaging_from = property(lambda self: self.decided.averaging_from)

    def next_step(self, step, stats=None, seconds=0.0):
        """Moves to `step`, forgetting what the hooks said about the step before."""
        self.step, self.stats, self.step_seconds = step, stats, seconds
        self.saved = False
        self.train_metrics = self.dev_metrics = None
        self.decided = self.decided.following()
        self.deciding = self.deciding.following() if self.ahead else self.decided

    @property
    def learning_rate(self):
        """The rate the last step was applied with (the schedule counts iterations from 0)."""
        return float(self.schedule(self.step - 1))

    @property
    def trained_seconds(self):
        """Wall-clock training time of the whole run, resumed runs included."""
        return self.trained_before + time.monotonic() - self.start


class Hook:
    """One job of the training loop. Every method may leave results on the state for the hooks
    after it; `after_step` returns a reason to stop (a short phrase the trainer prints), or None.
    Raising (a UserError) ends the run without the `end` calls."""

    def begin(self, state):
        """Before the first step of this run (state.step may be a resumed run's)."""

    def after_step(self, state) -> Optional[str]:
        """After each optimizer step; state.step and state.stats are the step's."""
        return None

    def end(self, state):
        """After the last step, whatever stopped the loop (state.stopped_because says what)."""


def decide_before_the_first_step(state, decide):
    """A deciding hook's `begin`: under a cluster the chief decides the first step's already."""
    if state.ahead and state.decides:
        decide(state)


def decide_and_act(state, decide, act):
    """A deciding hook's `after_step`: on one process it decides this step's Decisions, then
    acts on them; under a cluster this step's came with it, and the chief decides the next
    step's after acting (so a save's timer starts anew). `decide(state)` writes
    state.deciding, for state.deciding_step, and runs only where this process decides;
    `act(state)` reads state.decided. Returns what `act` returns."""
    if not state.ahead and state.decides:
        decide(state)
    result = act(state)
    if state.ahead and state.decides:
        decide(state)
    return result
