"""The training loop's checkpoints, as a hook: on the set's timer or step count, where another
hook asks (the budget plan's averaging window, and its dev evaluations before that window, so
that the averager can choose evaluated weights), and after the last step. Inside the window only
its own checkpoints are written: another save there would push one of them out of the last N."""
from t2t_lite.training.hooks import Hook


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

    def after_step(self, state):
        self.trained_seconds.assign(state.trained_seconds)
        in_window = state.averaging_from is not None and state.step >= state.averaging_from
        if state.checkpoint_due or (not in_window and (self.keeper.due(state.step)
                                                       or state.evaluation_due)):
            self._save(state)

    def end(self, state):
        if state.step > 0:
            self._save(state)

    def _save(self, state):
        if self.check:
            self.check(state.step)
        state.last_checkpoint = self.keeper.save(state.step)
        state.saved = True
