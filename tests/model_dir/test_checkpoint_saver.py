"""CheckpointKeeper's resume after a kill -9: never a checkpoint whose files are gone.

TensorFlow's CheckpointManager lists a new checkpoint, deletes the oldest one's files, then lists
again; a kill in between leaves the list naming old files that no longer exist. The cases here
are built by deleting files by hand, which is what such a kill leaves behind. The newest listed
checkpoint is never TensorFlow's to lose: its files missing is a UserError, not a fall back to an
older checkpoint that training would then overwrite it from.
"""
import os

import pytest
import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.model_dir.checkpoint_reader import checkpoint_paths
from t2t_lite.model_dir.checkpoint_saver import CheckpointKeeper


def _saved(directory, numbers, keep=5):
    """Checkpoints of one variable, its value = the checkpoint number; returns their paths."""
    value = tf.Variable(0.0)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(value=value), str(directory),
                                         max_to_keep=keep)
    paths = []
    for number in numbers:
        value.assign(float(number))
        paths.append(manager.save(checkpoint_number=number))
    return paths


def _delete_files(path, index=True, data=True):
    for name in tf.io.gfile.glob(path + ".*"):
        if (index and name.endswith(".index")) or (data and ".data-" in name):
            os.remove(name)


def _keeper(directory):
    value = tf.Variable(-1.0)
    return CheckpointKeeper(tf.train.Checkpoint(value=value), str(directory), keep=5), value


@pytest.mark.parametrize("data_left", [False, True])  # a kill between deleting .index and data
def test_resume_skips_listed_checkpoints_whose_files_are_gone(tmp_path, data_left):
    paths = _saved(tmp_path, [10, 20, 30])
    _delete_files(paths[0], data=not data_left)
    keeper, value = _keeper(tmp_path)
    assert keeper.restore_latest() == paths[2]
    assert float(value.numpy()) == 30.0
    assert checkpoint_paths(str(tmp_path)) == paths[1:]


@pytest.mark.parametrize("data_left", [False, True])
def test_resume_refuses_a_newest_checkpoint_whose_files_are_gone(tmp_path, data_left):
    # Falling back to ckpt-20 would retrain steps 21-30 and write over what is left of ckpt-30.
    paths = _saved(tmp_path, [10, 20, 30])
    _delete_files(paths[2], data=not data_left)
    left = sorted(os.listdir(tmp_path))
    keeper, value = _keeper(tmp_path)
    with pytest.raises(UserError, match=f"cannot resume: checkpoint .*ckpt-30 is incomplete: "
                                        f"{paths[2]}.index is missing"):
        keeper.restore_latest()
    assert float(value.numpy()) == -1.0 and sorted(os.listdir(tmp_path)) == left
    assert checkpoint_paths(str(tmp_path)) == paths  # loading it names the file


def test_resume_refuses_a_damaged_newest_checkpoint_instead_of_falling_back(tmp_path):
    paths = _saved(tmp_path, [10, 20])
    data = tf.io.gfile.glob(paths[1] + ".data-*")[0]
    with open(data, "r+b") as f:
        f.truncate(2)
    keeper, _ = _keeper(tmp_path)
    with pytest.raises(UserError, match=f"cannot read checkpoint .*ckpt-20: {data} is damaged"):
        keeper.restore_latest()
    os.remove(data)
    with pytest.raises(UserError, match=f"ckpt-20 is incomplete: {data} is missing"):
        keeper.restore_latest()


def test_resume_with_every_listed_checkpoint_gone_is_a_user_error(tmp_path):
    paths = _saved(tmp_path, [10, 20])
    for path in paths:
        _delete_files(path)
    keeper, _ = _keeper(tmp_path)
    with pytest.raises(UserError, match=f"cannot resume: .*{paths[1]}.index is missing"):
        keeper.restore_latest()


def test_fresh_directory_resumes_nothing(tmp_path):
    keeper, value = _keeper(tmp_path)
    assert keeper.restore_latest() is None
    assert float(value.numpy()) == -1.0
