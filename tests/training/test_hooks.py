"""The training loop and its hooks, with a counter for an optimizer (no model is trained)."""
import math
import time
import types

import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.errors import UserError
from t2t_lite.training.budget import BudgetPlanner
from t2t_lite.training.checkpointing import Checkpoints
from t2t_lite.training.divergence import DivergenceGuard
from t2t_lite.training.evaluation import Evaluation
from t2t_lite.training.hooks import Hook, TrainState
from t2t_lite.training.loop import loop

STATS = {"loss": 2.0, "nll": 2.0, "correct": 1.0, "tokens": 4.0, "source_tokens": 4.0,
         "grad_norm": 1.0}


class Recorder(Hook):
    def __init__(self, name, log, stop_at=None):
        self.name, self.log, self.stop_at = name, log, stop_at

    def begin(self, state):
        self.log.append((self.name, "begin", state.step))

    def after_step(self, state):
        self.log.append((self.name, "after_step", state.step))
        return "had enough" if state.step == self.stop_at else None

    def end(self, state):
        self.log.append((self.name, "end", state.stopped_because))


def counting_state(total_steps, **kwargs):
    """A TrainState whose optimizer is a step counter, and a train_step that advances it."""
    optimizer = types.SimpleNamespace(iterations=tf.Variable(0, dtype=tf.int64))

    def train_step():
        optimizer.iterations.assign_add(1)
        return dict(STATS)

    state = TrainState(model=None, optimizer=optimizer, schedule=lambda i: 0.5 * (i + 1),
                       step=0, total_steps=total_steps, **kwargs)
    return state, train_step


def test_loop_calls_every_hook_in_order_and_stops_at_total_steps():
    log = []
    state, train_step = counting_state(2)
    assert loop(state, train_step, [Recorder("a", log), Recorder("b", log)]) == "train_steps"
    assert log == [("a", "begin", 0), ("b", "begin", 0),
                   ("a", "after_step", 1), ("b", "after_step", 1),
                   ("a", "after_step", 2), ("b", "after_step", 2),
                   ("a", "end", "train_steps"), ("b", "end", "train_steps")]
    assert state.step == 2 and state.stats is None  # cleared before `end`
    assert state.learning_rate == 1.0  # the schedule at the last step's iteration (1)


def test_a_hooks_reason_stops_the_loop_after_every_hook_saw_the_step():
    log = []
    state, train_step = counting_state(100)
    hooks = [Recorder("a", log, stop_at=3), Recorder("b", log)]
    assert loop(state, train_step, hooks) == "had enough"
    assert state.step == 3 and state.stopped_because == "had enough"
    assert log[-4:] == [("a", "after_step", 3), ("b", "after_step", 3),
                        ("a", "end", "had enough"), ("b", "end", "had enough")]


def test_a_spent_time_budget_stops_before_any_step():
    log = []
    state, train_step = counting_state(100, deadline=time.monotonic() - 1)
    assert loop(state, train_step, [Recorder("a", log)]) == "train_minutes"
    assert state.step == 0 and log == [("a", "begin", 0), ("a", "end", "train_minutes")]


class FakeKeeper:
    def __init__(self, every):
        self.every, self.saved = every, []
        self.manager = types.SimpleNamespace(latest_checkpoint=None)

    def due(self, step, within=0.0):
        return step % self.every == 0

    def save(self, step):  # as CheckpointKeeper: a step already saved is not saved again
        if step not in self.saved:
            self.saved.append(step)
            self.manager.latest_checkpoint = f"ckpt-{step}"
        return self.manager.latest_checkpoint


class FakeEvaluator:
    """Dev losses from a list, one per evaluation."""

    def __init__(self, losses):
        self.losses = list(losses)
        self.model = tf.Module()
        self.model.weight = tf.Variable(1.0)

    def evaluate(self):
        return {"loss": self.losses.pop(0)}


def test_checkpoints_then_evaluation_after_each_save_with_early_stopping(tmp_path, capsys):
    keeper, checked = FakeKeeper(every=2), []
    trained_seconds = tf.Variable(0.0, dtype=tf.float64)
    evaluation = Evaluation(FakeEvaluator([3.0, 2.0, 2.5, 2.6, 9.9]), str(tmp_path / "best"),
                            "checkpoints", early_stopping_evals=2)
    state, train_step = counting_state(100)
    hooks = [Checkpoints(keeper, trained_seconds, check=checked.append), evaluation]
    assert loop(state, train_step, hooks) == "early_stopping"
    # Saved at 2, 4, 6, 8; evaluated after each; 6 and 8 were no better than 4. The weights are
    # checked before every save, the end's included.
    assert keeper.saved == [2, 4, 6, 8] and checked == [2, 4, 6, 8, 8] and state.step == 8
    assert state.best_metrics == {"loss": 2.0, "step": 4}
    assert tf.train.latest_checkpoint(str(tmp_path / "best")).endswith("-4")
    assert state.last_checkpoint == "ckpt-8" and float(trained_seconds.numpy()) > 0
    # The stop came from step 8's evaluation: the end does not evaluate the same weights again.
    assert len(state.evaluation_seconds) == 4
    out = capsys.readouterr().out
    assert "dev at step 8: loss 2.6" in out and out.count("dev at step 8") == 1


def test_the_end_evaluates_final_weights_no_evaluation_saw(tmp_path):
    evaluation = Evaluation(FakeEvaluator([3.0, 2.5]), str(tmp_path / "best"), 4)
    state, train_step = counting_state(6)
    assert loop(state, train_step, [evaluation]) == "train_steps"
    assert len(state.evaluation_seconds) == 2 and state.best_metrics == {"loss": 2.5, "step": 6}


