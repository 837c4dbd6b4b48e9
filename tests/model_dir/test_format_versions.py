"""A model_dir's format version (issue 45, section 5): configs.json carries `format_version`
(t2t_lite/formats.py), a model_dir without it is read as format 1, one of a format this t2t_lite
does not read is refused in one line naming both versions (never "bad configuration"), through the
decoder, exporter and trainer as a user runs them; and the files' gin texts are given to
model_dir/files.py by its caller, never read from gin's globals there (issue 46, point 8)."""
import ast
import dataclasses
import json
import os
import shutil
import subprocess
import sys

import pytest

from t2t_lite import __version__, exit_status, formats, hparams, problems
from t2t_lite.config import DecodeConfig, ModelConfig, TrainConfig
from t2t_lite.errors import UserError
from t2t_lite.model_dir import files

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NEWER = formats.MODEL_DIR.written + 1

# The fields of each configs.json format: an earlier t2t_lite cannot read a field it does not know
# (the dataclass refuses it), so a field added, removed or renamed is a new format.
FORMAT_FIELDS = {
    1: {
        "model": ["attention_bias", "attention_dropout", "d_ff", "d_k", "d_model", "d_v",
                  "dropout", "layer_norm_epsilon", "max_length", "model", "norm_position",
                  "num_heads", "num_layers", "position_encoding", "relu_dropout",
                  "sinusoid_layout"],
        "train": ["adam_beta1", "adam_beta2", "adam_epsilon", "average_last", "average_window",
                  "batch_tokens", "bleu_sentences", "budget_average_fraction",
                  "budget_decay_fraction", "budget_dropout", "budget_eval_fraction",
                  "budget_label_smoothing", "budget_schedule", "budget_subword_sampling",
                  "budget_warmup_fraction", "checkpoint_minutes", "checkpoint_steps",
                  "early_stopping_evals", "eval_batches", "eval_beam_size", "eval_every_steps",
                  "jit_compile", "keep_checkpoints", "label_smoothing", "learning_rate_scale",
                  "learning_rate_schedule", "log_every", "max_length", "max_tokens_per_replica",
                  "mixed_precision", "seed", "subword_sampling", "train_minutes", "train_steps",
                  "warmup_steps"],
        "decode": ["alpha", "beam_size", "extra_length"],
    },
}
# Format 2: DecodeConfig's rule against loops; a format-1 configs.json reads with its default.
FORMAT_FIELDS[2] = {**FORMAT_FIELDS[1],
                    "decode": ["alpha", "beam_size", "extra_length", "no_repeat_ngram_size"]}


def _copy(model_dir, tmp_path, name="model"):
    copy = tmp_path / name
    shutil.copytree(model_dir, copy)
    return copy


def _edit_configs(model_dir, edit):
    path = os.path.join(model_dir, files.CONFIGS)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    edit(data)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2)
    return path


def _newer(data):
    """configs.json as a later t2t_lite might write it: a newer format with a field this one
    does not know."""
    data[formats.FIELD] = NEWER
    data["model"]["rope_base"] = 10000.0


def _refusal(path, found=NEWER, reads=formats.MODEL_DIR.reads(), remedy="upgrade t2t_lite"):
    return (f"{path} has format {found}; this t2t_lite ({__version__}) reads format {reads}: "
            f"{remedy}")


# ---- quick: written, read, refused ----------------------------------------------------------

def test_configs_json_carries_the_format_it_is_written_in(model_dir):
    with open(os.path.join(model_dir, files.CONFIGS), encoding="utf-8") as f:
        data = json.load(f)
    assert list(data) == [formats.FIELD, "model", "train", "decode"]
    assert data[formats.FIELD] == formats.MODEL_DIR.written == 2


def test_a_model_dir_without_the_field_is_format_1_and_reads_as_before(model_dir, tmp_path):
    old = _copy(model_dir, tmp_path)
    _edit_configs(old, lambda data: data.pop(formats.FIELD))
    assert files.load_configs(str(old)) == files.load_configs(model_dir)
    assert formats.check_version({}, formats.MODEL_DIR, "x") == 1


