"""Which worker of a cluster went away, told apart from an error of this worker's own, and the
one line that says so.

Under MultiWorkerMirroredStrategy a worker that goes away (preempted, crashed, its machine
gone) fails the others' next collective, or leaves them waiting at the end-of-run barrier
(cluster_end.py). TensorFlow raises one of LOST_WORKER_ERRORS then, which an error of this
worker's own can raise too: `lost_worker` asks the cluster (the coordination service, the peers'
ports) which task is gone, and `exit_if_lost` ends the process with one `error:` line naming it,
the last checkpoint and how to resume.
"""
import json
import os
import re
import sys
import threading
import time

import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.errors import UserError
from t2t_lite.training import preemption


def exit_if_lost(error, own_task, step, model_dir):
    """Ends the process with the one `error:` line (status 1) when `error` (WorkerGone or one of
    LOST_WORKER_ERRORS) shows a worker of the cluster gone, before the first step, during the
    steps or at the end-of-run barrier; returns when it is an error of this worker's own."""
    lost = (error.worker if isinstance(error, WorkerGone) else lost_worker(error, own_task))
    if lost is None:
        return
    line = lost_worker_error(error, step, model_dir, own_task, lost)
    # The line cli.run prints for a UserError, then out at once: TensorFlow's teardown would
    # wait out the lost task's heartbeats and add its own complaint after the line.
    print(f"error: {line}", file=sys.stderr, flush=True)
    preemption.leave_now(exit_status.USER_ERROR)


def lost_worker_error(error, step, model_dir, own_task, worker=None):
    """The one-line UserError for a collective that failed because a worker went away: which
    worker (`worker`, as lost_worker names it; else from TensorFlow's message or the first peer
    whose port no longer answers), the last checkpoint, and how to resume."""
    worker = worker or _named_peer(str(error), own_task) or _unreachable_peer(own_task)
    latest = tf.train.latest_checkpoint(model_dir)
    resume = (f"re-run every worker's command to resume from the last checkpoint, {latest}"
              if latest else "no checkpoint was written yet; re-running every worker's command "
              "starts the run again")
    return UserError(f"{worker or 'a worker'} went away at step {step} "
                     f"({first_line(error)}); {resume}")


# TensorFlow's errors of a collective whose peer is gone, or that the health check aborted.
# Each is also what a real error of this worker can raise: lost_worker tells them apart.
LOST_WORKER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError,
                      tf.errors.CancelledError, tf.errors.DeadlineExceededError,
                      tf.errors.InternalError, tf.errors.FailedPreconditionError)

# The coordination service's own words (TensorFlow 2.21) for a task that is gone: its
# heartbeats stopped, it crashed or disconnected, or the service itself (the chief) stopped.
TASK_GONE = re.compile(
    r"heartbeat timeout|stopped sending heartbeats|tasks have crashed|already disconnected|"
    r"TASKSTATE_DISCONNECTED|coordination service has stopped|already-in-error task|"
    r"CoordinationServiceError", re.IGNORECASE)
# A collective's transport losing its peer: a task gone, once the peer's closed port or the
# coordination service confirms it.
PEER_CLOSED = re.compile(
    r"socket closed|connection reset|connection refused|failed to connect|broken pipe|"
    r"stream removed|connection aborted|collective ops is aborted", re.IGNORECASE)
# How long a peer the transport lost may take to be declared gone by the coordination service:
# its heartbeat timeout (10 s) and some margin.
CONFIRM_SECONDS = 15.0


class WorkerGone(Exception):
    """A worker found gone outside a collective (the end-of-run barrier): `worker` as a message
    names it, and what showed it."""

    def __init__(self, worker, reason):
        super().__init__(reason)
        self.worker = worker


def gone_peer(own_task):
    """A peer whose port refuses connections, or that the coordination service reports in
    error, as a message names it; None while all answer."""
    return _unreachable_peer(own_task) or _gone_per_service(own_task)


