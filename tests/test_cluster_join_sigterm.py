"""A SIGTERM while the workers of a cluster join ends every worker with 143 once they have
joined, before the first step.

What a cluster sends is "save now, then exit" (DESIGN.md); before the first step there is nothing
to save. tf.distribute.MultiWorkerMirroredStrategy() puts TensorFlow's own SIGTERM handler (its
coordination service's preemption notifier) in place of the trainer's while the main thread waits
in it for the other workers, with the GIL held, so the trainer cannot see the signal; TensorFlow
records it in the coordination service's key TF_DEFAULT_PREEMPTION_NOTICE_KEY (the task that got
it). Every worker reads that key right after the join, once the trainer's handlers are back, and
waits until every other has read it before any leaves: worker 0 holds the service
(strategy.stop_if_signalled_while_joining). The test waits for states (the join line, worker 0
listening, the processes' ends), never a guessed number of seconds.
"""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from t2t_lite import exit_status

pytestmark = pytest.mark.slow  # two trainers (TensorFlow) forming a cluster

PROBLEM = ["--problem=algorithmic_reverse", "--problem_param=max_length=8",
           "--problem_param=train_samples=500", "--problem_param=eval_samples=20"]


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_until_listening(address, process, deadline=180):
    host, port = address.rsplit(":", 1)
    end = time.monotonic() + deadline
    while time.monotonic() < end and process.poll() is None:
        try:
            socket.create_connection((host, int(port)), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError(f"{address} never listened")


class _Worker:
    def __init__(self, index, workers, tmp_path):
        bin_dir = os.path.dirname(sys.executable)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="3",
                   PYTHONUNBUFFERED="1", T2T_LITE_CLUSTER_TIMEOUT="150",
                   TF_CONFIG='{"cluster": {"worker": ["%s", "%s"]}, '
                             '"task": {"type": "worker", "index": %d}}' % (*workers, index))
        self.process = subprocess.Popen(
            [os.path.join(bin_dir, "t2t-lite-trainer"), *PROBLEM,
             f"--data_dir={tmp_path / 'D'}", f"--model_dir={tmp_path / 'M'}",
             "--hparams_set=tiny", "--train_steps=5", "--bleu_sentences=0", "--eval_batches=1"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.lines, self.joining = [], threading.Event()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.process.stdout:
            self.lines.append(line)
            if line.startswith("cluster: worker "):
                self.joining.set()

    def end(self, timeout):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        finally:
            self.process.kill()
            self.process.wait()
            self.reader.join(10)

    def output(self):
        return "".join(self.lines)[-3000:]


def test_a_sigterm_while_the_workers_join_stops_them_once_joined(tmp_path):
    bin_dir = os.path.dirname(sys.executable)
    if not os.path.exists(os.path.join(bin_dir, "t2t-lite-trainer")):
        pytest.skip(f"t2t-lite-trainer is not installed next to {sys.executable}")
    subprocess.run([os.path.join(bin_dir, "t2t-lite-datagen"), *PROBLEM,
                    f"--data_dir={tmp_path / 'D'}"], check=True, capture_output=True,
                   env=dict(os.environ, CUDA_VISIBLE_DEVICES=""), timeout=300)
    workers = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    first = _Worker(0, workers, tmp_path)
    second = None
    try:
        assert first.joining.wait(180), first.output()
        # Inside the join: worker 0 (the coordination service's leader) listens, and waits for
        # worker 1 to register.
        _wait_until_listening(workers[0], first.process)
        first.process.send_signal(signal.SIGTERM)  # what a cluster sends; nothing to save yet
        second = _Worker(1, workers, tmp_path)  # a worker that starts later; then they join
        statuses = [first.end(240), second.end(60)]
    finally:
        first.process.kill()
        if second is not None:
            second.process.kill()
    outputs = f"worker 0:\n{first.output()}\nworker 1:\n{second.output()}"
    assert statuses == [exit_status.TERMINATED] * 2, f"statuses {statuses}\n{outputs}"
    assert "step 1/" not in outputs, outputs  # they stopped before the first step