@pytest.mark.parametrize("edit", [_newer, lambda data: data.update({formats.FIELD: NEWER}),
                                  # a newer layout may not have today's sections at all
                                  lambda data: data.clear() or data.update({formats.FIELD: NEWER,
                                                                            "configs": {}})],
                         ids=["new_field", "same_fields", "new_layout"])
def test_a_newer_format_is_refused_naming_both_versions_not_as_a_bad_configuration(
        model_dir, tmp_path, edit):
    newer = _copy(model_dir, tmp_path)
    path = _edit_configs(newer, edit)
    with pytest.raises(UserError) as error:
        files.load_configs(str(newer))
    assert str(error.value) == _refusal(path)
    assert "\n" not in str(error.value)


def test_a_format_older_than_the_oldest_read_is_refused_naming_both(model_dir, tmp_path,
                                                                    monkeypatch):
    # A later t2t_lite that writes two formats on and reads only those, given today's model_dir.
    today = formats.MODEL_DIR.written
    monkeypatch.setattr(formats, "MODEL_DIR",
                        dataclasses.replace(formats.MODEL_DIR, written=today + 2, oldest=today + 1))
    with pytest.raises(UserError) as error:
        files.load_configs(model_dir)
    assert str(error.value) == _refusal(files.configs_where(model_dir), found=today,
                                        reads=f"{today + 1} to {today + 2}",
                                        remedy="read it with an older t2t_lite")


@pytest.mark.parametrize("value", ["1", True, 0, -1, 1.5, None])
def test_a_format_version_that_is_not_a_positive_integer_is_a_damaged_file(model_dir, tmp_path,
                                                                           value):
    edited = _copy(model_dir, tmp_path)
    path = _edit_configs(edited, lambda data: data.update({formats.FIELD: value}))
    with pytest.raises(UserError, match=r"has format_version .*, not a positive integer; the "
                                        r"file is damaged or was edited$") as error:
        files.load_configs(str(edited))
    assert str(error.value).startswith(f"{path} has format_version {value!r}")


def test_the_trainers_record_refuses_a_newer_model_dir_and_leaves_it_as_it_was(model_dir,
                                                                                tmp_path):
    newer = _copy(model_dir, tmp_path)
    path = _edit_configs(newer, _newer)
    before = open(path, "rb").read()
    info = files.read_run_info(str(newer))
    with pytest.raises(UserError) as error:
        files.write_run_info(str(newer), info["problem"], "tiny", [],
                             files.vocab_path(str(newer), info), info["vocab_size"],
                             files.load_configs(model_dir))
    assert str(error.value) == _refusal(path)
    assert open(path, "rb").read() == before


def test_an_old_model_dir_gains_the_field_once_then_stays_unwritten(model_dir, tmp_path):
    old = _copy(model_dir, tmp_path)
    path = _edit_configs(old, lambda data: data.pop(formats.FIELD))
    info = files.read_run_info(str(old))
    configs = files.load_configs(str(old))

    def rerun():
        files.write_run_info(str(old), info["problem"], "tiny", info["gin_params"],
                             files.vocab_path(str(old), info), info["vocab_size"], configs)
        return os.stat(path).st_mtime_ns, open(path, "rb").read()

    first = rerun()
    assert json.loads(first[1])[formats.FIELD] == formats.MODEL_DIR.written
    os.utime(path, ns=(first[0] - 10**9, first[0] - 10**9))
    assert rerun() == (first[0] - 10**9, first[1])  # same content: not written again


def test_a_config_field_added_or_removed_is_a_new_format():
    """Fails when a config dataclass gains or loses a field while configs.json keeps its format:
    list the fields as format N + 1 in FORMAT_FIELDS and raise formats.MODEL_DIR.written."""
    fields = {key: sorted(f.name for f in dataclasses.fields(cls))
              for key, cls in (("model", ModelConfig), ("train", TrainConfig),
                               ("decode", DecodeConfig))}
    written = formats.MODEL_DIR.written
    assert fields == FORMAT_FIELDS.get(written), (
        f"the configs' fields differ from configs.json format {written}'s: an earlier t2t_lite "
        f"cannot read them, so they are format {written + 1} (formats.MODEL_DIR.written)")


