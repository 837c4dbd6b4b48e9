"""t2t-lite-datagen as a user runs it: in a subprocess, including a hard kill mid-run."""
import glob
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.data import shards, tokenizers

pytestmark = pytest.mark.slow  # every test here runs end to end

ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")

SLOW_PROBLEM = textwrap.dedent('''
    import time
    from t2t_lite import registry
    from t2t_lite.data.translation import TranslationProblem

    def pair(i):
        return f"sentence number {i} here", f"satz nummer {i} hier"

    @registry.register_problem
    class SlowCountingPairs(TranslationProblem):
        """Numbered pairs, produced slowly enough to be interrupted."""
        vocab_type = "wordpiece"
        vocab_size = 120
        examples_per_shard = {"train": 400, "dev": 400, "test": 400}
        encode_batch_size = 100

        def generate_samples(self, split, tmp_dir):
            n = {"train": 4000, "dev": 50, "test": 50}[split]
            for i in range(n):
                if split == "train" and i % 100 == 0:
                    time.sleep(0.05)
                yield pair(i)
''')


def datagen(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "t2t_lite.bin.datagen", *args], env=ENV,
                          capture_output=True, text=True, timeout=120, **kwargs)


def test_registry_help():
    result = datagen("--registry_help")
    assert result.returncode == 0, result.stderr
    assert "translate_ende_gettext" in result.stdout and "algorithmic_copy" in result.stdout


def test_unknown_problem_is_one_line_error(tmp_path):
    result = datagen("--problem=no_such_problem", f"--data_dir={tmp_path}")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.strip().splitlines()[-1].startswith("error: unknown problem")
    assert "Traceback" not in result.stderr


def test_missing_flags_and_bad_params_are_one_line_errors(tmp_path):
    result = datagen("--problem=algorithmic_copy")
    assert (result.returncode == exit_status.USER_ERROR
            and "error: --data_dir is required" in result.stderr)
    result = datagen("--problem=algorithmic_copy", f"--data_dir={tmp_path}", "--problem_param=x")
    assert (result.returncode == exit_status.USER_ERROR
            and "error: --problem_param must look like" in result.stderr)


def test_text_files_by_flag(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("".join(f"hello number {i}\thallo nummer {i}\n" for i in range(300))
                   + "broken line without tab\n")
    result = datagen("--problem=translate_text_files", f"--data_dir={tmp_path / 'd'}",
                     f"--problem_param=train={tsv}", "--problem_param=vocab_size=60")
    assert result.returncode == 0, result.stderr
    assert "skipped 1 (wrong_column_count=1)" in result.stdout


def read_all(data_dir, prefix):
    paths = sorted(glob.glob(shards.shard_pattern(data_dir, prefix, "train")))
    per_shard = []
    for path in paths:
        records = []
        for raw in tf.data.TFRecordDataset(path):
            ex = tf.train.Example.FromString(raw.numpy())
            records.append(list(ex.features.feature["inputs"].int64_list.value))
        per_shard.append(records)
    return per_shard


def test_killed_run_resumes_to_complete_correct_shards(tmp_path):
    module = tmp_path / "slow_problems.py"
    module.write_text(SLOW_PROBLEM)
    data_dir = str(tmp_path / "data")
    args = [f"--problem_module={module}", "--problem=slow_counting_pairs", f"--data_dir={data_dir}"]
    proc = subprocess.Popen([sys.executable, "-m", "t2t_lite.bin.datagen", *args], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    shard2 = shards.shard_path(data_dir, "slow_counting_pairs", "train", 2)
    deadline = time.time() + 90
    while not os.path.exists(shard2) and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert os.path.exists(shard2), "datagen never got to its third shard"
    assert shards.read_manifest(data_dir, "slow_counting_pairs", "train") is None
    finished_before = len(glob.glob(shards.shard_pattern(data_dir, "slow_counting_pairs", "train")))
    assert finished_before < 10

    result = datagen(*args)
    assert result.returncode == 0, result.stderr
    assert f"resumed after {finished_before} finished shards" in result.stdout
    assert not glob.glob(os.path.join(data_dir, "*" + shards.TMP_SUFFIX))

    per_shard = read_all(data_dir, "slow_counting_pairs")
    assert [len(s) for s in per_shard] == [400] * 10
    tok = tokenizers.load_tokenizer(os.path.join(data_dir, "slow_counting_pairs.wordpiece.txt"))
    rows = [r for s in per_shard for r in s]
    width = max(map(len, rows))
    decoded = tok.decode(tf.constant([r + [0] * (width - len(r)) for r in rows], tf.int32))
    assert sorted(s.decode() for s in decoded.numpy()) == sorted(
        f"sentence number {i} here" for i in range(4000))