def describe(task_type, index):
    """How a message names a task: "worker 1 (10.0.0.2:2222)"."""
    return _describe(task_type, index)


def lost_worker(error, own_task, confirm_seconds=CONFIRM_SECONDS):
    """Which worker `error` (one of LOST_WORKER_ERRORS) shows gone, as a message names it
    ("worker 1 (10.0.0.2:2222)", "a worker"); None when no task of the cluster is gone: the
    error is this worker's own, to be shown as it is.

    A task is gone when the coordination service says so, in the error's text (TASK_GONE) or
    asked (its task states; a service that no longer answers: the chief that runs it), or when
    the peer's port refuses connections. A transport error (PEER_CLOSED) waits up to
    `confirm_seconds` for that; any other error is asked once."""
    text = getattr(error, "message", None) or str(error)
    named = _named_peer(text, own_task)
    if TASK_GONE.search(text):
        return named or _unreachable_peer(own_task) or _gone_per_service(own_task) or "a worker"
    deadline = time.monotonic() + (confirm_seconds if PEER_CLOSED.search(text) else 0.0)
    while True:
        gone = gone_peer(own_task)
        if gone:
            return gone
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.5)


def _gone_per_service(own_task, timeout=5.0):
    """The first task the coordination service reports in error (or its own leader, when the
    service no longer answers); None when it reports none, or cannot be asked."""
    from tensorflow.python.eager import context

    cluster = cluster_addresses()
    jobs = [(job, len(cluster[job])) for job in ("chief", "worker") if cluster.get(job)]
    if not jobs:
        return None
    answer = {}

    def ask():
        try:
            answer["states"] = context.context().get_task_states(jobs)
        except tf.errors.UnavailableError as error:
            answer["unavailable"] = error
        except Exception as error:  # pylint: disable=broad-except  (no service: unknown)
            answer["unknown"] = error

    asking = threading.Thread(target=ask, daemon=True)
    asking.start()
    asking.join(timeout)
    if "unavailable" in answer:
        leader = (jobs[0][0], 0)
        return None if leader == tuple(own_task) else _describe(*leader)
    states = answer.get("states")
    if not states:
        return None
    tasks = [(job, index) for job, count in jobs for index in range(count)]
    for task, state in zip(tasks, states):
        if state and task != tuple(own_task):
            return _describe(*task)
    return None


def cluster_addresses():
    """The cluster TF_CONFIG names, {task type: [host:port, ...]}; {} without one."""
    try:
        return json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster", {})
    except ValueError:
        return {}


def _describe(task_type, index):
    addresses = cluster_addresses().get(task_type, [])
    where = f" ({addresses[index]})" if index < len(addresses) else ""
    return f"{task_type} {index}{where}"


def _named_peer(message, own_task):
    for task_type, index in re.findall(r"/job:(\w+)/replica:\d+/task:(\d+)", message):
        if (task_type, int(index)) != own_task:
            return _describe(task_type, int(index))
    return None


def accepts(address, timeout=2.0):
    """Whether host:port accepts a TCP connection within `timeout` seconds."""
    import socket

    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except (OSError, ValueError):
        return False
    return True


def _unreachable_peer(own_task, timeout=2.0):
    for task_type, addresses in cluster_addresses().items():
        for index, address in enumerate(addresses):
            if (task_type, index) != own_task and not accepts(address, timeout):
                return _describe(task_type, index)
    return None


def first_line(error):
    """An error's first line that says something (TensorFlow's prefixes dropped), at most 200
    characters."""
    text = getattr(error, "message", None) or str(error)
    for line in text.splitlines():
        line = re.sub(r"\{\{[^}]*\}\}", "", line).strip()  # {{function_node ...}} prefixes
        if line and not line.startswith(("Graph execution error", "Detected at node", "File ")):
            return line[:200]
    return type(error).__name__