def test_files_is_given_its_gin_texts_and_never_reads_gin(model_dir, tmp_path):
    source = open(files.__file__, encoding="utf-8").read()
    imported = {alias.name for node in ast.walk(ast.parse(source))
                if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in node.names} | {
        node.module for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module}
    assert not {"gin", "hparams", "t2t_lite.hparams"} & imported, imported
    assert not {node.id for node in ast.walk(ast.parse(source))
                if isinstance(node, ast.Name)} & {"gin", "hparams"}

    target = tmp_path / "model"
    info = files.read_run_info(model_dir)
    configs = files.load_configs(model_dir)
    args = (str(target), info["problem"], "tiny", [], files.vocab_path(model_dir, info),
            info["vocab_size"], configs)
    hparams.load("tiny", ["DecodeConfig.beam_size = 3"])  # gin's globals hold something else
    files.write_run_info(*args, config_text="# the caller's text\n")
    assert (target / files.CONFIG).read_text() == "# the caller's text\n"
    files.write_run_info(*args)  # no gin text: the configs' values
    assert (target / files.CONFIG).read_text() == files.configs_gin(configs)
    files.write_operative_config(str(target), configs, "# operative\n")
    assert (target / files.OPERATIVE_CONFIG).read_text() == "# operative\n"
    files.write_operative_config(str(target), configs)
    assert (target / files.OPERATIVE_CONFIG).read_text() == files.configs_gin(configs)


# ---- slow: the refusal as a user meets it, one `error:` line --------------------------------

def _run(tool, *flags):
    """`t2t-lite-<tool> flags` in a user's environment (no TF_CPP_MIN_LOG_LEVEL of its own, so
    the tool's stderr is what a user sees)."""
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    return subprocess.run([sys.executable, "-m", f"t2t_lite.bin.{tool}", *flags],
                          capture_output=True, cwd=REPO, env=env, timeout=300)


def _one_error_line(result, expected):
    assert result.returncode == exit_status.USER_ERROR, result.stderr.decode()[-3000:]
    lines = result.stderr.decode().strip().splitlines()
    assert lines == [f"error: {expected}"], lines


@pytest.mark.slow
def test_the_decoder_and_exporter_refuse_a_newer_model_dir_in_one_line(model_dir, tmp_path):
    newer = _copy(model_dir, tmp_path)
    path = _edit_configs(newer, _newer)
    source = tmp_path / "in.txt"
    source.write_text("the house is small .\n")
    _one_error_line(_run("decoder", f"--model_dir={newer}", f"--decode_from_file={source}",
                        f"--decode_to_file={tmp_path / 'out.txt'}"), _refusal(path))
    assert not (tmp_path / "out.txt").exists()
    _one_error_line(_run("exporter", f"--model_dir={newer}", f"--export_dir={tmp_path / 'e'}"),
                    _refusal(path))


@pytest.mark.slow
def test_the_trainer_refuses_to_resume_a_newer_model_dir_in_one_line(tmp_path):
    from t2t_lite.data import datagen

    params = ["max_length=8", "train_samples=200", "eval_samples=20"]
    data_dir = tmp_path / "data"
    problem = problems.build("algorithmic_reverse", params)
    datagen.run(problem, str(data_dir))
    model_dir = tmp_path / "model"
    files.write_run_info(str(model_dir), "algorithmic_reverse", "tiny", [],
                         problem.vocab_path(str(data_dir)),
                         problem.tokenizer(str(data_dir)).vocab_size, hparams.load("tiny"))
    path = _edit_configs(model_dir, _newer)
    before = open(path, "rb").read()
    result = _run("trainer", "--problem=algorithmic_reverse",
                  *[f"--problem_param={p}" for p in params], "--hparams_set=tiny",
                  f"--data_dir={data_dir}", f"--model_dir={model_dir}", "--train_steps=1")
    _one_error_line(result, _refusal(path))
    assert open(path, "rb").read() == before
    assert not [name for name in os.listdir(model_dir) if name.startswith("ckpt-")]
