"""No tool writes into a model_dir or an export it did not make for that output: the averager
refuses an output folder that is the model_dir, its best/, another model_dir, a folder of
checkpoints other than earlier averages or a folder inside any of them, in one line, before
reading anything; the exporter refuses an export folder that is a model_dir, holds checkpoints or
lies inside one; every tool writing an output file refuses one in a model_dir, whatever its
name. tests/model_dir/test_output_places.py runs the tools on exports too."""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.errors import UserError
from t2t_lite.export import exporters
from t2t_lite.inference import resume
from t2t_lite.model_dir import averaging, outputs
from tests.conftest import copy_model_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _copy(model_dir, tmp_path, numbers=(10, 20, 30)):
    """A copy of the fixture's model_dir listing checkpoints `numbers` (copies of ckpt-10), with
    a best/ holding one."""
    copy, paths = copy_model_dir(model_dir, tmp_path, numbers)
    best = os.path.join(copy, "best")
    os.makedirs(best)
    for name in tf.io.gfile.glob(paths[1] + ".*"):
        shutil.copyfile(name, os.path.join(best, os.path.basename(name)))
    tf.compat.v1.train.update_checkpoint_state(best, os.path.join(best, "ckpt-20"))
    return copy, paths


def _listing(root):
    """Every file under root with its content digest."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


@pytest.fixture
def copy(model_dir, tmp_path):
    return _copy(model_dir, tmp_path)[0]


# ---- the averager ---------------------------------------------------------------------------

def _refused(copy, output_dir, match):
    before = _listing(copy)
    with pytest.raises(UserError, match=match) as refused:
        averaging.average(copy, output_dir=output_dir)
    assert "\n" not in str(refused.value)
    assert _listing(copy) == before  # nothing written, nothing deleted


def test_the_averager_refuses_the_model_dir_itself(copy, tmp_path):
    _refused(copy, copy, "is the model_dir itself: the average would delete its training")
    _refused(copy, copy + "/", "is the model_dir itself")
    link = tmp_path / "link"
    link.symlink_to(copy)
    _refused(copy, str(link), "is the model_dir itself")


def test_the_averager_refuses_the_model_dirs_best(copy):
    _refused(copy, os.path.join(copy, "best"), r"is a model_dir's best/, its best dev")
    shutil.rmtree(os.path.join(copy, "best"))  # before the first evaluation: refused all the same
    _refused(copy, os.path.join(copy, "best"), r"is a model_dir's best/")


def test_the_averager_refuses_another_model_dir_and_a_folder_of_checkpoints(copy, model_dir,
                                                                           tmp_path):
    other = str(tmp_path / "other")
    shutil.copytree(model_dir, other)
    _refused(copy, other, "is a model_dir")
    os.remove(os.path.join(other, "run.json"))
    os.remove(os.path.join(other, "configs.json"))
    _refused(copy, other, r"holds checkpoints that are not averages \(checkpoint, ckpt-10")
    (tmp_path / "file").write_text("x")
    _refused(copy, str(tmp_path / "file"), "exists and is not a folder")


def test_the_refusal_comes_before_anything_is_read(copy):
    with open(os.path.join(copy, "configs.json"), "w") as f:
        f.write("damaged")  # read first otherwise
    _refused(copy, copy, "is the model_dir itself")


def test_the_averager_writes_over_its_own_earlier_averages(copy, tmp_path):
    default = averaging.average(copy, num_last=2).path
    assert default.endswith("averaged/ckpt-30")
    assert averaging.average(copy, num_last=3).path == default  # the default folder again
    elsewhere = str(tmp_path / "mine")
    first = averaging.average(copy, num_last=2, output_dir=elsewhere).path
    assert os.path.isfile(os.path.join(elsewhere, outputs.AVERAGE_RECORD))
    assert averaging.average(copy, num_last=3, output_dir=elsewhere).path == first
    # An average written before the record existed, in a model_dir's averaged/: still one.
    os.remove(os.path.join(copy, "averaged", outputs.AVERAGE_RECORD))
    assert averaging.average(copy, num_last=2).path == default
    assert [os.path.basename(p) for p in tf.train.get_checkpoint_state(copy)
            .all_model_checkpoint_paths] == ["ckpt-10", "ckpt-20", "ckpt-30"]


def test_avg_checkpoints_onto_its_model_dir_is_one_line_and_keeps_every_checkpoint(copy):
    """The issue's reproduction: --output_dir=M left only ckpt-30, without optimizer state."""
    before = _listing(copy)
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.avg_checkpoints",
                             f"--model_dir={copy}", f"--output_dir={copy}"], capture_output=True,
                            text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"error: --output_dir {copy} is the model_dir itself"), lines
    assert _listing(copy) == before


