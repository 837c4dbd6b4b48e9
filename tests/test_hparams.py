"""gin hparam sets: derivation by include, overrides, and clear errors."""
import pathlib
import re

import pytest

from t2t_lite import hparams
from t2t_lite.errors import UserError


def test_sets_derive_with_include_not_copy():
    root = hparams.hparams_dir()
    for path in root.rglob("*.gin"):
        if path.name == "base.gin":
            continue
        text = path.read_text()
        assert re.search(r"^include '", text, re.M), f"{path} must derive from another set"
        assert len([l for l in text.splitlines() if "=" in l and not l.startswith("#")]) <= 16


def test_paper_values_in_base():
    model, train, decode = hparams.load("base")
    assert (model.num_layers, model.d_model, model.d_ff, model.num_heads) == (6, 512, 2048, 8)
    assert (model.key_dim, model.value_dim, model.dropout, model.norm_position) == (64, 64, 0.1,
                                                                                    "post")
    assert (model.attention_dropout, model.relu_dropout) == (0.0, 0.0)
    assert (train.adam_beta1, train.adam_beta2, train.adam_epsilon) == (0.9, 0.98, 1e-9)
    assert (train.warmup_steps, train.label_smoothing, train.batch_tokens) == (4000, 0.1, 25000)
    assert (decode.beam_size, decode.alpha, decode.extra_length) == (4, 0.6, 50)


def test_big_and_variants():
    big = hparams.load("big")[0]
    assert (big.d_model, big.d_ff, big.num_heads, big.dropout) == (1024, 4096, 16, 0.3)
    assert hparams.load("big_enfr")[0].dropout == 0.1
    assert hparams.load("base_prenorm")[0].norm_position == "pre"
    assert hparams.load("table3/E_learned_positions")[0].position_encoding == "learned"
    parsing_model, _, parsing_decode = hparams.load("parsing")
    assert (parsing_model.num_layers, parsing_model.d_model) == (4, 1024)
    assert (parsing_decode.beam_size, parsing_decode.alpha, parsing_decode.extra_length) == (
        21, 0.3, 300)


def test_gin_param_overrides_one_value():
    model, train, _ = hparams.load("base", ["ModelConfig.num_layers = 3",
                                            "TrainConfig.warmup_steps = 10"])
    assert (model.num_layers, model.d_model, train.warmup_steps) == (3, 512, 10)


@pytest.mark.parametrize("name,params,message", [
    ("no_such_set", [], "unknown hparams set"),
    ("../base", [], "names a set, not a path"),
    ("base", ["ModelConfig.no_such_field = 1"], "no_such_field"),
    ("base", ["ModelConfig.norm_position = 'sideways'"], "norm_position"),
    ("base", ["ModelConfig.num_layers = "], "bad gin"),
])
def test_bad_names_and_values_are_user_errors(name, params, message):
    with pytest.raises(UserError, match=message):
        hparams.load(name, params)


def test_sets_found_outside_the_source_tree(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "base" in hparams.list_hparams_sets()
    assert pathlib.Path(hparams.hparams_file("tiny")).is_file()


def test_a_base_gin_in_the_working_directory_does_not_replace_the_parent_set(tmp_path,
                                                                             monkeypatch):
    # Why hparams.parse puts the sets' folder before gin's '' (working directory) prefix.
    expected = hparams.load("tiny")
    (tmp_path / "base.gin").write_text("ModelConfig.num_layers = 99\n")
    monkeypatch.chdir(tmp_path)
    assert hparams.load("tiny") == expected
