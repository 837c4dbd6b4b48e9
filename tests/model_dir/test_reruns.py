"""Re-runs change nothing they do not have to (issue 44, section 2).

A trainer re-run that trains no step (a finished command again, a signal before a resumed run's
first step) leaves the model_dir as it was, file times included; a run that trains on rewrites no
run file whose content stays; a paused decode, of the newest checkpoint or of one pinned with
--checkpoint_path, resumes after either. The decoder checks --summary_file before it reads a
line. The trainer runs through its library call (one process, as tests/training/test_trainer.py
does), the decoder through its CLI; signals are sent from inside the run at a known point, never
after a guessed time.
"""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
import tensorflow as tf

from t2t_lite import exit_status, problems
from t2t_lite.data import datagen
from t2t_lite.inference import resume
from t2t_lite.model_dir import files as model_dir_files
from t2t_lite.model_dir.checkpoint_saver import CheckpointKeeper

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
PARAMS = ["max_length=8", "train_samples=2000", "eval_samples=50"]
FAST = ["TrainConfig.batch_tokens = 512", "TrainConfig.max_tokens_per_replica = 512",
        "TrainConfig.checkpoint_minutes = 0"]
# Many one-line chunks, so a decode is still running when its first progress record appears;
# short greedy searches, so it does not take long.
SOURCE_LINES = [" ".join(str((i * 7 + j) % 10) for j in range(1 + i % 8)) for i in range(80)]
SEARCH = ["--chunk_lines=1", "--parallel_searches=1", "--beam_size=1", "--extra_length=2"]
RUN_FILES = ("configs.json", "run.json", "config.gin", "operative_config.gin",
             "algorithmic_reverse.symbols.txt")


# ---- quick: the pieces ----------------------------------------------------------------------

def test_a_restored_checkpoint_is_not_saved_again(tmp_path):
    value = tf.Variable(3.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(value=value), str(tmp_path),
                                         max_to_keep=5)
    saved = manager.save(checkpoint_number=3)
    before = _listing(tmp_path)
    keeper = CheckpointKeeper(tf.train.Checkpoint(value=tf.Variable(0.0)), str(tmp_path), keep=5)
    assert keeper.restore_latest() == saved
    assert keeper.save(3) == saved  # the restored step: nothing written
    assert _listing(tmp_path) == before
    assert keeper.save(4).endswith("ckpt-4")  # a step past it is saved


def test_a_run_file_is_written_only_when_its_content_changes(tmp_path):
    path = str(tmp_path / "configs.json")
    assert model_dir_files.write_if_changed(path, "{}\n")
    old = os.stat(path).st_mtime_ns
    os.utime(path, ns=(old - 10**9, old - 10**9))  # an older time, which a rewrite would move
    assert not model_dir_files.write_if_changed(path, "{}\n")
    assert os.stat(path).st_mtime_ns == old - 10**9
    assert model_dir_files.write_if_changed(path, "{}\n\n")
    assert open(path).read() == "{}\n\n"


def test_a_pinned_checkpoints_identity_is_its_own_files_and_decode_settings(model_dir, tmp_path):
    own = tmp_path / "model"
    shutil.copytree(model_dir, own)
    pinned = str(own / "ckpt-10")
    identity = resume.model_identity(str(own), pinned)
    newest = resume.model_identity(str(own))
    assert identity == newest and identity["checkpoint"] == "ckpt-10"
    # A copy elsewhere is the same model: a run paused on one resumes on the other.
    moved = tmp_path / "moved"
    shutil.copytree(own, moved)
    assert resume.model_identity(str(moved), str(moved / "ckpt-10")) == identity
    # The model_dir trains on: a newer checkpoint, another --train_steps in configs.json.
    later = tf.train.CheckpointManager(tf.train.Checkpoint(value=tf.Variable(1.0)), str(own),
                                       max_to_keep=5)
    later.save(checkpoint_number=20)
    configs = json.loads((own / "configs.json").read_text())
    configs["train"]["train_steps"] += 1000
    (own / "configs.json").write_text(json.dumps(configs, indent=2) + "\n")
    assert resume.model_identity(str(own), pinned) == identity
    assert resume.model_identity(str(own))["checkpoint"] == "ckpt-20"
    # What shapes the output does count: a decode setting, the vocabulary.
    configs["decode"]["alpha"] += 0.1
    (own / "configs.json").write_text(json.dumps(configs, indent=2) + "\n")
    assert resume.model_identity(str(own), pinned)["settings_sha256"] != (
        identity["settings_sha256"])
    configs["decode"]["alpha"] -= 0.1
    (own / "configs.json").write_text(json.dumps(configs))
    assert resume.model_identity(str(own), pinned) == identity
    vocab = own / model_dir_files.read_run_info(str(own))["vocab_file"]
    vocab.write_bytes(vocab.read_bytes() + b"\0")
    assert resume.model_identity(str(own), pinned)["settings_sha256"] != (
        identity["settings_sha256"])


