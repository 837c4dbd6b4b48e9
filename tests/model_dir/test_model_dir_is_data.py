"""A model_dir someone sends you is data: reading it never runs code, and hparams sets are names."""
import os
import shutil
import subprocess
import sys

import pytest

from t2t_lite import exit_status, hparams
from t2t_lite.errors import UserError
from t2t_lite.model_dir import files as model_dir_lib


def _poisoned_copy(model_dir, tmp_path, keep_configs_json):
    """A copy whose config.gin imports a module that leaves a marker file when it runs."""
    copy = tmp_path / "model"
    shutil.copytree(model_dir, copy)
    marker = tmp_path / "code_ran"
    (tmp_path / "evil_module.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    config = copy / model_dir_lib.CONFIG
    config.write_text("import evil_module\n" + config.read_text())
    if not keep_configs_json:
        (copy / model_dir_lib.CONFIGS).unlink()
    return copy, marker


def _run(module, *args, pythonpath):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = str(pythonpath)
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                          env=env, timeout=300)


@pytest.mark.slow
def test_averager_reads_configs_json_and_never_the_gin(model_dir, tmp_path):
    copy, marker = _poisoned_copy(model_dir, tmp_path, keep_configs_json=True)
    out = _run("t2t_lite.bin.avg_checkpoints", f"--model_dir={copy}", "--num_last=1",
               pythonpath=tmp_path)
    assert out.returncode == 0, out.stderr
    assert not marker.exists()


@pytest.mark.slow
def test_model_dir_without_configs_json_is_refused_in_one_line_its_gin_unread(model_dir,
                                                                               tmp_path):
    copy, marker = _poisoned_copy(model_dir, tmp_path, keep_configs_json=False)
    out = _run("t2t_lite.bin.avg_checkpoints", f"--model_dir={copy}", pythonpath=tmp_path)
    assert out.returncode == exit_status.USER_ERROR and not marker.exists()
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "has no configs.json" in lines[0], out.stderr


def test_configs_round_trip_as_values(model_dir):
    # tests/conftest.py trained the fixture with the tiny set and these overrides.
    fixture_params = ["MAX_LENGTH = 16", "DecodeConfig.beam_size = 2",
                      "DecodeConfig.extra_length = 6"]
    configs = model_dir_lib.load_configs(model_dir)
    assert configs == hparams.load("tiny", fixture_params)
    # Values, not gin: whatever gin binds in this process does not leak into a loaded run.
    hparams.load("base", ["DecodeConfig.beam_size = 3"])
    assert model_dir_lib.load_configs(model_dir) == configs


@pytest.mark.parametrize("name", ["/tmp/evil", "../../etc/x", "table3/../base", "", "a b"])
def test_hparams_set_is_a_name_not_a_path(name):
    with pytest.raises(UserError, match="names a set, not a path"):
        hparams.hparams_file(name)


def test_own_gin_file_comes_in_through_gin_file(tmp_path):
    mine = tmp_path / "mine.gin"
    mine.write_text("ModelConfig.num_layers = 3\n")
    assert hparams.load("tiny", gin_files=[str(mine)])[0].num_layers == 3
