"""What every worker of a cluster must do alike (hooks.Decisions) is decided by the chief and
carried by the step's vote (preemption.ClusterStopping), without a cluster: two workers run the
real training loop in two threads, and a fake step sums their votes as the step's all-reduce
does. The trainer end to end, with two worker processes, is in test_cluster_ends.py."""
import threading
import types

import tensorflow as tf

from t2t_lite.training import preemption
from t2t_lite.training.checkpointing import Checkpoints
from t2t_lite.training.evaluation import Evaluation
from t2t_lite.training.hooks import TrainState
from t2t_lite.training.regularisation import Regulariser, RegularisationPlan
from t2t_lite.training.steps import VOTE_NAMES
from t2t_lite.training.loop import loop

STATS = {"loss": 2.0, "nll": 2.0, "correct": 1.0, "tokens": 4.0, "source_tokens": 4.0,
         "sequences": 4.0, "grad_norm": 1.0}
STEP_SECONDS = 7.0  # on each worker's own clock


class Step:
    """The step's all-reduce of the workers' votes, for `workers` threads."""

    def __init__(self, workers):
        self.barrier = threading.Barrier(workers, timeout=60)
        self.votes = [(0.0,) * len(VOTE_NAMES)] * workers

    def voter(self, index):
        def vote(*values):
            self.votes[index] = tuple(float(v) for v in values)
        return types.SimpleNamespace(vote=vote)

    def run(self, optimizer, clock):
        self.barrier.wait()  # every vote is in
        sums = [sum(votes[i] for votes in self.votes) for i in range(len(VOTE_NAMES))]
        self.barrier.wait()  # every worker has read them before the next votes
        optimizer.iterations.assign_add(1)
        clock[0] += STEP_SECONDS
        return dict(STATS, **dict(zip(VOTE_NAMES, sums)))


class TimedKeeper:
    """CheckpointKeeper's timer on a worker's own clock."""

    def __init__(self, clock, minutes):
        self.clock, self.minutes = clock, minutes
        self.last, self.saved = clock[0], []
        self.manager = types.SimpleNamespace(latest_checkpoint=None)

    def due(self, step, within=0.0):
        return self.clock[0] + within - self.last >= self.minutes * 60

    def save(self, step):
        if step not in self.saved:
            self.saved.append(step)
            self.last = self.clock[0]
        return f"ckpt-{step}"


class Evaluator:
    def __init__(self):
        self.model = tf.Module()
        self.model.weight = tf.Variable(1.0)

    def evaluate(self):
        return {"loss": 1.0}


def test_every_worker_saves_evaluates_and_regularises_at_the_chiefs_steps(tmp_path):
    step = Step(2)
    workers = []
    for index in range(2):
        # Worker 1 started 10 s after worker 0: its timer would come due later; and its own
        # plan (1000 steps) would choose another dropout than the chief's (30 steps).
        clock = [0.0]
        optimizer = types.SimpleNamespace(iterations=tf.Variable(0, dtype=tf.int64))
        stopping = preemption.ClusterStopping(None, step.voter(index), index == 0, max_steps=30)
        state = TrainState(None, optimizer, lambda i: 1.0, 0, 30 if index == 0 else 1000,
                           stopping=stopping)
        dropout = []
        keeper = TimedKeeper(clock, minutes=1)
        hooks = [RegularisationPlan([Regulariser("dropout", "budget_dropout",
                                                 ((0, 0.0), (5, 0.1), (20, 0.3)), 0.0,
                                                 dropout.append)],
                                    examples=10, measure_after=3),
                 Checkpoints(keeper, tf.Variable(0.0, dtype=tf.float64))]
        if index == 0:
            hooks.append(Evaluation(Evaluator(), str(tmp_path / "best"), "checkpoints"))
        workers.append(types.SimpleNamespace(state=state, hooks=hooks, keeper=keeper,
                                             dropout=dropout, optimizer=optimizer, clock=clock,
                                             reason=None))
    workers[1].clock[0] = -10.0

    def run(worker):
        worker.reason = loop(worker.state, lambda: step.run(worker.optimizer, worker.clock),
                             worker.hooks)

    threads = [threading.Thread(target=run, args=(worker,)) for worker in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    chief, other = workers
    assert chief.reason == other.reason == "train_steps"
    # The chief's timer (60 s, 7 s a step) is due after step 9 and after step 19: it votes
    # with the next step, so both save at 10 and 20, and at the end (30).
    assert chief.keeper.saved == other.keeper.saved == [10, 20, 30]
    assert chief.state.best_metrics["step"] == 10  # evaluated at the saves (each as good)
    assert len(chief.state.evaluation_seconds) == 3  # 10, 20 and the end's 30
    # The chief's 12 planned passes (30 x 4 / 10) chose 0.1; worker 1 applies it too.
    assert chief.dropout == other.dropout == [0.1]
    assert chief.hooks[0].chosen == other.hooks[0].chosen


def test_the_chiefs_decisions_travel_in_the_vote_and_come_back_from_the_sums():
    votes = types.SimpleNamespace(cast=None)
    votes.vote = lambda *values: setattr(votes, "cast", values)
    chief = preemption.ClusterStopping(None, votes, True, max_steps=100)
    state = TrainState(None, None, None, 5, 100, stopping=chief)
    assert state.deciding is not state.decided and state.deciding_step == 6
    state.deciding.save = state.deciding.evaluate = True
    state.deciding.averaging_from, state.deciding.passes = 90, 2.5
    state.deciding.rates = {"budget_label_smoothing": 2}
    chief.before_step(state, None)
    sums = dict(zip(VOTE_NAMES, votes.cast))
    assert sums["save"] and sums["evaluate"] and sums["averaging_from"] == 90
    assert sums["rate_budget_label_smoothing"] == 3 and sums["rate_budget_dropout"] == 0

    other = preemption.ClusterStopping(None, votes, False, max_steps=100)
    worker = TrainState(None, None, None, 5, 100, stopping=other)
    worker.deciding.save = True  # another worker's own view is not voted
    other.before_step(worker, None)
    assert not any(votes.cast[VOTE_NAMES.index("save"):])
    worker.next_step(6, {**STATS, **sums})
    other.agree(worker)
    decided = worker.decided
    assert (decided.save, decided.evaluate, decided.averaging_from, decided.passes,
            decided.rates) == (True, True, 90, 2.5, {"budget_label_smoothing": 2})
    assert worker.averaging_from == 90 and not worker.decides