def test_evaluation_every_n_steps_and_the_best_is_not_evaluated_twice(tmp_path):
    evaluation = Evaluation(FakeEvaluator([3.0, 2.0]), str(tmp_path / "best"), 3)
    state, train_step = counting_state(6)
    assert loop(state, train_step, [evaluation]) == "train_steps"
    assert state.best_metrics == {"loss": 2.0, "step": 6}
    assert len(state.evaluation_seconds) == 2
    with pytest.raises(ValueError, match="evaluation policy"):
        Evaluation(FakeEvaluator([]), str(tmp_path / "x"), "sometimes")


def test_divergence_guard_stops_on_a_non_finite_loss_naming_the_kept_checkpoint():
    keeper = FakeKeeper(every=2)
    guard = DivergenceGuard(model=None, probe_batch=None, label_smoothing=0.1, keeper=keeper)
    state, _ = counting_state(10)
    state.next_step(3, dict(STATS, loss=math.nan))
    with pytest.raises(UserError, match="no checkpoint was written"):
        guard.after_step(state)
    keeper.save(2)
    with pytest.raises(UserError, match=r"diverged at step 3: loss is nan; the last good "
                                        r"checkpoint \(ckpt-2\) was kept"):
        guard.after_step(state)
    # Under float16 loss scaling an overflowing gradient alone is the optimizer's to skip.
    scaled = DivergenceGuard(None, None, 0.1, keeper, loss_scaling=True)
    state.next_step(4, dict(STATS, grad_norm=math.inf))
    scaled.after_step(state)
    with pytest.raises(UserError):
        guard.after_step(state)


def test_budget_planner_without_a_deadline_plans_over_the_step_cap(capsys):
    _, train_config, _ = hparams.load("tiny", ["TrainConfig.budget_schedule = True",
                                               "TrainConfig.average_last = 3"])
    warmup, total = tf.Variable(1, dtype=tf.int64), tf.Variable(50, dtype=tf.int64)
    planner = BudgetPlanner(train_config, 50, warmup, total, peak=1e-3, log_every=10,
                            eval_batches=1, bleu_sentences=0)
    seen = []

    class Requests(Hook):
        def after_step(self, state):
            seen.append((state.step, state.checkpoint_due, state.evaluation_due))

    state, train_step = counting_state(50)
    assert loop(state, train_step, [planner, Requests()]) == "train_steps"
    assert "plan: 50 steps (no time budget)" in capsys.readouterr().out
    assert int(total.numpy()) == 50 and int(warmup.numpy()) == planner.plan.warmup_steps
    assert [s for s, checkpoint, _ in seen if checkpoint] == list(planner.plan.average_steps)
    assert [s for s, _, evaluate in seen if evaluate] == list(range(5, 50, 5))


def test_inside_the_averaging_window_only_its_own_checkpoints_are_saved():
    """Timed and evaluation saves stop where the plan's averaging window starts, so that the
    averager's "last N" are the window's N evenly spread checkpoints."""
    _, train_config, _ = hparams.load("tiny", ["TrainConfig.budget_schedule = True",
                                               "TrainConfig.average_last = 3",
                                               "TrainConfig.budget_average_fraction = 0.3"])
    warmup, total = tf.Variable(1, dtype=tf.int64), tf.Variable(50, dtype=tf.int64)
    planner = BudgetPlanner(train_config, 50, warmup, total, peak=1e-3, log_every=10,
                            eval_batches=1, bleu_sentences=0)
    keeper = FakeKeeper(every=7)
    state, train_step = counting_state(50)
    hooks = [planner, Checkpoints(keeper, tf.Variable(0.0, dtype=tf.float64))]
    loop(state, train_step, hooks)
    window = planner.plan.average_steps
    assert window == (40, 45, 50) and state.averaging_from == 40
    before = sorted({s for s in range(1, 40) if s % 7 == 0 or s % 5 == 0})
    assert keeper.saved == before + list(window)


def test_a_resumed_run_keeps_its_best_evaluation_and_early_stopping_count(tmp_path):
    from t2t_lite.model_dir import dev_history

    for step, loss in ((2, 3.0), (4, 2.0), (6, 2.5), (8, 1.0)):  # 8: after the restored step
        dev_history.append(str(tmp_path), step, {"loss": loss})
    evaluation = Evaluation(FakeEvaluator([2.4]), str(tmp_path / "best"), 2,
                            early_stopping_evals=2, history_dir=str(tmp_path))
    state, train_step = counting_state(100)
    state.optimizer.iterations.assign(6)
    state.step = 6  # resumed at step 6: its evaluation at 8 is of steps trained again
    # 6 was no better than 4, and 8 (2.4) is not either: the second in a row stops the run.
    assert loop(state, train_step, [evaluation]) == "early_stopping"
    assert state.step == 8 and state.best_metrics == {"loss": 2.0, "step": 4}


def test_a_signal_skips_the_end_evaluation(tmp_path):
    evaluation = Evaluation(FakeEvaluator([3.0]), str(tmp_path / "best"), 100)
    state, train_step = counting_state(100)
    state.stopping = types.SimpleNamespace(
        signals=None, signal=15, before_step=lambda state, own: "SIGTERM" if state.step else None,
        after_step=lambda state, reason: reason, agree=lambda state: None)
    assert loop(state, train_step, [evaluation]) == "SIGTERM"
    assert state.step == 1 and state.signal == 15 and not state.evaluation_seconds
