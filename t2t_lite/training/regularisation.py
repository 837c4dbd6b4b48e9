"""Dropout fitted to the passes over the training data that a budgeted run plans.

A run of a few hundred steps sees the training data two or three times and learns faster without
dropout; a run of thousands of steps over the same small corpus sees it ten times or more and
overfits without it. The budget plan knows the steps; the first steps tell how many sentence pairs
a step holds; together they give the passes the run will make, and TrainConfig.budget_dropout maps
passes to P_drop (the measurements behind small_cpu's rule are in docs/results.md).

The rate is chosen once per process, when the step rate and the batch size have been measured
(the first plan of a timed run is made there too), and the training step is traced again with it.
A resumed run chooses again from its own plan.
"""
from t2t_lite.training.hooks import Hook


def planned_passes(total_steps, sequences_per_step, train_examples):
    """Passes over `train_examples` sentence pairs that `total_steps` steps make."""
    return total_steps * sequences_per_step / max(train_examples, 1)


def dropout_for(rule, passes):
    """P_drop for `passes` under `rule` ((passes, P_drop), ... ascending): the last pair whose
    passes are reached; the first pair's rate below it."""
    rate = rule[0][1]
    for threshold, value in rule:
        if passes >= threshold:
            rate = value
    return rate


def train_examples(problem, data_dir):
    """Sentence pairs in the problem's training split, from its datagen manifest."""
    return int(problem.manifest(data_dir, "train")["num_examples"])


class DropoutPlan(Hook):
    """Sets P_drop from the planned passes, once the first `measure_after` steps of this run have
    been counted. Runs after the BudgetPlanner, whose plan it reads (state.total_steps).

    Args:
      rule: TrainConfig.budget_dropout.
      examples: sentence pairs in the training split.
      apply: called with the new rate (sets the model's dropout and traces the step again).
      current: the rate the model trains with until then.
      measure_after: steps this run counts before it decides.
    """

    def __init__(self, rule, examples, apply, current, measure_after):
        self.rule, self.examples, self.apply = rule, examples, apply
        self.rate, self.measure_after = current, measure_after
        self.sequences, self.steps = 0.0, 0
        self.decided = False

    def after_step(self, state):
        if self.decided or state.stats is None:
            return None
        self.sequences += float(state.stats.get("sequences", 0.0))
        self.steps += 1
        if self.steps < self.measure_after:
            return None
        self.decided = True
        passes = planned_passes(state.total_steps, self.sequences / self.steps, self.examples)
        rate = dropout_for(self.rule, passes)
        print(f"plan: {passes:.1f} passes over the {self.examples:,} training pairs planned "
              f"({state.total_steps} steps x {self.sequences / self.steps:.0f} pairs): dropout "
              f"{rate:g} (TrainConfig.budget_dropout)", flush=True)
        if rate != self.rate:
            self.apply(rate)
            self.rate = rate
        return None
