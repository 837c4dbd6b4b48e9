"""t2t-lite-trainer end to end on algorithmic_reverse with the tiny set; and under a cluster's ways
of stopping it: SIGTERM / SIGINT save and exit with the signal's status, a re-run resumes exactly,
a lost worker ends the survivors with one line, the chief's stops stop every worker. Those tests
wait for the trainer's own lines (progress lines with --log_every=1), never for a guessed number
of seconds."""
import json
import os
import pathlib
import signal
import socket
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import exit_status, problems, registry
from t2t_lite.data import datagen
from t2t_lite.decoding.translate import translate
from t2t_lite.errors import UserError
from t2t_lite.model_dir import averaging, checkpoint_reader, files as model_dir_lib, loaded
from t2t_lite.training import preemption
from t2t_lite.training.trainer import TrainOptions, batch_plan, train

pytestmark = pytest.mark.slow  # trains or runs the CLIs end to end; -m 'not slow' skips it

HERE = pathlib.Path(__file__).resolve().parent
PARAMS = ["max_length=8", "train_samples=20000", "eval_samples=200"]
FAST = ["TrainConfig.batch_tokens = 2048", "TrainConfig.max_tokens_per_replica = 2048"]


def env():
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow",
                CUDA_VISIBLE_DEVICES="")


def trainer_command(data_dir, model_dir, *extra):
    return [sys.executable, "-m", "t2t_lite.bin.trainer", "--problem=algorithmic_reverse",
            f"--data_dir={data_dir}", f"--model_dir={model_dir}", "--hparams_set=tiny",
            "--bleu_sentences=0", "--eval_batches=2", "--log_every=10",
            *[f"--problem_param={p}" for p in PARAMS], *extra]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("reverse_data")
    datagen.run(problems.build("algorithmic_reverse", PARAMS), str(path))
    return str(path)


def sequence_accuracy(model_dir, data_dir):
    model = loaded.load(model_dir).model
    problem = registry.problem("algorithmic_reverse", **registry.parse_params(PARAMS))
    correct = total = 0
    for batch in problem.dataset("dev", data_dir, batch_tokens=2048, max_length=64):
        sequences, _ = translate(model, batch["inputs"], beam_size=1)
        for output, target in zip(sequences[:, 0, :].numpy(), batch["targets"].numpy()):
            width = max(len(output), len(target))
            correct += int(np.array_equal(np.pad(output, (0, width - len(output))),
                                          np.pad(target, (0, width - len(target)))))
            total += 1
    return correct / total


def test_batch_plan_reaches_the_papers_global_budget():
    from t2t_lite import hparams
    _, base, _ = hparams.load("base")
    assert batch_plan(base, replicas=8) == (3125, 1)  # 8 GPUs x 3,125 = 25,000
    per_replica, accumulate = batch_plan(base, replicas=1)
    assert per_replica == 4096 and accumulate == 7  # one GPU: 7 x 4,096 >= 25,000
    assert batch_plan(base, replicas=2, accumulate_steps=3) == (4096, 3)


def test_mirrored_two_devices_and_accumulation_match_one_device():
    out = subprocess.run([sys.executable, str(HERE / "mirrored_equivalence.py")], env=env(),
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["replicas"] == 2
    assert result["tokens"][0] == result["tokens"][1] == result["tokens"][2]
    assert np.allclose(result["loss"], result["loss"][0], rtol=1e-5)
    assert result["mean_weight_change"] > 1e-3  # the step really moved the weights
    assert result["mirrored_max_diff"] <= 1e-5
    assert result["accumulated_max_diff"] <= 1e-5


def test_reverse_learns_to_95_percent_sequence_accuracy(data_dir, tmp_path):
    model_dir = str(tmp_path / "model")
    # The budget schedule decays the learning rate to 0 by the last step. tiny's plain schedule
    # is still high there, which makes the last step's model depend on the seed; annealed, the
    # threshold holds whatever the seed.
    result = train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS,
                                data_dir=data_dir, model_dir=model_dir, hparams_set="tiny",
                                gin_params=FAST + ["TrainConfig.budget_schedule = True"],
                                train_steps=600, bleu_sentences=0,
                                eval_batches=5, log_every=100))
    assert result.step == 600
    assert sequence_accuracy(model_dir, data_dir) >= 0.95
    info = model_dir_lib.read_run_info(model_dir)
    assert info["problem"] == "algorithmic_reverse" and info["hparams_set"] == "tiny"
    for name in ("config.gin", "operative_config.gin", info["vocab_file"], "checkpoint"):
        assert os.path.exists(os.path.join(model_dir, name)), name
    assert result.best_metrics["token_accuracy"] > 0.95
    assert result.total_flops > 0


