"""Damaged model_dirs and edge values: one `error:` line naming the file, never a traceback,
nothing left behind; huge --extra_length clamped; short averages said out loud."""
import os

import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.errors import UserError
from t2t_lite.inference import batch_decode, translation_module
from t2t_lite.model_dir import averaging, checkpoint_reader, loaded
from tests.conftest import copy_model_dir

INPUTS = ["the house is small .", "a cat sat on the mat", "we read books every day ?"]




def _data_file(path):
    return tf.io.gfile.glob(path + ".data-*")[0]


def _truncate(name, size):
    with open(name, "r+b") as f:
        f.truncate(size)


def _one_error_line(result):
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    return stderr.strip().splitlines()[-1]


MESSAGES = {
    "truncate_data": r"{data} is damaged or truncated",
    "truncate_index": r"{index} is damaged or truncated",
    "delete_data": r"ckpt-20 is incomplete: {data} is missing",
    "delete_index": r"ckpt-20 is incomplete: {index} is missing",
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(MESSAGES))
def test_damaged_checkpoint_is_a_user_error_naming_the_file(model_dir, tmp_path, damage):
    copy, paths = copy_model_dir(model_dir, tmp_path, numbers=(10, 20))
    data, index = _data_file(paths[1]), paths[1] + ".index"
    if damage.startswith("truncate"):
        _truncate(data if damage == "truncate_data" else index, 100)
    else:
        os.remove(data if damage == "delete_data" else index)
    expected = MESSAGES[damage].format(data=data, index=index)
    with pytest.raises(UserError, match=expected):
        loaded.load(copy)  # the decoder's and exporter's way in
    # The newest checkpoint is never skipped, not even without its index (only older entries
    # are, next test): an average of the others would pass for the last N.
    with pytest.raises(UserError, match="cannot average: .*" + expected):
        averaging.average_checkpoints(copy, 2)
    assert not os.path.exists(os.path.join(copy, "averaged"))


def test_averaging_skips_listed_checkpoints_whose_files_are_gone(model_dir, tmp_path):
    # What a kill -9 inside TensorFlow's save-then-delete leaves: the oldest entry has no files.
    copy, paths = copy_model_dir(model_dir, tmp_path, numbers=(10, 20, 30))
    for name in tf.io.gfile.glob(paths[0] + ".*"):
        os.remove(name)
    assert checkpoint_reader.checkpoint_paths(copy) == paths[1:]
    out, averaged = averaging.average_checkpoints(copy, 5)
    assert averaged == paths[1:]
    assert out.endswith("averaged/ckpt-30")


@pytest.mark.slow
def test_avg_cli_says_when_fewer_checkpoints_than_asked(cli, model_dir, tmp_path):
    copy, _ = copy_model_dir(model_dir, tmp_path, numbers=(10, 20, 30))
    result = cli("avg_checkpoints", f"--model_dir={copy}", "--num_last=5")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert "averaged 3 of the 5 checkpoints asked for" in result.stdout.decode()


@pytest.mark.slow
def test_decoder_cli_truncated_checkpoint_is_one_error_line(cli, model_dir, tmp_path):
    copy, paths = copy_model_dir(model_dir, tmp_path)
    data = _data_file(paths[0])
    _truncate(data, 1000)
    line = _one_error_line(cli("decoder", f"--model_dir={copy}", stdin=b"the house\n"))
    assert line.startswith("error: cannot read checkpoint") and data in line


@pytest.mark.slow
def test_decoder_cli_refuses_a_directory_as_output_and_leaves_nothing(cli, model_dir, tmp_path):
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    line = _one_error_line(cli("decoder", f"--model_dir={model_dir}",
                               f"--decode_to_file={out_dir}", stdin=b"the house\n"))
    assert line == f"error: --decode_to_file {out_dir} is a directory; name a file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


@pytest.fixture(scope="module")
def module(model_dir):
    return translation_module.from_model_dir(model_dir)


@pytest.mark.slow
def test_huge_extra_length_is_clamped_to_max_length(module):
    # 2147483647 + a source length overflowed int32: every translation came back empty.
    inputs = tf.constant(INPUTS)
    run = lambda extra: module.translate_with_settings(  # noqa: E731
        inputs, tf.constant(0.6), tf.constant(extra, tf.int32))
    huge, at_max = run(2147483647), run(module.max_length)
    assert all(huge["outputs"].numpy()[:, 0])
    assert (huge["outputs"].numpy() == at_max["outputs"].numpy()).all()
    assert (huge["scores"].numpy() == at_max["scores"].numpy()).all()
    assert all(run(-2147483648)["outputs"].numpy()[:, 0] == b"")  # no output allowed: none


@pytest.mark.slow
def test_decoder_cli_huge_extra_length(cli, model_dir, module):
    source = "\n".join(INPUTS).encode() + b"\n"
    result = cli("decoder", f"--model_dir={model_dir}", "--extra_length=2147483647",
                 stdin=source)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    expected, _ = batch_decode.decode_lines(module, source.split(b"\n")[:-1], alpha=0.6,
                                            extra_length=module.max_length)
    assert result.stdout.decode().split("\n")[:-1] == expected
    assert all(expected)
