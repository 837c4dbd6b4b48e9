"""Regularisation fitted to the passes over the training data that a budgeted run plans.

A run of a few hundred steps sees the training data two or three times and learns faster without
regularisation; a run of thousands of steps over the same small corpus sees it ten times or more
and overfits without it. The budget plan knows the steps; the first steps tell how many sentence
pairs a step holds; together they give the passes the run will make, and each rule maps passes to
a rate: TrainConfig.budget_dropout to P_drop, TrainConfig.budget_label_smoothing to the training
loss's label smoothing, TrainConfig.budget_subword_sampling to the pipeline's subword sampling
rate (the measurements behind small_cpu's rules are in docs/results.md).

The rates are chosen once per run, when the step rate and the batch size have been measured
(the first plan of a timed run is made there too); under a cluster the chief chooses and its
choice travels with the next step to every worker (hooks.Decisions). A resumed run chooses again
from its own plan.
"""
import dataclasses
from typing import Callable

from t2t_lite.training.hooks import Hook


# The TrainConfig rules a plan chooses from (each a rate a cluster's step carries: steps.py).
RULES = ("budget_dropout", "budget_label_smoothing", "budget_subword_sampling")


def planned_passes(total_steps, sequences_per_step, train_examples):
    """Passes over `train_examples` sentence pairs that `total_steps` steps make."""
    return total_steps * sequences_per_step / max(train_examples, 1)


def rate_for(rule, passes):
    """The rate for `passes` under `rule` ((passes, rate), ... ascending): the last pair whose
    passes are reached; the first pair's rate below it."""
    return rule[rule_index(rule, passes)][1]


def rule_index(rule, passes):
    """The index in `rule` of rate_for's pair."""
    index = 0
    for i, (threshold, _) in enumerate(rule):
        if passes >= threshold:
            index = i
    return index


def train_examples(problem, data_dir):
    """Sentence pairs in the problem's training split, from its datagen manifest."""
    return int(problem.manifest(data_dir, "train")["num_examples"])


@dataclasses.dataclass
class RegularisationChoice:
    """What a plan chose: the passes it planned and each regulariser's rate, by its name."""
    passes: float
    rates: dict


@dataclasses.dataclass
class Regulariser:
    """One rate a plan chooses: its name in the plan line, the TrainConfig rule it comes from,
    the rate in force, and how to change it."""
    name: str
    setting: str
    rule: tuple
    current: float
    apply: Callable[[float], None]


class RegularisationPlan(Hook):
    """Sets each regulariser's rate from the planned passes, once the first `measure_after` steps
    of this run have been counted. Runs after the BudgetPlanner, whose plan it reads
    (state.total_steps).

    Args:
      regularisers: the Regularisers to choose.
      examples: sentence pairs in the training split.
      measure_after: steps this run counts before it decides.
    """

    def __init__(self, regularisers, examples, measure_after):
        self.regularisers, self.examples = list(regularisers), examples
        self.measure_after = measure_after
        self.sequences, self.steps = 0.0, 0
        self.decided = False  # this process chose (a cluster's other workers never do)
        self._planned = None  # (total steps, pairs per step) of this process' choice
        self.chosen = None  # the RegularisationChoice, once applied

    def after_step(self, state):
        if not self.decided and state.decides and state.stats is not None:
            self._choose(state)
        if self.chosen is None and state.decided.passes is not None:
            self._apply(state.decided)
        return None

    def _choose(self, state):
        """Chooses each rate (hooks.Decisions: applied at once on one process, with the next
        step on every worker of a cluster)."""
        self.sequences += float(state.stats.get("sequences", 0.0))
        self.steps += 1
        if self.steps < self.measure_after:
            return
        self.decided = True
        passes = planned_passes(state.total_steps, self.sequences / self.steps, self.examples)
        self._planned = (state.total_steps, self.sequences / self.steps)
        state.deciding.passes = passes
        state.deciding.rates = {regulariser.setting: rule_index(regulariser.rule, passes)
                                for regulariser in self.regularisers}

    def _apply(self, decided):
        chosen = []
        for regulariser in self.regularisers:
            rate = regulariser.rule[decided.rates[regulariser.setting]][1]
            chosen.append(f"{regulariser.name} {rate:g} (TrainConfig.{regulariser.setting})")
            if rate != regulariser.current:
                regulariser.apply(rate)
                regulariser.current = rate
        self.chosen = RegularisationChoice(
            decided.passes,
            {regulariser.name: regulariser.current for regulariser in self.regularisers})
        planned = (f"{self._planned[0]} steps x {self._planned[1]:.0f} pairs" if self._planned
                   else "the chief's plan")
        print(f"plan: {decided.passes:.1f} passes over the {self.examples:,} training pairs "
              f"planned ({planned}): " + ", ".join(chosen), flush=True)
