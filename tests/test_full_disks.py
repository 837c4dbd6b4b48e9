"""Full disks (issue 53, item 4): wherever t2t_lite writes, a full disk ends in one line
(process_end.WriteFailed: `cannot write FILE: No space left on device; what is kept`), loses
nothing that was already complete, and the same call after space is freed finishes. Each disk is
a small tmpfs (tests/full_disk.py; root only, skipped with the reason elsewhere), filled to its
last byte just before the write."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from t2t_lite import atomic, exit_status, process_end
from tests import full_disk

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_SPACE = "No space left on device"


def _one_line(error, *parts):
    text = str(error.value)
    assert "\n" not in text and NO_SPACE in text, text
    for part in parts:
        assert part in text, text
    return text


# ---- small files: run.json, configs.json, stats, manifests, summaries -----------------------

def test_an_atomic_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    with full_disk.tmpfs() as folder:
        path = os.path.join(folder, "configs.json")
        atomic.write_text(path, "old\n")
        filler = full_disk.fill(folder)
        with pytest.raises(process_end.WriteFailed) as failed:
            atomic.write_text(path, "new\n" * 10000)
        _one_line(failed, f"cannot write {path}", "the file there is kept as it was")
        assert open(path).read() == "old\n"
        assert sorted(os.listdir(folder)) == ["configs.json", "filler"]
        with pytest.raises(process_end.WriteFailed, match="nothing was written"):
            atomic.copy_file(path, os.path.join(folder, "copy"))
        assert sorted(os.listdir(folder)) == ["configs.json", "filler"]
        full_disk.free(filler)
        atomic.write_text(path, "new\n" * 10000)
        assert open(path).read() == "new\n" * 10000


def test_a_model_dirs_run_files_on_a_full_disk(tmp_path):
    """configs.json and the others: the old ones kept, written on the re-run."""
    from t2t_lite.model_dir import files

    with full_disk.tmpfs() as folder:
        path = os.path.join(folder, files.CONFIGS)
        files.write_if_changed(path, "{}\n")
        filler = full_disk.fill(folder)
        assert not files.write_if_changed(path, "{}\n")  # unchanged: nothing to write
        with pytest.raises(process_end.WriteFailed) as failed:
            files.write_if_changed(path, '{"format_version": 1}\n' + " " * 8192)
        _one_line(failed, path)
        assert open(path).read() == "{}\n"
        full_disk.free(filler)
        assert files.write_if_changed(path, '{"format_version": 1}\n')


# ---- the dev history -------------------------------------------------------------------------

def test_a_dev_history_record_is_whole_or_absent():
    from t2t_lite.model_dir import dev_history

    with full_disk.tmpfs() as folder:
        dev_history.append(folder, 2, {"loss": 3.0})
        filler = full_disk.fill(folder)
        with pytest.raises(process_end.WriteFailed) as failed:
            dev_history.append(folder, 4, {"loss": 2.0, **{f"m{i}": 1.0 for i in range(500)}})
        _one_line(failed, dev_history.HISTORY, "the evaluations before step 4 are kept")
        assert dev_history.read(folder) == {2: {"loss": 3.0}}
        full_disk.free(filler)
        dev_history.append(folder, 4, {"loss": 2.0})
        assert dev_history.read(folder) == {2: {"loss": 3.0}, 4: {"loss": 2.0}}


def test_a_dev_record_cut_off_by_a_kill_does_not_swallow_the_next(tmp_path):
    from t2t_lite.model_dir import dev_history

    (tmp_path / dev_history.HISTORY).write_text('{"loss": 3.0, "step": 2}\n{"loss": 2.')
    dev_history.append(str(tmp_path), 4, {"loss": 2.0})
    assert dev_history.read(str(tmp_path)) == {2: {"loss": 3.0}, 4: {"loss": 2.0}}


# ---- datagen: shards and vocabularies -------------------------------------------------------

def test_datagen_shards_on_a_full_disk_keep_the_finished_ones_and_resume():
    from t2t_lite.data import shards

    def write(data_dir, fill_after=None):
        writer = shards.ShardedSplitWriter(data_dir, "p", "train", examples_per_shard=100)
        filler = None
        for i in range(writer.resume_count, 400):
            if i == fill_after:
                filler = full_disk.fill(data_dir)
            writer.add(list(range(1, 30)), [i % 7 + 3] * 20)
        return writer.close({}), filler

    with full_disk.tmpfs("512k") as folder:
        with pytest.raises(process_end.WriteFailed) as failed:
            write(folder, fill_after=250)  # two shards done, the third cannot be written
        _one_line(failed, "p-train-00002.tfrecord",
                  "the 2 finished shards of train are kept; free some space and run the same")
        names = sorted(os.listdir(folder))
        assert names == ["filler", "p-train-00000.tfrecord", "p-train-00000.tfrecord.stats.json",
                         "p-train-00001.tfrecord", "p-train-00001.tfrecord.stats.json"], names
        full_disk.free(os.path.join(folder, "filler"))
        resumed = shards.ShardedSplitWriter(folder, "p", "train", examples_per_shard=100)
        assert resumed.resume_count == 200
        manifest, _ = write(folder)
        assert manifest["num_examples"] == 400 and manifest["num_shards"] == 4


def test_a_vocabulary_on_a_full_disk_is_absent_not_half_written(tmp_path):
    from t2t_lite.data import vocab

    text = tmp_path / "sample.txt"
    text.write_text("".join(f"word{i % 97} other{i % 13} thing{i % 7}\n" for i in range(2000)))
    with full_disk.tmpfs("1m") as folder:
        model = os.path.join(folder, "vocab.spm.model")
        filler = full_disk.fill(folder)
        with pytest.raises(process_end.WriteFailed) as failed:
            vocab.train_sentencepiece(str(text), model, vocab_size=200)
        _one_line(failed, f"cannot write {model}")
        assert os.listdir(folder) == ["filler"]
        full_disk.free(filler)
        assert vocab.train_sentencepiece(str(text), model, vocab_size=200) == model
        assert os.listdir(folder) == ["vocab.spm.model"]


# ---- checkpoints: the trainer's saver, the averager, the exporter ---------------------------

def test_a_checkpoint_save_on_a_full_disk_keeps_the_last_one():
    import tensorflow as tf

    from t2t_lite.model_dir.checkpoint_saver import CheckpointKeeper

    with full_disk.tmpfs("1m") as folder:
        weights = tf.Variable(tf.zeros([20000]))  # 80 kB a checkpoint
        keeper = CheckpointKeeper(tf.train.Checkpoint(w=weights), folder, keep=3)
        keeper.save(2)
        filler = full_disk.fill(folder, leave=40000)
        weights.assign(tf.ones([20000]))
        with pytest.raises(process_end.WriteFailed) as failed:
            keeper.save(4)
        _one_line(failed, f"cannot write {folder}/ckpt-4", f"the newest checkpoint is still "
                  f"{folder}/ckpt-2", "run the same command again to resume from it")
        assert sorted(os.listdir(folder)) == ["checkpoint", "ckpt-2.data-00000-of-00001",
                                              "ckpt-2.index", "filler"]
        restored = tf.Variable(tf.ones([20000]))
        resumed = CheckpointKeeper(tf.train.Checkpoint(w=restored), folder, keep=3)
        assert resumed.restore_latest().endswith("ckpt-2") and float(restored[0]) == 0.0
        full_disk.free(filler)
        assert resumed.save(4).endswith("ckpt-4")


def test_the_averager_on_a_full_disk_keeps_the_earlier_average(model_dir):
    import tensorflow as tf

    from t2t_lite.model_dir import averaging, checkpoint_reader

    with full_disk.tmpfs("4m") as folder:
        copy = os.path.join(folder, "model")
        shutil.copytree(model_dir, copy)
        averaged = os.path.join(copy, "averaged")
        first = averaging.average(copy, num_last=1).path
        assert first == os.path.join(averaged, "ckpt-10")
        for name in tf.io.gfile.glob(os.path.join(copy, "ckpt-10.*")):  # a newer checkpoint
            shutil.copyfile(name, name.replace("ckpt-10", "ckpt-20"))
        tf.compat.v1.train.update_checkpoint_state(copy, os.path.join(copy, "ckpt-20"))
        filler = full_disk.fill(folder)
        with pytest.raises(process_end.WriteFailed) as failed:
            averaging.average(copy, num_last=1)
        _one_line(failed, f"cannot write {averaged}/ckpt-20",
                  f"the newest checkpoint is still {first}", "free some space and average again")
        assert checkpoint_reader.listed_paths(averaged) == [first]
        assert not [n for n in os.listdir(averaged) if "ckpt-20" in n]
        model = averaging.models.build(averaging.files.load_configs(copy)[0],
                                       averaging.files.read_run_info(copy)["vocab_size"])
        checkpoint_reader.restore(tf.train.Checkpoint(model=model), first, partial=True)
        full_disk.free(filler)
        assert averaging.average(copy, num_last=1).path == os.path.join(averaged, "ckpt-20")
        assert checkpoint_reader.listed_paths(averaged) == [os.path.join(averaged, "ckpt-20")]


@pytest.mark.slow
def test_a_savedmodel_export_on_a_full_disk_adds_no_version(model_dir):
    from t2t_lite.export import exporters

    exporter = exporters.make_exporter("savedmodel")
    with full_disk.tmpfs("8m") as folder:
        export_dir = os.path.join(folder, "export")
        filler = full_disk.fill(folder)
        with pytest.raises(process_end.WriteFailed) as failed:
            exporter.export(model_dir, export_dir)
        _one_line(failed, "no version was added", "free some space and export again")
        assert not os.path.exists(export_dir) or os.listdir(export_dir) == []
        full_disk.free(filler)
        assert exporter.export(model_dir, export_dir) == os.path.join(export_dir, "1")
        assert os.listdir(export_dir) == ["1"]


# ---- the trainer, end to end -----------------------------------------------------------------

TRAINER_ON_A_FULL_DISK = '''
import sys
from t2t_lite.bin import trainer
from t2t_lite.model_dir import dev_history
from t2t_lite.model_dir.checkpoint_saver import CheckpointKeeper
from tests import full_disk

FOLDER, WHERE, FILL_AT = sys.argv.pop(1), sys.argv.pop(1), int(sys.argv.pop(1))
saving, appending = CheckpointKeeper.save, dev_history.append

def save(self, step):
    if WHERE == "save" and step == FILL_AT:
        full_disk.fill(FOLDER)
    return saving(self, step)

def append(model_dir, step, metrics):
    if WHERE == "evaluation" and step == FILL_AT:
        full_disk.fill(FOLDER)
    return appending(model_dir, step, metrics)

CheckpointKeeper.save, dev_history.append = save, append
trainer.run()
'''


@pytest.mark.slow
@pytest.mark.parametrize("where", ["save", "evaluation"])
def test_the_trainer_on_a_full_disk_says_so_in_one_line_and_resumes(tmp_path, where):
    from t2t_lite import problems
    from t2t_lite.data import datagen

    params = ["max_length=8", "train_samples=2000", "eval_samples=50"]
    data_dir = tmp_path / "data"
    datagen.run(problems.build("algorithmic_reverse", params), str(data_dir))
    script = tmp_path / "trainer_on_a_full_disk.py"
    script.write_text(TRAINER_ON_A_FULL_DISK)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    with full_disk.tmpfs("4m") as folder:
        model_dir = os.path.join(folder, "model")
        command = [sys.executable, str(script), folder, where, "4",
                   "--problem=algorithmic_reverse",
                   *(f"--problem_param={p}" for p in params), f"--data_dir={data_dir}",
                   f"--model_dir={model_dir}", "--hparams_set=tiny", "--train_steps=6",
                   "--gin_param=TrainConfig.batch_tokens = 512",
                   "--gin_param=TrainConfig.max_tokens_per_replica = 512",
                   "--gin_param=TrainConfig.checkpoint_minutes = 0",
                   "--gin_param=TrainConfig.checkpoint_steps = 2",
                   "--gin_param=TrainConfig.bleu_sentences = 0",
                   "--gin_param=TrainConfig.eval_batches = 1"]
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        assert result.returncode == exit_status.WRITE_FAILED, result.stderr[-3000:]
        errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
        assert "Traceback" not in result.stderr and len(errors) == 1, result.stderr[-3000:]
        kept = 2 if where == "save" else 4  # the dev evaluation comes after step 4's save
        # The evaluation's record still fits in its file's last page of the full tmpfs; the
        # best weights' save that follows does not.
        expected = {
            "save": f"error: cannot write {model_dir}/ckpt-4: {NO_SPACE}; the newest checkpoint "
                    f"is still {model_dir}/ckpt-2",
            "evaluation": f"error: cannot write {model_dir}/best/ckpt-4: {NO_SPACE}"}[where]
        assert errors[0].startswith(expected), errors
        with open(os.path.join(model_dir, "checkpoint")) as f:
            assert f'model_checkpoint_path: "ckpt-{kept}"' in f.read()
        assert not [n for n in os.listdir(model_dir)
                    if n.startswith("ckpt-4" if where == "save" else "ckpt-4_temp")]
        assert [json.loads(line)["step"] for line in open(
            os.path.join(model_dir, "dev_evaluations.jsonl"))] == ([2] if where == "save"
                                                                   else [2, 4])
        full_disk.free(os.path.join(folder, "filler"))
        command[4] = "-1"  # no filling this time
        result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
        assert result.returncode == 0, result.stderr[-3000:]
        said = result.stdout + result.stderr
        assert f"resumed from {model_dir}/ckpt-{kept}" in said, said[-3000:]
        with open(os.path.join(model_dir, "checkpoint")) as f:
            assert 'model_checkpoint_path: "ckpt-6"' in f.read()
        history = [json.loads(line)["step"]
                   for line in open(os.path.join(model_dir, "dev_evaluations.jsonl"))]
        assert history[-1] == 6


def test_a_ctranslate2_export_on_a_full_disk_leaves_nothing(tmp_path):
    pytest.importorskip("ctranslate2")
    import keras

    from t2t_lite import hparams
    from t2t_lite.data import vocab
    from t2t_lite.export import ctranslate2_export
    from t2t_lite.models.transformer import Transformer
    from tests.reverse_model import TOKENS, VOCAB

    vocab_path = vocab.write_symbol_vocab(str(tmp_path / "reverse.symbols.txt"), TOKENS[3:])
    keras.utils.set_random_seed(2)
    model = Transformer(hparams.load("tiny", ["MAX_LENGTH = 24"])[0], VOCAB)
    settings = {"beam_size": 2, "alpha": 0.6, "extra_length": 5, "max_length": 24}
    with full_disk.tmpfs("4m") as folder:
        output = os.path.join(folder, "ct2")
        filler = full_disk.fill(folder)
        with pytest.raises(process_end.WriteFailed) as failed:
            ctranslate2_export.convert(model, TOKENS, output, vocab_path=vocab_path,
                                       metadata=settings)
        _one_line(failed, f"cannot write {output}", "nothing was written there")
        assert os.listdir(folder) == ["filler"]
        full_disk.free(filler)
        assert ctranslate2_export.convert(model, TOKENS, output, vocab_path=vocab_path,
                                          metadata=settings) == output
        assert "model.bin" in os.listdir(output)
