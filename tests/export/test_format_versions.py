"""An export's format version (issue 45, section 5): a SavedModel's assets.extra/t2t_lite.json and
a CTranslate2 folder's t2t_lite.json carry `format_version` (t2t_lite/formats.py); an export
without it is read as format 1; one of a format this t2t_lite does not read is refused in one line
naming both versions, before anything loads, through the decoder as a user runs it."""
import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from t2t_lite import __version__, exit_status, formats
from t2t_lite.errors import UserError
from t2t_lite.inference import saved_model

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The settings every export's t2t_lite.json holds (model_dir/limits.py's bounds).
SETTINGS = {"beam_size": 2, "alpha": 0.6, "extra_length": 6, "max_length": 16, "vocab_size": 60}


def _refusal(path, found, reads="1", remedy="upgrade t2t_lite"):
    return (f"{path} has format {found}; this t2t_lite ({__version__}) reads format {reads}: "
            f"{remedy}")


def _write(path, values):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(values, f)
    return str(path)


def _edit(path, edit):
    with open(path, encoding="utf-8") as f:
        values = json.load(f)
    edit(values)
    return _write(path, values)


# ---- quick: the SavedModel's metadata file ---------------------------------------------------

def test_a_savedmodel_export_without_the_field_is_format_1(tmp_path):
    _write(tmp_path / saved_model.METADATA_FILE, SETTINGS)
    saved_model.check_export(str(tmp_path))  # passes
    _write(tmp_path / saved_model.METADATA_FILE, dict(SETTINGS, format_version=1))
    saved_model.check_export(str(tmp_path))


def test_a_newer_savedmodel_export_is_refused_naming_both_versions(tmp_path):
    newer = formats.SAVED_MODEL.written + 1
    # A later layout need not hold today's settings: the format is checked first.
    path = _write(tmp_path / saved_model.METADATA_FILE, {"format_version": newer})
    with pytest.raises(UserError) as error:
        saved_model.check_export(str(tmp_path))
    assert str(error.value) == _refusal(path, newer)


def test_a_savedmodel_export_older_than_the_oldest_read_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "SAVED_MODEL",
                        dataclasses.replace(formats.SAVED_MODEL, written=3, oldest=2))
    path = _write(tmp_path / saved_model.METADATA_FILE, SETTINGS)
    with pytest.raises(UserError) as error:
        saved_model.check_export(str(tmp_path))
    assert str(error.value) == _refusal(path, 1, "2 to 3", "export its model_dir again")


def test_each_format_counts_on_its_own(tmp_path, monkeypatch):
    """A SavedModel format 2 says nothing about CTranslate2 folders or model_dirs."""
    monkeypatch.setattr(formats, "SAVED_MODEL",
                        dataclasses.replace(formats.SAVED_MODEL, written=2))
    _write(tmp_path / saved_model.METADATA_FILE, dict(SETTINGS, format_version=2))
    saved_model.check_export(str(tmp_path))
    with pytest.raises(UserError, match="reads format 1: upgrade t2t_lite$"):
        formats.check_version({"format_version": 2}, formats.CTRANSLATE2, "F/t2t_lite.json")
    newer = formats.MODEL_DIR.written + 1
    with pytest.raises(UserError, match=f"reads format {formats.MODEL_DIR.reads()}: upgrade "
                                        "t2t_lite$"):
        formats.check_version({"format_version": newer}, formats.MODEL_DIR, "M/configs.json")


# ---- quick: the CTranslate2 folder ----------------------------------------------------------

@pytest.fixture(scope="module")
def ct2_folder(tmp_path_factory):
    """A CTranslate2 folder converted from a tiny random model, with its settings."""
    pytest.importorskip("ctranslate2")
    import keras

    from t2t_lite import hparams
    from t2t_lite.data import vocab
    from t2t_lite.export import ctranslate2_export
    from t2t_lite.models.transformer import Transformer
    from tests.reverse_model import TOKENS, VOCAB

    root = tmp_path_factory.mktemp("ct2_format")
    vocab_path = vocab.write_symbol_vocab(str(root / "reverse.symbols.txt"), TOKENS[3:])
    config = hparams.load("tiny", ["MAX_LENGTH = 24"])[0]
    keras.utils.set_random_seed(2)
    model = Transformer(config, VOCAB)
    return ctranslate2_export.convert(
        model, TOKENS, str(root / "ct2"), vocab_path=vocab_path,
        metadata={"beam_size": 2, "alpha": 0.6, "extra_length": 5, "max_length": 24})