# ---- the exporter ---------------------------------------------------------------------------

@pytest.mark.parametrize("where", ["", "best", "averaged"])
def test_the_exporter_refuses_a_model_dir_or_a_folder_of_checkpoints(copy, where):
    if where == "averaged":
        averaging.average(copy, num_last=1)
    before = _listing(copy)
    for name in exporters.names():
        with pytest.raises(UserError, match="is a model_dir|holds checkpoints|is in the model_dir"):
            exporters.make_exporter(name).export(copy, os.path.join(copy, where))
    assert _listing(copy) == before


def test_an_export_folder_of_its_own_is_fine_and_one_inside_a_model_dir_is_not(copy, tmp_path):
    outputs.check_export_folder(str(tmp_path / "exports"))
    with pytest.raises(UserError, match=f"is in the model_dir {copy}: no tool writes into"):
        outputs.check_export_folder(os.path.join(copy, "export"))


# ---- output files (decoder, scorer, po, summaries) ------------------------------------------

INSIDE = "no tool writes into a model_dir or an export it did not make for that output"


@pytest.mark.parametrize("name", ["ckpt-10.index", "ckpt-10.data-00000-of-00001", "ckpt-40.index",
                                  "checkpoint", "run.json", "configs.json", "config.gin",
                                  "vocab.spm.model", ".lock", "best/ckpt-20.index",
                                  "best/checkpoint", "dev_evaluations.jsonl", "notes.txt",
                                  "newstest2014.translated.de", "best/notes.txt"])
def test_no_output_file_lies_in_a_model_dir_whatever_its_name(copy, name):
    path = os.path.join(copy, name)
    with pytest.raises(UserError, match=INSIDE) as refused:
        resume.check_output_path(path, "--decode_to_file")
    assert str(refused.value).startswith(f"--decode_to_file {path} is in the model_dir {copy}: ")
    with pytest.raises(UserError, match=INSIDE):
        resume.open_output(path)


def test_an_output_file_through_a_link_into_a_model_dir_is_refused(copy, tmp_path):
    link = tmp_path / "out.txt"
    link.symlink_to(os.path.join(copy, "ckpt-30.index"))
    with pytest.raises(UserError, match=INSIDE):
        resume.open_output(str(link))
    folder_link = tmp_path / "elsewhere"
    folder_link.symlink_to(os.path.join(copy, "best"))
    with pytest.raises(UserError, match=f"is in the model_dir {copy}: "):
        resume.check_output_path(str(folder_link / "new.txt"))


def test_output_files_beside_a_model_dir_are_fine(copy, tmp_path):
    resume.check_output_path(str(tmp_path / "newstest2014.translated.de"))
    # A folder holding a model_dir is none: only the folders at and above the output count.
    resume.check_output_path(os.path.join(os.path.dirname(copy), "notes.txt"))
    # A project's own run.json, or a lone *.index, does not make a model_dir.
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "run.json").write_text("{}")
    (tmp_path / "project" / "page.index").write_text("")
    resume.check_output_path(str(tmp_path / "project" / "out.txt"))


def test_the_decoder_refuses_to_write_in_a_model_dir_in_one_line(copy, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\n")
    index = os.path.join(copy, "ckpt-30.index")
    before = _listing(copy)
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.decoder", f"--model_dir={copy}",
                             f"--decode_from_file={source}", f"--decode_to_file={index}"],
                            capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    assert result.stderr.strip().splitlines() == [
        f"error: --decode_to_file {index} is in the model_dir {copy}: {INSIDE}; write the "
        f"output outside it"], result.stderr
    assert _listing(copy) == before
