"""Stopping where every worker agrees: on SIGTERM / SIGINT ("save now, then exit", as clusters
and spot VMs ask with a grace period), on the chief's own decisions (--train_steps under a budget
plan, --train_minutes, early stopping), and when a worker of the cluster went away.

On one machine a stop takes effect at the step boundary where it is seen. Under
MultiWorkerMirroredStrategy every worker must stop, and save, at the same step: a checkpoint is
written collectively, and a worker that stops alone leaves the others blocked in their next
all-reduce. Each worker's request is therefore a vote that travels with the next step: the step
already sums its statistics over all replicas in one all-reduce (steps.py), and the votes are
three more numbers in that vector. After the step every worker reads the same sums, so all stop
after that same step, with no extra collective and nothing read per step but a Python flag.

TensorFlow's tf.distribute.experimental.PreemptionCheckpointHandler solves part of this
differently, and is not used: it handles SIGTERM only, agrees on the step through the
coordination service's key-value store (relying on workers being at most one step apart), then
saves through its own CheckpointManager and exits, past the trainer's own end of run (the
divergence check before the save, the training-time budget, the line saying what was saved);
and it knows nothing of the chief's decisions, which must stop every worker too.
"""
import json
import os
import re
import signal
import threading
import time

import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.training.hooks import Decisions
from t2t_lite.training.regularisation import RULES

# 128 + the signal's number: what a shell reports for a process the signal ended, and what
# Kubernetes and Slurm record for a preempted task.
EXIT_STATUS = {signal.SIGTERM: 143, signal.SIGINT: 130}
# The chief's reasons to stop, as the numbers its vote carries (0: none).
CHIEF_REASONS = ("train_steps", "train_minutes", "early_stopping")
OTHER_REASON = len(CHIEF_REASONS) + 1  # a hook's reason not listed above


def signal_name(signum):
    return signal.Signals(signum).name


class Signals:
    """SIGTERM and SIGINT handlers for one run.

    Until `arm()` (the loop's first step) a signal ends the process at once with the signal's
    exit status: there is nothing to save. After it a signal is only recorded; the loop reads the
    record at the next step boundary, saves and exits. A second signal is ignored, so it cannot
    interrupt the save (a Python handler never runs inside TensorFlow's write, only between the
    writes; the handler itself does nothing but note the signal).
    """

    def __init__(self):
        self.received = None  # the first signal's number, once armed
        self.armed = False
        self._previous = {}

    def install(self):
        """Installs the handlers; again after TensorFlow's runtime starts (and at `arm`):
        MultiWorkerMirroredStrategy's coordination service installs a native SIGTERM handler
        of its own, which would swallow the signal."""
        # signal.signal works in the main thread only; a trainer run from another thread (a
        # library caller's) keeps the process' own handling.
        if threading.current_thread() is threading.main_thread():
            for signum in EXIT_STATUS:
                previous = signal.signal(signum, self._handle)
                self._previous.setdefault(signum, previous)
        return self

    def restore(self):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}

    def arm(self):
        self.install()
        self.armed = True

    def _handle(self, signum, frame):
        del frame
        if self.armed:
            if self.received is None:
                self.received = signum
            return
        # os.write, not print: the handler may run in the middle of a print to the same stream.
        os.write(2, f"{signal_name(signum)} before the first step: nothing to save, "
                    f"exiting\n".encode())
        raise SystemExit(EXIT_STATUS[signum])


class Stopping:
    """One process' stops: the loop's own reason, a signal, or a hook's, at once."""

    ahead = 0  # the hooks decide for the step just taken (hooks.Decisions)
    decides = True

    def __init__(self, signals):
        self.signals = signals
        self.signal = None  # the signal the run stopped on

    def before_step(self, state, own):
        """`own`: the loop's reason to stop before the next step, or None. Returns the reason
        the run stops for now, or None to take the step."""
        if own:
            return own
        if self.signals and self.signals.received:
            self.signal = self.signals.received
            return signal_name(self.signal)
        return None

    def agree(self, state):
        """Before the hooks see a step: what every worker does at it (hooks.Decisions). One
        process' hooks decide it themselves."""

    def after_step(self, state, hook_reason):
        """The reason to stop after this step (`hook_reason`: the first hook's), or None."""
        return hook_reason