def test_kill_9_then_rerun_resumes(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    args = ["--train_steps=100000", "--gin_param=TrainConfig.checkpoint_steps = 20",
            "--gin_param=TrainConfig.checkpoint_minutes = 0"]
    process = subprocess.Popen(trainer_command(data_dir, model_dir, *args), env=env(),
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 240
    while time.time() < deadline:
        state = tf.train.get_checkpoint_state(str(model_dir))
        if state and len(state.all_model_checkpoint_paths) >= 2:
            break
        time.sleep(0.2)
    time.sleep(0.3)  # land somewhere inside the next steps, maybe mid-save
    process.send_signal(signal.SIGKILL)
    process.wait()
    latest = tf.train.latest_checkpoint(str(model_dir))
    assert latest, "no checkpoint before the kill"
    killed_step = int(latest.rsplit("-", 1)[1])

    out = subprocess.run(trainer_command(data_dir, model_dir, f"--train_steps={killed_step + 20}",
                                         "--gin_param=TrainConfig.checkpoint_minutes = 0"),
                         env=env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert f"resumed from {latest} at step {killed_step}" in out.stdout
    assert f"stopped at step {killed_step + 20}" in out.stdout
    # Every listed checkpoint loads, the new one included. A kill inside TensorFlow's
    # save-then-delete can leave the list naming an old checkpoint whose files are gone:
    # checkpoint_paths skips it (tests/model_dir/test_checkpoint_saver.py).
    paths = checkpoint_reader.checkpoint_paths(str(model_dir))
    assert paths[-1].endswith(f"ckpt-{killed_step + 20}")
    for path in paths:
        loaded.load(str(model_dir), checkpoint_path=path)


def test_second_trainer_on_the_same_model_dir_refuses(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    with model_dir_lib.TrainerLock(str(model_dir)):
        out = subprocess.run(trainer_command(data_dir, model_dir, "--train_steps=5"), env=env(),
                             capture_output=True, text=True, timeout=120)
    assert out.returncode == exit_status.USER_ERROR
    assert out.stderr.strip().splitlines()[-1].startswith("error: ")
    assert "in use by another trainer" in out.stderr


def test_nan_stops_with_a_clear_message_and_keeps_the_good_checkpoint(data_dir, tmp_path):
    model_dir = str(tmp_path / "model")
    train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS, data_dir=data_dir,
                       model_dir=model_dir, hparams_set="tiny", train_steps=10, bleu_sentences=0,
                       eval_batches=1))
    good = tf.train.latest_checkpoint(model_dir)
    with pytest.raises(UserError, match="diverged"):
        train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS,
                           data_dir=data_dir, model_dir=model_dir, hparams_set="tiny",
                           train_steps=200, bleu_sentences=0, eval_batches=1,
                           gin_params=["TrainConfig.learning_rate_scale = 1e30",
                                       "TrainConfig.checkpoint_steps = 1"]))
    assert tf.train.latest_checkpoint(model_dir) == good
    loaded.load(model_dir)


@pytest.mark.parametrize("args,message", [
    (["--problem=no_such_problem"], "unknown problem"),
    (["--hparams_set=no_such_set"], "unknown hparams set"),
    (["--gin_param=ModelConfig.bogus = 1"], "bogus"),
])
def test_user_mistakes_are_one_line_errors(data_dir, tmp_path, args, message):
    command = trainer_command(data_dir, tmp_path / "m", "--train_steps=1") + args
    out = subprocess.run(command, env=env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == exit_status.USER_ERROR
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and message in last
    assert "Traceback" not in out.stderr


def test_missing_data_is_a_one_line_error(tmp_path):
    out = subprocess.run(trainer_command(tmp_path / "empty", tmp_path / "m", "--train_steps=1"),
                         env=env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == exit_status.USER_ERROR and "Traceback" not in out.stderr
    assert "datagen" in out.stderr.strip().splitlines()[-1]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_averaging_identical_checkpoints_gives_the_same_weights(data_dir, tmp_path):
    model_dir = str(tmp_path / "model")
    train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS, data_dir=data_dir,
                       model_dir=model_dir, hparams_set="tiny", train_steps=3, bleu_sentences=0,
                       eval_batches=1))
    model = loaded.load(model_dir).model
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir,
                                         max_to_keep=5)
    for number in (4, 5):  # two more copies of the same weights
        manager.save(checkpoint_number=number)
    out, averaged = averaging.average_checkpoints(model_dir, 3)
    assert len(averaged) == 3
    run = loaded.load(model_dir)
    reloaded, used = run.model, run.checkpoint
    assert used == out
    for a, b in zip(model.weights, reloaded.weights):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6, atol=1e-7)


