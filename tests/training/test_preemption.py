"""How a cluster run agrees where to stop (preemption.ClusterStopping), without a cluster: the
votes a worker puts on its next step, and the reason it reads back from the step's sums. The
trainer end to end under signals and lost workers is in test_trainer.py."""
import os
import signal
import time
import types

import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.training import preemption
from t2t_lite.training.hooks import TrainState


class Votes:
    """TrainSteps.vote's recorder."""

    def __init__(self):
        self.cast = None

    def vote(self, *values):
        self.cast = values


def state_at(step, total_steps, deadline=None, step_seconds=0.1, **stats):
    state = TrainState(model=None, optimizer=None, schedule=None, step=step,
                       total_steps=total_steps, deadline=deadline)
    state.step_seconds = step_seconds
    state.stats = {"stop_sigterm": 0.0, "stop_sigint": 0.0, "stop_chief": 0.0, **stats}
    return state


def stopping(chief, received=None, plan=None):
    signals = types.SimpleNamespace(received=received)
    votes = Votes()
    return preemption.ClusterStopping(signals, votes, chief, max_steps=100, plan=plan), votes


def test_the_chief_votes_its_plans_last_step_one_step_ahead_and_everyone_stops_after_it():
    chief, votes = stopping(chief=True)
    assert chief.before_step(state_at(8, 10), None) is None
    assert votes.cast[:5] == (0.0, 0.0, 0, 0, 0)
    assert chief.before_step(state_at(9, 10), None) is None  # step 10 is the last: said now
    assert votes.cast[2] == 1 + preemption.CHIEF_REASONS.index("train_steps")
    other, _ = stopping(chief=False)
    after_ten = state_at(10, 10, stop_chief=votes.cast[2])
    assert chief.after_step(after_ten, None) == other.after_step(after_ten, None) == "train_steps"


def test_only_the_chief_clock_counts_and_it_votes_a_deadline_within_a_step():
    soon = time.monotonic() + 0.05
    other, votes = stopping(chief=False)
    assert other.before_step(state_at(5, 100, deadline=soon), "train_minutes") is None
    assert votes.cast[2] == 0  # the other worker's own deadline is not a vote
    chief, votes = stopping(chief=True)
    assert chief.before_step(state_at(5, 100, deadline=soon, step_seconds=0.1), None) is None
    assert votes.cast[2] == 1 + preemption.CHIEF_REASONS.index("train_minutes")


def test_every_worker_stops_at_the_step_cap_without_a_vote():
    other, _ = stopping(chief=False)
    assert other.before_step(state_at(100, 100), None) == "train_steps"


def test_early_stopping_on_the_chief_travels_with_the_next_step():
    chief, votes = stopping(chief=True)
    assert chief.after_step(state_at(10, 100), "early_stopping") is None  # not alone
    chief.before_step(state_at(10, 100), None)
    assert votes.cast[2] == 1 + preemption.CHIEF_REASONS.index("early_stopping")
    other, _ = stopping(chief=False)
    assert other.after_step(state_at(11, 100, stop_chief=votes.cast[2]), None) == "early_stopping"


def test_a_signal_anywhere_stops_everyone_and_says_where_it_came_from():
    signalled, votes = stopping(chief=False, received=signal.SIGTERM)
    signalled.before_step(state_at(7, 100), None)
    assert votes.cast[:2] == (1.0, 0.0)
    summed = state_at(8, 100, stop_sigterm=1.0)
    chief, _ = stopping(chief=True)
    assert signalled.after_step(summed, None) == chief.after_step(summed, None) == "SIGTERM"
    assert chief.signal == signalled.signal == signal.SIGTERM
    assert chief.signal_elsewhere and not signalled.signal_elsewhere


def test_every_worker_applies_the_chiefs_plan_from_the_steps_sums():
    planned = [tf.Variable(40, dtype=tf.int64), tf.Variable(400, dtype=tf.int64)]
    applied = [tf.Variable(20, dtype=tf.int64), tf.Variable(100, dtype=tf.int64)]
    chief, votes = stopping(chief=True, plan=(*planned, *applied))
    chief.before_step(state_at(12, 100), None)
    assert votes.cast[3:5] == (40, 400)
    assert [int(v.numpy()) for v in applied] == [20, 100]  # not before the step carries it
    chief.after_step(state_at(13, 100, plan_warmup=40.0, plan_total=400.0), None)
    assert [int(v.numpy()) for v in applied] == [40, 400]


def test_a_second_signal_while_saving_is_only_recorded():
    # Whatever this process started with (default_int_handler in a terminal, SIG_IGN in a
    # background job such as `nohup ... &`) is what restore() must put back.
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    signals = preemption.Signals().install()
    try:
        signals.arm()  # installs again: what was there before is still the first handler
        os.kill(os.getpid(), signal.SIGTERM)
        os.kill(os.getpid(), signal.SIGINT)  # e.g. Ctrl-C during the save: no KeyboardInterrupt
        assert signals.received == signal.SIGTERM
    finally:
        signals.restore()
    assert {signum: signal.getsignal(signum) for signum in before} == before


@pytest.mark.parametrize("starting", [signal.SIG_IGN, signal.SIG_DFL, signal.default_int_handler])
def test_restore_puts_back_the_disposition_the_process_had(starting):
    before = signal.signal(signal.SIGINT, starting)
    try:
        signals = preemption.Signals().install()
        signals.arm()
        assert signal.getsignal(signal.SIGINT) == signals._handle
        signals.restore()
        assert signal.getsignal(signal.SIGINT) == starting
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_signal_before_arming_exits_with_its_status():
    signals = preemption.Signals().install()
    try:
        with pytest.raises(SystemExit) as exit_:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)  # the handler runs at the next bytecode, well before this ends
        assert exit_.value.code == exit_status.TERMINATED and signals.received is None
    finally:
        signals.restore()