class ClusterStopping(Stopping):
    """Stops of a MultiWorkerMirroredStrategy run, agreed through the step's all-reduce.

    Every worker knows the --train_steps cap and stops there on its own. Everything else is a
    vote that the next step carries (TrainSteps.vote): a signal on any worker, and the chief's
    reasons, which the chief alone knows (its clock for --train_minutes, its budget plan's last
    step, its dev evaluations for early stopping). The chief votes one step ahead where it can
    see the stop coming (the plan's last step, a deadline within a step's time), so the run ends
    where a single worker would; early stopping ends it one step later than on one machine.

    The chief's decisions (hooks.Decisions: save, evaluate, the averaging window, the
    regularisation rates) travel the same way: its hooks decide one step ahead, the vote carries
    the decisions with that step, and `agree` gives every worker, the chief too, what the step's
    sums say before the hooks act on it. So every worker saves at the same step, which is what
    makes a save collective, whatever each worker's own clock says.
    """

    ahead = 1

    def __init__(self, signals, steps, chief, max_steps, plan=None):
        super().__init__(signals)
        self.steps, self.chief, self.max_steps = steps, chief, max_steps
        # A budgeted run's (planned warmup, planned total, schedule's warmup, schedule's total):
        # each worker's planner writes the first two, measured on its own clock; the chief's
        # values travel with the next step and every worker, the chief too, then sets its
        # schedule's two from them, so all apply the same learning rate at every step.
        self.plan = plan
        self.pending = None  # a hook's reason on the chief, voted with the next step
        self.signal_elsewhere = False  # the agreed signal came from another worker

    def before_step(self, state, own):
        if state.step >= self.max_steps:
            return "train_steps"
        received = self.signals.received if self.signals else None
        term = float(received == signal.SIGTERM)
        interrupt = float(received == signal.SIGINT)
        code = 0
        if self.chief:
            reason = self.pending or own or self._coming(state)
            if reason:
                code = (CHIEF_REASONS.index(reason) + 1 if reason in CHIEF_REASONS
                        else OTHER_REASON)
        warmup = total = 0
        if self.chief and self.plan:
            warmup, total = int(self.plan[0].numpy()), int(self.plan[1].numpy())
        decisions = (0,) * (4 + len(RULES))
        if self.chief:
            deciding = state.deciding
            decisions = (deciding.save, deciding.evaluate, deciding.averaging_from or 0,
                         deciding.passes or 0.0,
                         *(deciding.rates[rule] + 1 if rule in deciding.rates else 0
                           for rule in RULES))
        self.steps.vote(term, interrupt, code, warmup, total, *decisions)
        return None

    @property
    def decides(self):
        return self.chief

    def agree(self, state):
        stats = state.stats or {}
        rates = {rule: int(round(stats[f"rate_{rule}"])) - 1 for rule in RULES
                 if stats.get(f"rate_{rule}", 0.0) > 0.5}
        state.decided = Decisions(
            save=stats.get("save", 0.0) > 0.5, evaluate=stats.get("evaluate", 0.0) > 0.5,
            averaging_from=int(round(stats.get("averaging_from", 0.0))) or None,
            passes=float(stats.get("passes", 0.0)) if rates else None, rates=rates)

    def _coming(self, state):
        """The chief's reason to stop after the next step, seen before it."""
        if state.step + 1 >= state.total_steps:
            return "train_steps"
        if (state.deadline is not None
                and time.monotonic() + state.step_seconds >= state.deadline):
            return "train_minutes"
        return None

    def after_step(self, state, hook_reason):
        if self.chief and hook_reason and not self.pending:
            self.pending = hook_reason
        stats = state.stats or {}
        if self.plan and stats.get("plan_total", 0.0) > 0.5:
            for variable, key in zip(self.plan[2:], ("plan_warmup", "plan_total")):
                value = int(round(stats[key]))
                if int(variable.numpy()) != value:
                    variable.assign(value)
        term, interrupt = stats.get("stop_sigterm", 0.0), stats.get("stop_sigint", 0.0)
        if term > 0.5 or interrupt > 0.5:
            self.signal = signal.SIGTERM if term > 0.5 else signal.SIGINT
            received = self.signals.received if self.signals else None
            self.signal_elsewhere = received != self.signal
            return signal_name(self.signal)
        code = int(round(stats.get("stop_chief", 0.0)))
        if code:
            if code <= len(CHIEF_REASONS):
                return CHIEF_REASONS[code - 1]
            return self.pending or "stopped by the chief"
        return None


def lost_worker_error(error, step, model_dir, own_task):
    """The one-line UserError for a collective that failed because a worker went away: which
    worker (from TensorFlow's message, else the first peer whose port no longer answers), the
    last checkpoint, and how to resume."""
    worker = _named_peer(str(error), own_task) or _unreachable_peer(own_task)
    latest = tf.train.latest_checkpoint(model_dir)
    resume = (f"re-run every worker's command to resume from the last checkpoint, {latest}"
              if latest else "no checkpoint was written yet; re-running every worker's command "
              "starts the run again")
    return UserError(f"{worker or 'a worker'} went away at step {step} "
                     f"({_first_line(error)}); {resume}")


# TensorFlow's errors of a collective whose peer is gone, or that the health check aborted.
LOST_WORKER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError,
                      tf.errors.CancelledError, tf.errors.DeadlineExceededError,
                      tf.errors.InternalError, tf.errors.FailedPreconditionError)


def _cluster():
    try:
        return json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
    except ValueError:
        return {}


def _describe(task_type, index):
    addresses = _cluster().get(task_type, [])
    where = f" ({addresses[index]})" if index < len(addresses) else ""
    return f"{task_type} {index}{where}"


def _named_peer(message, own_task):
    for task_type, index in re.findall(r"/job:(\w+)/replica:\d+/task:(\d+)", message):
        if (task_type, int(index)) != own_task:
            return _describe(task_type, int(index))
    return None


def _unreachable_peer(own_task, timeout=2.0):
    import socket

    for task_type, addresses in _cluster().items():
        for index, address in enumerate(addresses):
            if (task_type, index) == own_task:
                continue
            host, _, port = address.rpartition(":")
            try:
                socket.create_connection((host, int(port)), timeout=timeout).close()
            except (OSError, ValueError):
                return _describe(task_type, index)
    return None


def wait_until_gone(own_task, timeout=10.0):
    """Returns once no other task of the cluster accepts connections (at most `timeout`)."""
    import socket

    deadline = time.monotonic() + timeout
    for task_type, addresses in _cluster().items():
        for index, address in enumerate(addresses):
            if (task_type, index) == own_task:
                continue
            host, _, port = address.rpartition(":")
            while time.monotonic() < deadline:
                try:
                    socket.create_connection((host, int(port)), timeout=1.0).close()
                except (OSError, ValueError):
                    break
                time.sleep(0.05)


def _first_line(error):
    text = getattr(error, "message", None) or str(error)
    for line in text.splitlines():
        line = re.sub(r"\{\{[^}]*\}\}", "", line).strip()  # {{function_node ...}} prefixes
        if line and not line.startswith(("Graph execution error", "Detected at node", "File ")):
            return line[:200]
    return type(error).__name__
