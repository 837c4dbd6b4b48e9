"""A lost worker is reported only when the cluster shows one gone (lost_workers.lost_worker); any
other error of a collective is this worker's own and is shown as it is. Without a cluster: the
peer is a socket of this test (listening: alive; closed: gone), TensorFlow's errors are built
with the texts it uses. The trainer end to end is in test_cluster_ends.py and test_trainer.py."""
import json
import socket

import pytest
import tensorflow as tf

from t2t_lite.training import lost_workers


@pytest.fixture
def peer(monkeypatch):
    """A two-worker TF_CONFIG whose worker 1 is a listening socket: (socket, its address)."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    address = f"127.0.0.1:{listening.getsockname()[1]}"
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["127.0.0.1:1", address]}, "task": {"type": "worker", "index": 0}}))
    yield listening, address
    listening.close()


ME = ("worker", 0)


@pytest.mark.parametrize("error", [
    tf.errors.InternalError(None, None, "Failed to allocate the output buffer of MatMul"),
    tf.errors.FailedPreconditionError(None, None, "Could not find variable dense/kernel"),
    tf.errors.CancelledError(None, None, "RecvAsync is cancelled"),
])
def test_an_error_of_its_own_with_every_worker_alive_is_not_a_lost_worker(peer, error):
    assert lost_workers.lost_worker(error, ME) is None


def test_a_transport_error_waits_for_a_confirmation_and_without_one_is_its_own(peer):
    error = tf.errors.UnavailableError(None, None, "Socket closed")
    assert lost_workers.lost_worker(error, ME, confirm_seconds=1.0) is None


def test_a_closed_peer_port_confirms_a_transport_error(peer):
    listening, address = peer
    listening.close()  # the peer's process is gone: its port refuses connections
    error = tf.errors.AbortedError(None, None, "Collective ops is aborted by: Socket closed")
    assert lost_workers.lost_worker(error, ME) == f"worker 1 ({address})"


def test_the_coordination_services_words_name_the_lost_task(peer):
    _, address = peer
    error = tf.errors.UnavailableError(
        None, None, "Task /job:worker/replica:0/task:1 heartbeat timeout. This indicates that "
        "the remote task has failed, got preempted, or crashed unexpectedly.")
    assert lost_workers.lost_worker(error, ME) == f"worker 1 ({address})"
    crashed = tf.errors.InternalError(None, None, "The tasks have crashed. Check the task logs "
                                                  "for an earlier error")
    assert lost_workers.lost_worker(crashed, ME) == "a worker"  # alive ports: not named


def test_a_worker_gone_at_the_barrier_is_one_line(tmp_path, peer):
    _, address = peer
    gone = lost_workers.WorkerGone(f"worker 1 ({address})", "the end-of-run barrier: no longer "
                                                          "answering")
    line = str(lost_workers.lost_worker_error(gone, 40, str(tmp_path), ME, gone.worker))
    assert line == (f"worker 1 ({address}) went away at step 40 (the end-of-run barrier: no "
                    "longer answering); no checkpoint was written yet; re-running every "
                    "worker's command starts the run again")


def test_the_lost_worker_line_names_the_peer_from_tensorflows_message(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CONFIG", '{"cluster": {"worker": ["10.0.0.1:1", "10.0.0.2:2"]}, '
                                    '"task": {"type": "worker", "index": 0}}')
    error = tf.errors.UnavailableError(None, None, (
        "Graph execution error:\n\nDetected at node x\n  File \"a.py\", line 1\n"
        "{{function_node __wrapped__X_device_/job:worker/replica:0/task:0/device:CPU:0}} "
        "Collective ops is aborted by: Socket closed\nAdditional GRPC error information from "
        "remote target /job:worker/replica:0/task:1 while calling RecvBuf"))
    message = str(lost_workers.lost_worker_error(error, 37, str(tmp_path), ("worker", 0)))
    assert message == ("worker 1 (10.0.0.2:2) went away at step 37 (Collective ops is aborted "
                       "by: Socket closed); no checkpoint was written yet; re-running every "
                       "worker's command starts the run again")
