"""How the workers of a cluster run end together: the end-of-run barrier, then leaving the
cluster at once (os._exit), without TensorFlow's teardown."""
import sys
import time

import tensorflow as tf

from t2t_lite.training import lost_workers, preemption
from t2t_lite.training import strategy as strategy_lib

# How long the other workers wait for the chief's last dev evaluation at the end of a run (a
# worker lost meanwhile is found within seconds).
BARRIER_MS = 6 * 3600 * 1000


def end_of_run_barrier(strategy, stopping_anyway=False):
    """Returns when every worker of the cluster has reached it; raises when one is gone
    (ignored when this worker stops on a signal anyway: everything is written).

    Each worker posts a key in the coordination service's key-value store and reads the
    others', a second at a time: TensorFlow's own barrier (wait_at_barrier) holds Python's GIL
    for as long as it waits, hours for the chief's last evaluation, so no signal handler could
    run meanwhile. Between reads the signal handlers run (Signals.waiting), and every few
    seconds the peers are checked (lost_workers.gone_peer). Not an all-reduce: a collective here
    could pair with one the chief alone runs meanwhile (its dev evaluation saving the best
    weights reads variables across workers) and let the other workers leave early.
    """
    from tensorflow.python.eager import context

    ctx = context.context()
    own = strategy_lib.own_task(strategy)
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    others = [(job, index) for job in ("chief", "worker")
              for index in range(len(spec.get(job, []))) if (job, index) != own]
    deadline = time.monotonic() + BARRIER_MS / 1000
    try:
        ctx.set_config_key_value(f"t2t_lite_end_of_run/{own[0]}/{own[1]}", "1")
        for job, index in others:
            reads = 0
            while True:
                try:
                    ctx.get_config_key_value(f"t2t_lite_end_of_run/{job}/{index}",
                                             timeout_in_ms=1000)
                    break
                except tf.errors.DeadlineExceededError:
                    reads += 1
                    if time.monotonic() > deadline:
                        raise lost_workers.WorkerGone(
                            lost_workers.describe(job, index),
                            f"it did not reach the end of the run within "
                            f"{BARRIER_MS / 3600000:g} h") from None
                    if reads % 5 == 0:
                        gone = lost_workers.gone_peer(own)
                        if gone:
                            raise lost_workers.WorkerGone(
                                gone, "the end-of-run barrier: no longer answering") from None
    except (lost_workers.WorkerGone, *lost_workers.LOST_WORKER_ERRORS):
        if not stopping_anyway:
            raise


def leave(strategy, chief, status):
    """Ends the process of a cluster run, without the coordination service's "The tasks have
    crashed": the service (on the chief) reports a task whose heartbeats stopped while the
    chief still runs, and a task reports the service gone while it still runs. TensorFlow's own
    teardown makes both likely: the chief's waits out the heartbeat timeout (10 s) for the
    others to shut down their agents, which Python's exit never does. So every worker leaves
    with os._exit once everything is written (preemption.leave_now, which releases the
    model_dir lock first): the others at once, the chief once their ports are closed."""
    sys.stdout.flush()
    sys.stderr.flush()
    if chief:
        wait_until_gone(strategy_lib.own_task(strategy))
    preemption.leave_now(status)


def wait_until_gone(own_task, timeout=10.0):
    """Returns once no other task of the cluster accepts connections (at most `timeout`)."""
    deadline = time.monotonic() + timeout
    for task_type, addresses in lost_workers.cluster_addresses().items():
        for index, address in enumerate(addresses):
            if (task_type, index) == own_task:
                continue
            while time.monotonic() < deadline and lost_workers.accepts(address, 1.0):
                time.sleep(0.05)