def test_a_ctranslate2_folder_carries_its_format(ct2_folder):
    from t2t_lite.inference import ctranslate2_engine

    settings = ctranslate2_engine.read_settings(ct2_folder)
    assert settings["format_version"] == formats.CTRANSLATE2.written == 1


def test_a_ctranslate2_folders_t2t_lite_json_has_its_format_first(ct2_folder):
    """format_version opens the file, as in every other t2t_lite.json; the rest stays sorted."""
    with open(os.path.join(ct2_folder, "t2t_lite.json"), encoding="utf-8") as f:
        values = json.load(f)
    keys = list(values)
    assert keys[0] == "format_version" and keys[1:] == sorted(keys[1:]), keys
    assert list(values["model_config"]) == sorted(values["model_config"])


def test_a_ctranslate2_folder_without_the_field_is_format_1_and_translates(ct2_folder, tmp_path):
    from t2t_lite.inference import ctranslate2_engine

    old = tmp_path / "old"
    shutil.copytree(ct2_folder, old)
    _edit(old / saved_model.METADATA_NAME, lambda values: values.pop("format_version"))
    translator = ctranslate2_engine.CTranslate2Translator(str(old))
    assert translator.max_length == 24


def test_a_newer_ctranslate2_folder_is_refused_naming_both_versions(ct2_folder, tmp_path):
    from t2t_lite.inference import ctranslate2_engine

    newer = tmp_path / "newer"
    shutil.copytree(ct2_folder, newer)
    path = _edit(newer / saved_model.METADATA_NAME, lambda values: values.update(
        format_version=formats.CTRANSLATE2.written + 1))
    with pytest.raises(UserError) as error:
        ctranslate2_engine.CTranslate2Translator(str(newer))
    assert str(error.value) == _refusal(path, formats.CTRANSLATE2.written + 1)


# ---- slow: exports as the exporter writes them, read back through the decoder's CLI ----------

def _one_error_line(result, expected):
    assert result.returncode == exit_status.USER_ERROR, result.stderr.decode()[-3000:]
    lines = result.stderr.decode().strip().splitlines()
    assert lines == [f"error: {expected}"], lines


def _decode(tmp_path, *flags):
    """t2t-lite-decoder on a one-line file in a user's environment (no TF_CPP_MIN_LOG_LEVEL of
    its own, so its stderr is what a user sees): (the CompletedProcess, the output's path)."""
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\n")
    out = tmp_path / "out.txt"
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.decoder", *flags,
                             f"--decode_from_file={source}", f"--decode_to_file={out}"],
                            capture_output=True, cwd=REPO, env=env, timeout=300)
    return result, out


@pytest.mark.slow
def test_the_exporter_writes_the_savedmodel_format(export_version_dir):
    with open(os.path.join(export_version_dir, saved_model.METADATA_FILE), encoding="utf-8") as f:
        metadata = json.load(f)
    assert next(iter(metadata)) == "format_version"
    assert metadata["format_version"] == formats.SAVED_MODEL.written == 1


@pytest.mark.slow
def test_the_decoder_reads_an_export_without_the_field_and_refuses_a_newer_one(
        export_version_dir, tmp_path):
    old = tmp_path / "old" / "1"
    shutil.copytree(export_version_dir, old)
    _edit(old / saved_model.METADATA_FILE, lambda values: values.pop("format_version"))
    result, out = _decode(tmp_path, f"--export_dir={old.parent}")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert len(out.read_text().splitlines()) == 1

    newer = tmp_path / "newer" / "1"
    shutil.copytree(export_version_dir, newer)
    found = formats.SAVED_MODEL.written + 1
    path = _edit(newer / saved_model.METADATA_FILE,
                 lambda values: values.update(format_version=found))
    (tmp_path / "work").mkdir()  # the output outside the export
    result, out = _decode(tmp_path / "work", f"--export_dir={newer.parent}")
    _one_error_line(result, _refusal(path, found))
    assert not out.exists()


@pytest.mark.slow
def test_the_decoder_refuses_a_newer_ctranslate2_folder_in_one_line(ct2_folder, tmp_path):
    newer = tmp_path / "newer"
    shutil.copytree(ct2_folder, newer)
    found = formats.CTRANSLATE2.written + 1
    path = _edit(newer / saved_model.METADATA_NAME,
                 lambda values: values.update(format_version=found))
    result, out = _decode(tmp_path, "--engine=ctranslate2", f"--export_dir={newer}")
    _one_error_line(result, _refusal(path, found))
    assert not out.exists()