# ---- slow: the trainer, then the decoder's CLI ---------------------------------------------

@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("reverse_data")
    datagen.run(problems.build("algorithmic_reverse", PARAMS), str(path))
    return str(path)


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    path = tmp_path_factory.mktemp("reruns_input") / "in.txt"
    path.write_text("\n".join(SOURCE_LINES) + "\n")
    return path


def _train(data_dir, model_dir, steps):
    """The same trainer command each time, but for --train_steps."""
    from t2t_lite.training.trainer import TrainOptions, train

    return train(TrainOptions(problem="algorithmic_reverse", problem_params=PARAMS,
                              data_dir=data_dir, model_dir=str(model_dir), hparams_set="tiny",
                              gin_params=FAST, train_steps=steps, bleu_sentences=0,
                              eval_batches=1, log_every=100))


def _sigterm_after(monkeypatch, where, calls=1):
    """SIGTERM to this process right after the `calls`-th call of `where` (a class, method name):
    a signal at a known point of the run."""
    cls, name = where
    original, count = getattr(cls, name), [0]

    def wrapped(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        count[0] += 1
        if count[0] == calls:
            os.kill(os.getpid(), signal.SIGTERM)
        return result

    monkeypatch.setattr(cls, name, wrapped)


def _listing(root):
    """Every entry under root (root too) with its type, size, mtime and content digest; the
    trainer's .lock too, which a run holds (and records its pid in) while it runs and puts back
    as it found it."""
    entries = {".": (os.stat(root).st_mtime_ns,)}
    for folder, folders, names in os.walk(root):
        for name in folders + names:
            path = os.path.join(folder, name)
            relative = os.path.relpath(path, root)
            status = os.lstat(path)
            digest = None
            if os.path.isfile(path):
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            entries[relative] = (status.st_mode, status.st_size, status.st_mtime_ns, digest)
    return entries


def _decoder(model_dir, *args):
    return [sys.executable, "-m", "t2t_lite.bin.decoder", f"--model_dir={model_dir}", *args]


def _paused_decode(model_dir, source, out, *args):
    """A decode killed for good after its first chunk's progress record: the record's path."""
    record = out.with_name(out.name + resume.PROGRESS_SUFFIX)
    process = subprocess.Popen(
        _decoder(model_dir, f"--decode_from_file={source}", f"--decode_to_file={out}", *SEARCH,
                 *args),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV, cwd=REPO)
    deadline = time.monotonic() + 180
    while not record.exists():
        assert process.poll() is None, process.stderr.read().decode()[-3000:]
        assert time.monotonic() < deadline, "no progress record after 180 s"
        time.sleep(0.02)
    process.send_signal(signal.SIGSTOP)  # whatever it did last, OUT and the record agree
    process.send_signal(signal.SIGKILL)
    process.wait()
    process.stderr.close()
    assert record.exists(), "the decode finished before it was stopped"
    return record


def _resumed_decode(model_dir, source, out, *args):
    result = subprocess.run(
        _decoder(model_dir, f"--decode_from_file={source}", f"--decode_to_file={out}", *SEARCH,
                 *args),
        capture_output=True, env=ENV, cwd=REPO, timeout=300)
    stderr = result.stderr.decode()
    assert result.returncode == 0, stderr[-3000:]
    assert "resuming after" in stderr, stderr[-3000:]
    assert len(out.read_bytes().splitlines()) == len(SOURCE_LINES)
    assert not out.with_name(out.name + resume.PROGRESS_SUFFIX).exists()


@pytest.mark.slow
def test_a_finished_trainer_rerun_writes_nothing_and_a_paused_decode_resumes(data_dir, source,
                                                                            tmp_path):
    model_dir = tmp_path / "model"
    assert _train(data_dir, model_dir, 3).step == 3
    out = tmp_path / "out.txt"
    _paused_decode(model_dir, source, out)
    before = _listing(model_dir)
    result = _train(data_dir, model_dir, 3)  # the same command again
    assert (result.step, result.stopped_because) == (3, "train_steps")
    assert result.last_checkpoint.endswith("ckpt-3")
    assert _listing(model_dir) == before
    _resumed_decode(model_dir, source, out)


@pytest.fixture(scope="module")
def paused_at_3(data_dir, tmp_path_factory):
    """A model_dir whose 6-step run took SIGTERM during step 3: ckpt-3, three steps to go."""
    from t2t_lite.training.steps import TrainSteps

    model_dir = tmp_path_factory.mktemp("paused") / "model"
    with pytest.MonkeyPatch.context() as monkeypatch:
        _sigterm_after(monkeypatch, (TrainSteps, "train_step"), calls=3)
        with pytest.raises(SystemExit) as stopped:
            _train(data_dir, model_dir, 6)
    assert stopped.value.code == exit_status.TERMINATED
    assert tf.train.latest_checkpoint(str(model_dir)).endswith("ckpt-3")
    return model_dir


@pytest.mark.slow
def test_sigterm_before_a_resumed_runs_first_step_writes_nothing(data_dir, paused_at_3,
                                                                 tmp_path, monkeypatch):
    from t2t_lite.training import preemption

    model_dir = tmp_path / "model"
    shutil.copytree(paused_at_3, model_dir)
    before = _listing(model_dir)
    _sigterm_after(monkeypatch, (preemption.Signals, "arm"))  # armed: the next signal saves
    with pytest.raises(SystemExit) as stopped:
        _train(data_dir, model_dir, 6)  # the paused command again
    assert stopped.value.code == exit_status.TERMINATED
    assert _listing(model_dir) == before


@pytest.mark.slow
def test_training_on_keeps_the_run_files_and_a_pinned_decode_resumes(data_dir, source,
                                                                     paused_at_3, tmp_path):
    model_dir = tmp_path / "model"
    shutil.copytree(paused_at_3, model_dir)
    out = tmp_path / "out.txt"
    pinned = f"--checkpoint_path={model_dir / 'ckpt-3'}"
    _paused_decode(model_dir, source, out, pinned)
    files_before = {name: (model_dir / name).read_bytes() for name in RUN_FILES}
    times_before = {name: os.stat(model_dir / name).st_mtime_ns for name in RUN_FILES}
    checkpoint_before = {name: v for name, v in _listing(model_dir).items()
                         if name.startswith("ckpt-3.")}

    assert _train(data_dir, model_dir, 6).step == 6  # the paused command trains on
    assert {name: (model_dir / name).read_bytes() for name in RUN_FILES} == files_before
    assert {name: os.stat(model_dir / name).st_mtime_ns for name in RUN_FILES} == times_before
    assert {name: v for name, v in _listing(model_dir).items()
            if name.startswith("ckpt-3.")} == checkpoint_before

    assert _train(data_dir, model_dir, 8).step == 8  # and on, with a longer --train_steps
    configs = json.loads((model_dir / "configs.json").read_text())
    old = json.loads(files_before["configs.json"])
    assert configs["train"]["train_steps"] == 8
    assert (configs["model"], configs["decode"]) == (old["model"], old["decode"])
    _resumed_decode(model_dir, source, out, pinned)


@pytest.mark.slow
def test_an_unwritable_summary_file_is_refused_before_any_line_is_read(model_dir, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\n")
    out = tmp_path / "out.txt"
    cases = [(tmp_path / "missing" / "s.json", "--summary_file: folder "),
             (tmp_path, "is a directory"),
             (out, "is also --decode_to_file"),
             (source, "is the input --decode_from_file")]
    for summary, expected in cases:
        result = subprocess.run(
            _decoder(model_dir, f"--decode_from_file={source}", f"--decode_to_file={out}",
                     f"--summary_file={summary}"),
            capture_output=True, env=ENV, cwd=REPO, timeout=300)
        stderr = result.stderr.decode()
        assert (result.returncode == exit_status.USER_ERROR
                and "Traceback" not in stderr), stderr[-3000:]
        line = stderr.strip().splitlines()[-1]
        assert line.startswith("error: --summary_file") and expected in line, line
        assert not out.exists()  # refused before a line was read or written
    assert source.read_text() == "the house is small .\n"
