"""The step loop: steps until the step cap, the deadline, a hook's reason to stop or a signal,
with every hook called around each step (hooks.py) and who decides the stop asked at each
boundary (preemption.py)."""
import time

from t2t_lite.training import preemption


def loop(state, train_step, hooks):
    """Steps until state.total_steps, state.deadline, a hook's reason to stop or a signal (as
    state.stopping decides: preemption.py); returns the reason. `train_step()` applies one
    optimizer step and returns its statistics."""
    stopping = state.stopping or preemption.Stopping(None)
    for hook in hooks:
        hook.begin(state)
    if stopping.signals:
        stopping.signals.arm()  # from here on a signal saves, at the next step boundary
    reason = None
    while reason is None:
        own = None
        if state.step >= state.total_steps:
            own = "train_steps"
        elif state.deadline is not None and time.monotonic() >= state.deadline:
            own = "train_minutes"
        reason = stopping.before_step(state, own)
        if reason is None:
            start = time.monotonic()
            stats = train_step()
            state.next_step(int(state.optimizer.iterations.numpy()), stats,
                            time.monotonic() - start)
            stopping.agree(state)
            # Every hook sees the step, also after one asks to stop.
            reasons = [hook.after_step(state) for hook in hooks]
            reason = stopping.after_step(state, next((r for r in reasons if r), None))
    state.signal = stopping.signal
    state.stopped_because = reason
    state.next_step(state.step)
    for hook in hooks:
        hook.end(state)
        if state.saved and stopping.signals and not state.signal:
            # The last checkpoint is written: a signal from here on (or one that came during
            # the save) skips what is left, the final dev evaluation (preemption.Interrupted).
            stopping.signals.ending()
    if stopping.signals:
        stopping.signals.settle()  # from here a signal is recorded, for the caller to read
    return state.stopped_because
