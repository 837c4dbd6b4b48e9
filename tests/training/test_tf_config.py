"""TF_CONFIG mistakes end with one `error:` line (training/strategy.py), checked before
TensorFlow reads it; a cluster that does not form within T2T_LITE_CLUSTER_TIMEOUT ends naming the
address that refused connections."""
import json
import os
import re
import socket
import subprocess
import sys
import time

import pytest

from t2t_lite import exit_status, problems
from t2t_lite.data import datagen
from t2t_lite.errors import UserError
from t2t_lite.training import strategy

PARAMS = ["max_length=8", "train_samples=200", "eval_samples=20"]


def _config(workers, task=None, **extra):
    config = {"cluster": {"worker": workers}, **extra}
    if task is not None:
        config["task"] = task
    return json.dumps(config)


def _worker(index):
    return {"type": "worker", "index": index}


TWO = ["10.0.0.1:2222", "10.0.0.2:2222"]


@pytest.mark.parametrize("tf_config,message", [
    ("{not json", r"^TF_CONFIG is not valid JSON: "),
    ('{"task": {"type": "worker", "index": 0}}', r'^TF_CONFIG has no "cluster" object'),
    (_config(TWO), r'^TF_CONFIG has no "task" with a type and an index'),
    (_config(TWO, {"type": "worker"}), r'^TF_CONFIG has no "task" with a type and an index'),
    (_config(TWO, _worker(2)),
     r"^TF_CONFIG's task index 2 is out of range: the cluster has 2 worker\(s\), indices 0 to 1$"),
    (_config(TWO, _worker(-1)), r"^TF_CONFIG's task index -1 is out of range"),
    (_config(TWO, _worker("0")), r"^TF_CONFIG's task index \"0\" is out of range"),
    (_config(TWO, {"type": "evaluator", "index": 0}),
     r"^TF_CONFIG's task type \"evaluator\" is not one of the cluster's worker$"),
    (_config(["10.0.0.1:2222", "10.0.0.1:2222"], _worker(0)),
     r"^TF_CONFIG lists 10\.0\.0\.1:2222 twice \(worker 0 and worker 1\): each worker needs an "
     r"address of its own$"),
    (_config(["10.0.0.1:2222", "10.0.0.2"], _worker(0)),
     r'^TF_CONFIG\'s worker 1 is "10\.0\.0\.2", not a "host:port" address$'),
    (_config([], _worker(0)), r"^TF_CONFIG's cluster\.worker is not a list"),
])
def test_a_tf_config_mistake_is_one_user_error(monkeypatch, tf_config, message):
    monkeypatch.setenv("TF_CONFIG", tf_config)
    with pytest.raises(UserError, match=message):
        strategy.make_strategy()


def test_a_well_formed_tf_config_passes_and_counts_its_workers(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", _config(TWO, _worker(1)))
    assert strategy.tf_config()["task"] == _worker(1)
    assert strategy.cluster_workers() == 2
    # One worker needs no task; no TF_CONFIG is no cluster.
    monkeypatch.setenv("TF_CONFIG", _config(TWO[:1]))
    assert strategy.cluster_workers() == 1
    monkeypatch.delenv("TF_CONFIG")
    assert strategy.tf_config() == {} and strategy.cluster_workers() == 0


@pytest.mark.parametrize("value", ["0", "-5", "soon"])
def test_a_bad_cluster_timeout_is_one_user_error(monkeypatch, value):
    monkeypatch.setenv(strategy.CLUSTER_TIMEOUT_ENV, value)
    with pytest.raises(UserError, match=rf"^T2T_LITE_CLUSTER_TIMEOUT={value} is not a positive"):
        strategy.cluster_timeout()


def test_the_cluster_timeout_defaults_to_ten_minutes(monkeypatch):
    monkeypatch.delenv(strategy.CLUSTER_TIMEOUT_ENV, raising=False)
    assert strategy.cluster_timeout() == strategy.DEFAULT_CLUSTER_TIMEOUT == 600
    monkeypatch.setenv(strategy.CLUSTER_TIMEOUT_ENV, "7.5")
    assert strategy.cluster_timeout() == 7.5


# Through the real CLI: one line on stderr, status 1, no traceback.

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("reverse_data")
    datagen.run(problems.build("algorithmic_reverse", PARAMS), str(path))
    return str(path)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _trainer(data_dir, model_dir, tf_config, timeout=None):
    env = dict(os.environ, TF_CONFIG=tf_config, TF_CPP_MIN_LOG_LEVEL="2",
               KERAS_BACKEND="tensorflow", CUDA_VISIBLE_DEVICES="")
    if timeout is not None:
        env[strategy.CLUSTER_TIMEOUT_ENV] = str(timeout)
    command = [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
               f"--data_dir={data_dir}", f"--model_dir={model_dir}", "--hparams_set=tiny",
               "--train_steps=1", *[f"--problem_param={p}" for p in PARAMS]]
    start = time.monotonic()
    # run() waits for the process to exit; its own timeout only guards against a hang.
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    return done, time.monotonic() - start


@pytest.mark.slow
@pytest.mark.parametrize("workers,task,message", [
    (2, None, r'^error: TF_CONFIG has no "task" with a type and an index'),
    (2, _worker(2), r"^error: TF_CONFIG's task index 2 is out of range"),
    (None, _worker(0), r"^error: TF_CONFIG lists 127\.0\.0\.1:(\d+) twice \(worker 0 and worker 1\)"),
])
def test_the_trainer_ends_a_tf_config_mistake_with_one_line(data_dir, tmp_path, workers, task,
                                                            message):
    if workers is None:
        port = _free_port()
        addresses = [f"127.0.0.1:{port}"] * 2
    else:
        addresses = [f"127.0.0.1:{_free_port()}" for _ in range(workers)]
    done, _ = _trainer(data_dir, tmp_path / "model", _config(addresses, task))
    assert done.returncode == exit_status.USER_ERROR, done.stderr[-3000:]
    lines = done.stderr.strip().splitlines()
    assert len([line for line in lines if line.startswith("error:")]) == 1, done.stderr
    assert re.match(message, lines[-1]), lines[-1]
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "model").exists()  # refused before anything is written


@pytest.mark.slow
@pytest.mark.parametrize("index", [0, 1])  # the chief waits for the other; the other for it
def test_a_worker_address_that_refuses_connections_ends_after_the_timeout(data_dir, tmp_path,
                                                                          index):
    addresses = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    timeout = 5  # seconds: T2T_LITE_CLUSTER_TIMEOUT; the default is 600
    done, seconds = _trainer(data_dir, tmp_path / "model", _config(addresses, _worker(index)),
                             timeout=timeout)
    assert done.returncode == exit_status.USER_ERROR, done.stderr[-3000:]
    other = 1 - index
    last = done.stderr.strip().splitlines()[-1]
    assert last == (f"error: worker {other} ({addresses[other]}) refused connections for "
                    f"{timeout} s (T2T_LITE_CLUSTER_TIMEOUT): start every worker with the same "
                    "TF_CONFIG cluster and its own task index, or fix the address"), last
    assert "Traceback" not in done.stderr
    assert timeout <= seconds < 120, seconds