def test_averaging_refuses_mismatched_shapes(data_dir, tmp_path):
    from t2t_lite import hparams
    from t2t_lite.models.transformer import Transformer

    model_dir = str(tmp_path / "model")
    train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS, data_dir=data_dir,
                       model_dir=model_dir, hparams_set="tiny", train_steps=2, bleu_sentences=0,
                       eval_batches=1))
    wider = Transformer(hparams.load("tiny", ["ModelConfig.d_ff = 96"])[0], 13)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=wider), model_dir,
                               max_to_keep=5).save(checkpoint_number=9)
    with pytest.raises(UserError, match="cannot average"):
        averaging.average_checkpoints(model_dir, 2)


@pytest.mark.parametrize("precision", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains_and_restores_in_float32(data_dir, tmp_path, precision):
    import keras

    model_dir = str(tmp_path / "model")
    try:
        result = train(TrainOptions(
            problem="algorithmic_reverse", problem_params=PARAMS, data_dir=data_dir,
            model_dir=model_dir, hparams_set="tiny", train_steps=30, bleu_sentences=0,
            eval_batches=1, gin_params=[f"TrainConfig.mixed_precision = '{precision}'"]))
        assert keras.config.dtype_policy().name == "float32"  # the caller's, back
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert result.step == 30
    assert np.isfinite(result.last_train_metrics["loss"])
    assert np.isfinite(result.best_metrics["loss"])
    model = loaded.load(model_dir).model
    assert all(w.dtype == "float32" for w in model.weights)


def test_run_settings_come_from_the_set_and_options_override_them():
    from t2t_lite import hparams
    from t2t_lite.training.trainer import resolve_run_settings

    _, train_config, _ = hparams.load("tiny", ["TrainConfig.bleu_sentences = 7",
                                               "TrainConfig.train_minutes = 2.5"])
    options = TrainOptions(problem="p", data_dir="d", model_dir="m", eval_batches=3)
    resolved = resolve_run_settings(options, train_config)
    # One resolved object, which the trainer and its hooks read and configs.json records; the
    # options keep only what the user overrode.
    assert (resolved.bleu_sentences, resolved.eval_batches, resolved.train_minutes) == (7, 3, 2.5)
    assert (options.bleu_sentences, options.train_minutes) == (None, None)
    # "No budget" is 0 in every layer: an override of 0 turns the set's budget off.
    off = resolve_run_settings(TrainOptions(problem="p", data_dir="d", model_dir="m",
                                            train_minutes=0), train_config)
    assert off.train_minutes == 0
    with pytest.raises(UserError, match="log_every"):
        resolve_run_settings(TrainOptions(problem="p", data_dir="d", model_dir="m", log_every=0),
                             train_config)


# ---- preemption, lost workers, stops that every worker agrees on ------------------------------

EACH_STEP = ["--log_every=1", "--gin_param=TrainConfig.checkpoint_minutes = 0"]
COORDINATION_ERRORS = ("The tasks have crashed", "CoordinationServiceError")


class Trainer:
    """A trainer subprocess whose merged output is read as it comes."""

    def __init__(self, command, extra_env=None):
        self.lines, self._changed = [], threading.Condition()
        self.process = subprocess.Popen(command, env=dict(env(), **(extra_env or {})),
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True)
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, pattern, timeout=240):
        """The first match of `pattern` in a line; fails if the process ends without one."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    match = regex.search(line)
                    if match:
                        return match
                if not self._reader.is_alive() or time.monotonic() > deadline:
                    raise AssertionError(f"no line matching {pattern!r}:\n" + self.output[-3000:])
                self._changed.wait(1.0)

    def finish(self, timeout=240):
        try:
            self.process.wait(timeout=timeout)
        finally:
            if self.process.poll() is None:
                self.process.kill()
        self._reader.join(30)
        return self.process.returncode

    @property
    def output(self):
        return "\n".join(self.lines)


def workers(data_dir, model_dir, *args, extra_env=None):
    """Two localhost workers of one MultiWorkerMirroredStrategy run."""
    addresses = [f"127.0.0.1:{_free_port()}", f"127.0.0.1:{_free_port()}"]
    return [Trainer(trainer_command(data_dir, model_dir, *args), dict(
        extra_env or {}, TF_CONFIG=json.dumps({"cluster": {"worker": addresses},
                                               "task": {"type": "worker", "index": index}})))
            for index in range(2)]


def finish_all(trainers, timeout=240):
    try:
        return [trainer.finish(timeout) for trainer in trainers]
    finally:
        for trainer in trainers:
            if trainer.process.poll() is None:
                trainer.process.kill()


SAVED = r"^{}: saved (\S+) at step (\d+) \(learning rate (\S+);"


@pytest.mark.parametrize("signum,gin", [
    (signal.SIGTERM, "TrainConfig.budget_schedule = True"),  # the plan's variables resume too
    (signal.SIGINT, "TrainConfig.warmup_steps = 100"),
])
def test_a_signal_saves_at_the_next_step_and_the_same_command_resumes_there(
        data_dir, tmp_path, signum, gin):
    model_dir = tmp_path / "model"
    command = trainer_command(data_dir, model_dir, "--train_steps=100000", *EACH_STEP,
                              f"--gin_param={gin}")
    first = Trainer(command)
    first.wait_for(r"^step 20/")
    first.process.send_signal(signum)
    if signum == signal.SIGTERM:
        first.process.send_signal(signum)  # a second one, landing in the step or the save
    assert first.finish() == preemption.EXIT_STATUS[signum], first.output[-3000:]
    name = signal.Signals(signum).name
    path, step, rate = first.wait_for(SAVED.format(name)).groups()
    assert int(step) >= 20 and path == str(model_dir / f"ckpt-{step}")
    assert tf.train.latest_checkpoint(str(model_dir)) == path
    loaded.load(str(model_dir), checkpoint_path=path)
    assert "re-run the same command to resume" in first.output
    assert "Traceback" not in first.output

    again = Trainer(command)  # the same command: it resumes, and is stopped the same way
    again.wait_for(rf"^resumed from {re.escape(path)} at step {step} \(learning rate "
                   rf"{re.escape(rate)}\)$")
    again.wait_for(rf"^step {int(step) + 1}/")
    again.process.send_signal(signum)
    assert again.finish() == preemption.EXIT_STATUS[signum], again.output[-3000:]
    assert int(again.wait_for(SAVED.format(name)).group(2)) > int(step)


def test_a_signal_before_the_first_step_exits_at_once_and_saves_nothing(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    run = Trainer(trainer_command(data_dir, model_dir, "--train_steps=100000", *EACH_STEP))
    run.wait_for(r"^batching: ")  # printed before the model is built
    run.process.send_signal(signal.SIGTERM)
    assert run.finish() == exit_status.TERMINATED, run.output[-3000:]
    assert run.wait_for(r"^SIGTERM before the first step: nothing to save")
    assert not tf.train.latest_checkpoint(str(model_dir))
    assert "Traceback" not in run.output and not re.search(r"^step \d", run.output, re.M)


def test_sigterm_on_one_worker_saves_every_worker_at_one_step_and_both_resume(data_dir,
                                                                              tmp_path):
    model_dir = tmp_path / "model"
    chief, other = workers(data_dir, model_dir, "--train_steps=100000", *EACH_STEP)
    other.wait_for(r"^step 10/")
    other.process.send_signal(signal.SIGTERM)  # as Kubernetes preempts one pod
    assert finish_all([chief, other]) == [exit_status.TERMINATED] * 2, (
        chief.output[-3000:] + other.output[-3000:])
    path, step, rate = other.wait_for(SAVED.format("SIGTERM")).groups()
    assert chief.wait_for(SAVED.format("SIGTERM on another worker")).groups() == (path, step,
                                                                                   rate)
    assert tf.train.latest_checkpoint(str(model_dir)) == path

    # A clean run to the end: both exit 0, without the coordination service's complaint.
    trainers = workers(data_dir, model_dir, f"--train_steps={int(step) + 5}", *EACH_STEP)
    assert finish_all(trainers) == [0, 0], trainers[0].output[-3000:]
    for trainer in trainers:
        trainer.wait_for(rf"^resumed from {re.escape(path)} at step {step} \(learning rate "
                         rf"{re.escape(rate)}\)$")
        trainer.wait_for(rf"^stopped at step {int(step) + 5} \(train_steps\)")
        assert not any(error in trainer.output for error in COORDINATION_ERRORS), \
            trainer.output[-3000:]


def test_a_lost_worker_ends_the_other_with_one_line_and_a_restart_finishes(data_dir, tmp_path):
    model_dir = tmp_path / "model"
    chief, other = workers(data_dir, model_dir, "--train_steps=100000", *EACH_STEP,
                           "--gin_param=TrainConfig.checkpoint_steps = 10")
    chief.wait_for(r"^step 15/")  # after the checkpoint at step 10
    other.process.kill()
    killed = time.monotonic()
    assert chief.finish(timeout=120) == exit_status.USER_ERROR, chief.output[-3000:]
    assert time.monotonic() - killed < 60
    other.finish()
    last = chief.lines[-1]
    assert re.match(r"^error: worker 1 \(127\.0\.0\.1:\d+\) went away at step \d+ ", last), last
    latest = tf.train.latest_checkpoint(str(model_dir))
    assert latest and f"re-run every worker's command to resume from the last checkpoint, " \
                      f"{latest}" in last
    assert "Traceback" not in chief.output

    step = int(latest.rsplit("-", 1)[1])
    trainers = workers(data_dir, model_dir, f"--train_steps={step + 5}", *EACH_STEP)
    assert finish_all(trainers) == [0, 0], trainers[0].output[-3000:]
    for trainer in trainers:
        trainer.wait_for(rf"^resumed from {re.escape(latest)} at step {step} ")
        trainer.wait_for(rf"^stopped at step {step + 5} \(train_steps\)")


def test_early_stopping_on_the_chief_stops_the_other_worker(data_dir, tmp_path):
    # A learning rate of 0 leaves the dev loss the same, so the second evaluation (step 10) is
    # no better and early stopping ends the run there.
    trainers = workers(data_dir, tmp_path / "model", "--train_steps=100000", *EACH_STEP,
                       "--eval_every_steps=5", "--early_stopping_evals=1",
                       "--gin_param=TrainConfig.learning_rate_scale = 0.0")
    assert finish_all(trainers) == [0, 0], trainers[0].output[-3000:] + trainers[1].output
    stops = [trainer.wait_for(r"^stopped at step (\d+) \(early_stopping\)").group(1)
             for trainer in trainers]
    assert stops[0] == stops[1] == "11"  # the chief's decision at 10 travels with step 11
    for trainer in trainers:
        assert "x 2 replicas" in trainer.output
        assert not any(error in trainer.output for error in COORDINATION_ERRORS), \
            trainer.output[-3000:]


def test_a_time_budget_stops_every_worker_at_one_step_with_one_plan(data_dir, tmp_path):
    # Each worker's planner measures its own clock; the chief's plan is the one applied, so the
    # learning rate of every step, and the weights, are the same on both workers.
    model_dir = tmp_path / "model"
    trainers = workers(data_dir, model_dir, "--train_steps=100000", "--train_minutes=0.3",
                       *EACH_STEP, "--gin_param=TrainConfig.budget_schedule = True")
    assert finish_all(trainers) == [0, 0], trainers[0].output[-3000:] + trainers[1].output
    stops = [trainer.wait_for(r"^stopped at step (\d+) \((end of the budget plan|train_minutes)\)")
             .groups() for trainer in trainers]
    assert stops[0] == stops[1]
    rates = [dict(re.findall(r"^step (\d+)/\d+ .* lr (\S+) ", trainer.output, re.M))
             for trainer in trainers]
    assert len(rates[0]) == int(stops[0][0]) and rates[0] == rates[1]
    step = stops[0][0]
    chief = tf.train.load_checkpoint(str(model_dir / f"ckpt-{step}"))
    other = tf.train.load_checkpoint(str(model_dir / ".worker_1" / f"ckpt-{step}"))
    for name in chief.get_variable_to_shape_map():
        if name.startswith("model/"):
            np.testing.assert_array_equal(chief.get_tensor(name), other.get_tensor(name), name)
