"""Stopping where every worker agrees: on SIGTERM / SIGINT ("save now, then exit", as clusters
and spot VMs ask with a grace period), on the chief's own decisions (--train_steps under a budget
plan, --train_minutes, early stopping). A worker of the cluster that went away is
lost_workers.py's; how a cluster run's workers end together, cluster_end.py's.

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
import os
import signal
import threading
import time

from t2t_lite import exit_status, process_end
from t2t_lite.training.hooks import Decisions
from t2t_lite.training.regularisation import RULES
from t2t_lite.training.steps import DECISION_NAMES

# 128 + the signal's number: what a shell reports for a process the signal ended, and what
# Kubernetes and Slurm record for a preempted task.
EXIT_STATUS = {signal.SIGTERM: exit_status.TERMINATED, signal.SIGINT: exit_status.INTERRUPTED}
# The chief's reasons to stop, as the numbers its vote carries (0: none).
CHIEF_REASONS = ("train_steps", "train_minutes", "early_stopping")
OTHER_REASON = len(CHIEF_REASONS) + 1  # a hook's reason not listed above


def signal_name(signum):
    return signal.Signals(signum).name


class Interrupted(BaseException):
    """A signal during the final dev evaluation (Signals.ending): the evaluation is skipped.
    A BaseException, so that no `except Exception` on the way swallows it."""

    def __init__(self, signum):
        super().__init__(signal_name(signum))
        self.signum = signum


class Signals:
    """SIGTERM and SIGINT handlers for one run, by the phase it is in.

    - Until `arm()` (the loop's first step) a signal ends the process at once with the signal's
      exit status: there is nothing to save.
    - While training a signal is only recorded; the loop reads the record at the next step
      boundary, saves and exits. A second SIGTERM is ignored, so it cannot interrupt the save (a
      Python handler never runs inside TensorFlow's write, only between the writes).
    - `ending()`: the last checkpoint is written and the final dev evaluation runs. A signal
      raises Interrupted there, which skips the evaluation; the trainer exits with the status.
    - `waiting(line)`: the end-of-run barrier, where the main thread waits inside TensorFlow
      and no Python handler runs: a signal prints `line(signum)` and ends the process at once.
    - In every phase after `arm()`, a second SIGINT (Ctrl-C twice) ends the process at once,
      whatever it is doing (a checkpoint being written is then not kept; the last whole one is).

    The last two act in a thread that reads the signal numbers Python's C-level handler writes
    to a wakeup pipe (signal.set_wakeup_fd) as they arrive, so they work while the main thread
    is blocked in TensorFlow (a collective, a barrier, a long write).
    """

    def __init__(self):
        self.received = None  # the first signal's number, once armed
        self.armed = False
        self.phase = "starting"  # "training", "ending", "waiting", "done"
        self._interrupts = 0
        self._announced = False
        self._line = None
        self._previous = {}
        self._wakeup = None  # (read end, write end, the wakeup fd that was there before)

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
            if self._wakeup is None:
                read, write = os.pipe()
                os.set_blocking(write, False)
                previous = signal.set_wakeup_fd(write, warn_on_full_buffer=False)
                self._wakeup = (read, write, previous)
                threading.Thread(target=self._watch, args=(read,), daemon=True,
                                 name="t2t_lite signals").start()
        return self

    def restore(self):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        self._previous = {}
        if self._wakeup is not None:
            read, write, previous = self._wakeup
            self._wakeup = None
            signal.set_wakeup_fd(previous)
            os.close(write)  # the watcher reads the end of the pipe and closes it

    def arm(self):
        self.install()
        self.armed = True
        self.phase = "training"

    def ending(self):
        """The last checkpoint is written; the final dev evaluation comes: a signal skips it
        (Interrupted, raised here for one that came during the save)."""
        if self.received is not None:
            self.phase = "done"
            raise Interrupted(self.received)
        self.phase = "ending"

    def waiting(self, line):
        """The end-of-run barrier begins: a signal prints `line(signum)` and exits at once."""
        self._line, self.phase = line, "waiting"

    def settle(self):
        """Past the final evaluation and the barrier: a signal is only recorded."""
        self.phase = "done"

    def _handle(self, signum, frame):
        del frame
        if self.phase == "ending" and self.received is None:
            self.received = signum
            self.phase = "done"
            raise Interrupted(signum)
        if self.armed:
            if self.received is None:
                self.received = signum
            return
        # os.write, not print: the handler may run in the middle of a print to the same stream.
        os.write(2, f"{signal_name(signum)} before the first step: nothing to save, "
                    f"exiting\n".encode())
        raise SystemExit(EXIT_STATUS[signum])

    def _watch(self, read):
        try:
            while True:
                data = os.read(read, 64)
                if not data:
                    return
                for signum in data:
                    if signum in EXIT_STATUS and self.armed:
                        self._now(signum)
        finally:
            os.close(read)

    def _now(self, signum):
        """What cannot wait for the main thread: the line saying a signal was received, a
        second SIGINT, a signal at the barrier."""
        if self.phase == "training" and not self._announced:
            self._announced = True
            again = (" (Ctrl-C again stops at once, without saving)"
                     if signum == signal.SIGINT else "")
            os.write(2, f"{signal_name(signum)} received: saving after the step in progress, "
                        f"then exiting{again}\n".encode())
        if signum == signal.SIGINT:
            self._interrupts += 1
            if self._interrupts >= 2:
                os.write(2, b"SIGINT again: stopping at once, without saving (the last "
                            b"checkpoint written whole is kept)\n")
                leave_now(EXIT_STATUS[signum])
        if self.phase == "waiting":
            line = self._line(signum) if self._line else None
            if line:
                os.write(1, (line + "\n").encode())
            leave_now(EXIT_STATUS[signum])


# What must run before the process ends through leave_now (the model_dir lock's release).
_BEFORE_EXIT = []


def before_exit(function):
    """Registers `function` to run before leave_now ends the process; returns it."""
    _BEFORE_EXIT.append(function)
    return function


def forget(function):
    if function in _BEFORE_EXIT:
        _BEFORE_EXIT.remove(function)


def leave_now(status):
    """Ends the process with `status` at once (os._exit: no TensorFlow teardown, which under a
    cluster waits for the other tasks), after running what before_exit registered, so the
    model_dir lock is released on every way out, and flushing the output
    (process_end.end_now)."""
    for function in reversed(list(_BEFORE_EXIT)):
        try:
            function()
        except Exception:  # pylint: disable=broad-except  (leaving anyway)
            pass
    process_end.end_now(status)


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
        decisions = (0,) * len(DECISION_NAMES)
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
