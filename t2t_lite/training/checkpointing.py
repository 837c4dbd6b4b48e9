"""The training loop's checkpoints, as a hook: on the set's timer or step count, where another
hook asks (the budget plan's averaging window, and its dev evaluations before that window, so
that the averager can choose evaluated weights), and after the last step. Under a cluster the
chief's timer decides for every worker (hooks.Decisions), so all save at the same step. Inside
the window only its own checkpoints are written: another save there would push one of them out
of the last N."""
from t2t_lite.training.hooks import Hook, decide_and_act, decide_before_the_first_step


class Checkpoints(Hook):
    """Saves through a CheckpointKeeper (model_dir/checkpoint_saver.py).

    Args:
      keeper: the CheckpointKeeper, which knows the set's timer and step count.
      trained_seconds: the checkpointed variable holding the run's training time, so that
        --train_minutes budgets a run across restarts.
      check: called with the step before each save; raises if the weights are not fit to keep
        (the divergence guard), so a diverged run never replaces its last good checkpoint.
    """

    def __init__(self, keeper, trained_seconds, check=None):
        self.keeper, self.trained_seconds, self.check = keeper, trained_seconds, check

    def begin(self, state):
        decide_before_the_first_step(state, self._decide)

    def after_step(self, state):
        self.trained_seconds.assign(state.trained_seconds)
        decide_and_act(state, self._decide, self._save_if_decided)

    def _save_if_decided(self, state):
        if state.decided.save:
            self._save(state)

    def _decide(self, state):
        """Whether to save at state.deciding_step: where the plan asks, else on the timer, the
        step count or a dev evaluation, outside the plan's averaging window."""
        step, deciding = state.deciding_step, state.deciding
        in_window = deciding.averaging_from is not None and step >= deciding.averaging_from
        # A timer decided a step ahead counts the step still to run.
        due = self.keeper.due(step, within=state.step_seconds if state.ahead else 0.0)
        deciding.save = deciding.checkpoint_due or (not in_window and (
            due or deciding.evaluation_due))

    def end(self, state):
        if state.step > 0:
            self._save(state)

    def _save(self, state):
        if self.check:
            self.check(state.step)
        state.last_checkpoint = self.keeper.save(state.step)
        state.saved = True
