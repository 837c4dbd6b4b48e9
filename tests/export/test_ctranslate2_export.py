"""CTranslate2 export: the converted model translates exactly as t2t_lite does.

A tiny Transformer is trained for a few seconds to reverse symbol strings (a trained model: its best
hypotheses end with their own EOS, where the two beam searches agree), written as a model_dir,
exported with `t2t-lite-exporter --format=ctranslate2`, and decoded by both: the best greedy and
beam-4 token ids must be equal, and scores close. Random-weight models of every architecture
variant (post/pre-norm, both sinusoid layouts, learned positions, no attention biases, d_k != d_model
/ heads) are checked with greedy search and CTranslate2's forced-decoding log probabilities.
"""
import dataclasses
import json
import os

import keras
import numpy as np
import pytest
import tensorflow as tf

ctranslate2 = pytest.importorskip("ctranslate2")

from t2t_lite import exit_status, hparams, models  # noqa: E402
from t2t_lite.decoding.translate import translate  # noqa: E402
from t2t_lite.errors import UserError  # noqa: E402
from t2t_lite.export import ctranslate2_export  # noqa: E402
from t2t_lite.inference import ctranslate2_engine, translation_module  # noqa: E402
from t2t_lite.models.layout import Weight  # noqa: E402
from t2t_lite.models.transformer import Transformer  # noqa: E402

from tests.reverse_model import EXTRA, TOKENS, VOCAB  # noqa: E402


def _sources(count, seed=11):
    rng = np.random.default_rng(seed)
    return [[int(i) for i in rng.integers(3, VOCAB, size=rng.integers(1, 9))]
            for _ in range(count)]


def _text(ids):
    return " ".join(TOKENS[i] for i in ids)


@pytest.mark.slow
def test_export_folder_holds_model_vocabulary_and_settings(ct2_dir):
    names = set(os.listdir(ct2_dir))
    assert {"model.bin", "config.json", "shared_vocabulary.json", "reverse.symbols.txt",
            "t2t_lite.json"} <= names
    with open(os.path.join(ct2_dir, "shared_vocabulary.json"), encoding="utf-8") as f:
        assert json.load(f) == TOKENS
    with open(os.path.join(ct2_dir, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    assert config["decoder_start_token"] == "<pad>" and config["eos_token"] == "</s>"
    assert config["add_source_eos"] is True and config["add_source_bos"] is False
    with open(os.path.join(ct2_dir, "t2t_lite.json"), encoding="utf-8") as f:
        settings = json.load(f)
    assert (settings["beam_size"], settings["alpha"], settings["extra_length"],
            settings["max_length"]) == (4, 0.6, EXTRA, 24)


@pytest.mark.slow
@pytest.mark.parametrize("beam_size", [1, 4])
def test_translations_equal_t2t_lite_beam_search(trained_model_dir, ct2_dir, beam_size):
    """Best hypotheses: token ids equal to the decoder's (= SavedModel's) graph, scores close."""
    module = translation_module.from_model_dir(trained_model_dir, beam_size=beam_size)
    alpha = 0.6 if beam_size > 1 else 0.0
    sources = _sources(10)
    result = module.translate_with_settings(tf.constant([_text(s) for s in sources]),
                                            tf.constant(alpha), tf.constant(EXTRA))
    expected = [o.decode().split() for o in result["outputs"][:, 0].numpy()]
    expected_scores = result["scores"][:, 0].numpy()

    ct2 = ctranslate2.Translator(ct2_dir, device="cpu", inter_threads=1, intra_threads=1)
    got = ctranslate2_engine.translate_tokens(
        ct2, [[TOKENS[i] for i in s] for s in sources], beam_size=beam_size, alpha=alpha,
        extra_length=EXTRA, max_length=24)
    assert [hyps[0][0] for hyps in got] == expected
    # CTranslate2's kernels round differently: log probabilities agree to ~1e-3 per token.
    np.testing.assert_allclose([hyps[0][1] for hyps in got], expected_scores, rtol=1e-2,
                               atol=5e-3)
    # Most of them are the reversed source: the model is trained, not a degenerate case.
    assert sum(e == [TOKENS[i] for i in s[::-1]] for e, s in zip(expected, sources)) >= 5

    # The plain CTranslate2 call the README shows gives the same best translations.
    plain = ct2.translate_batch(
        [[TOKENS[i] for i in s] for s in sources], beam_size=beam_size, length_penalty=alpha,
        max_decoding_length=ctranslate2_engine.decode_limits(8, EXTRA, 24),
        min_decoding_length=0)
    assert [r.hypotheses[0] for r in plain] == expected


VARIANTS = [
    {"norm_position": "post"},
    pytest.param({"norm_position": "pre"}, marks=pytest.mark.slow),
    pytest.param({"sinusoid_layout": "concat", "attention_bias": False}, marks=pytest.mark.slow),
    pytest.param({"position_encoding": "learned"}, marks=pytest.mark.slow),
    pytest.param({"d_k": 16, "d_v": 16}, marks=pytest.mark.slow),  # heads * d_k != d_model
]


@pytest.mark.parametrize("overrides", VARIANTS, ids=lambda o: ",".join(f"{k}={v}" for k, v in
                                                                     o.items()))
def test_every_architecture_variant_converts_exactly(overrides, tmp_path):
    config = dataclasses.replace(hparams.load("tiny", ["MAX_LENGTH = 24"])[0], **overrides)
    keras.utils.set_random_seed(2)
    model = Transformer(config, VOCAB)
    ct2_dir = ctranslate2_export.convert(model, TOKENS, str(tmp_path / "ct2"))
    translator = ctranslate2.Translator(ct2_dir, device="cpu", inter_threads=1, intra_threads=1)
    sources = _sources(4, seed=3)

    # Forced decoding: CTranslate2's per-token log probabilities equal the Keras model's.
    targets = _sources(4, seed=4)
    scored = translator.score_batch([[TOKENS[i] for i in s] for s in sources],
                                    [[TOKENS[i] for i in t] for t in targets])
    for source, target, result in zip(sources, targets, scored):
        logits = model({"inputs": np.array([source + [1]], np.int32),
                        "targets": np.array([target + [1]], np.int32)})
        log_probs = tf.gather(tf.nn.log_softmax(logits), [target + [1]], batch_dims=2)[0]
        np.testing.assert_allclose(result.log_probs, log_probs.numpy(), rtol=1e-3, atol=1e-3)

    # Greedy search: the same ids, up to the same length limit (random weights rarely stop).
    for source in sources:
        sequences, _ = translate(model, np.array([source + [1]], np.int32), beam_size=1,
                                 alpha=0.0, extra_length=EXTRA)
        row = sequences[0, 0].numpy().tolist()
        limit = ctranslate2_engine.decode_limits(len(source), EXTRA, config.max_length)
        output = translator.translate_batch([[TOKENS[i] for i in source]], beam_size=1,
                                            max_decoding_length=limit,
                                            min_decoding_length=0)[0].hypotheses[0]
        assert [TOKENS.index(t) for t in output] == row[:row.index(1)]


def test_what_ctranslate2_cannot_express_is_refused_with_a_clear_error(tmp_path):
    config = dataclasses.replace(hparams.load("tiny")[0], d_k=4, d_v=12)
    model = Transformer(config, VOCAB)
    with pytest.raises(UserError, match="d_k=4 differs from d_v=12"):
        ctranslate2_export.convert(model, TOKENS, str(tmp_path / "ct2"))
    assert not os.path.exists(tmp_path / "ct2")


def test_bad_vocabulary_and_occupied_folder_are_refused(tmp_path):
    model = Transformer(hparams.load("tiny")[0], VOCAB)
    with pytest.raises(UserError, match="must start with"):
        ctranslate2_export.convert(model, ["<s>"] + TOKENS[1:], str(tmp_path / "a"))
    with pytest.raises(UserError, match="appears twice"):
        ctranslate2_export.convert(model, TOKENS[:-1] + ["s0"], str(tmp_path / "b"))
    occupied = tmp_path / "c"
    occupied.mkdir()
    (occupied / "keep.txt").write_text("mine")
    with pytest.raises(UserError, match="not an empty directory"):
        ctranslate2_export.convert(model, TOKENS, str(occupied))
    assert os.listdir(occupied) == ["keep.txt"]


@models.register_model("transformer_renamed_test")
class RenamedTransformer(Transformer):
    """Test-only: every variable renamed, in the model (one more attribute on its path) and in its
    layout (models/layout.py), as renaming a layer would."""

    @property
    def renamed(self):
        return self

    @staticmethod
    def layout(config, vocab_size):
        layout = Transformer.layout(config, vocab_size)
        rename = lambda weights: [dataclasses.replace(w, name=f"renamed/{w.name}")  # noqa: E731
                                  for w in weights]
        return dataclasses.replace(layout, weights=rename(layout.weights),
                                   constants=rename(layout.constants))


@models.register_model("transformer_with_output_scale_ct2_test")
class ScaledTransformer(Transformer):
    """Test-only: one more weight, with no role (models/layout.py) and no CTranslate2 place."""

    def __init__(self, config, vocab_size, **kwargs):
        super().__init__(config, vocab_size, **kwargs)
        self.output_scale = self.add_weight(name="output_scale", shape=(), initializer="ones")

    @staticmethod
    def layout(config, vocab_size):
        layout = Transformer.layout(config, vocab_size)
        layout.weights.append(Weight("output_scale", ()))
        return layout


def test_the_mapping_follows_the_layout_names_and_refuses_a_weight_it_cannot_place(
        tmp_path, monkeypatch):
    """The CTranslate2 mapping spells no variable name: a model whose variables are all renamed
    (in the model and its layout) converts to the very same model.bin; a weight the mapping has no
    place for is refused, not dropped."""
    config = dataclasses.replace(hparams.load("tiny", ["MAX_LENGTH = 24"])[0],
                                 norm_position="pre")
    keras.utils.set_random_seed(2)
    plain = models.build(config, VOCAB)
    renamed = models.build(dataclasses.replace(config, model="transformer_renamed_test"), VOCAB)
    renamed.set_weights(plain.get_weights())
    folders = [ctranslate2_export.convert(model, TOKENS, str(tmp_path / name))
               for name, model in (("plain", plain), ("renamed", renamed))]
    plain_bin, renamed_bin = [open(os.path.join(f, "model.bin"), "rb").read() for f in folders]
    assert renamed_bin == plain_bin

    scaled = models.build(
        dataclasses.replace(config, model="transformer_with_output_scale_ct2_test"), VOCAB)
    with pytest.raises(UserError, match="weights output_scale have no counterpart"):
        ctranslate2_export.convert(scaled, TOKENS, str(tmp_path / "scaled"))
    assert not os.path.exists(tmp_path / "scaled")
    # A role of the layout the mapping leaves unplaced is refused by its weight's name too.
    monkeypatch.setattr(ctranslate2_export, "_set_final_norm", lambda spec, arrays, stack: None)
    with pytest.raises(UserError, match="weights encoder_final_norm/beta, encoder_final_norm/"
                                        "gamma, decoder_final_norm/beta, decoder_final_norm"):
        ctranslate2_export.convert(plain, TOKENS, str(tmp_path / "unplaced"))


@pytest.mark.slow
def test_cli_refuses_quantization_without_ctranslate2_format(trained_model_dir, tmp_path, cli):
    result = cli("exporter", f"--model_dir={trained_model_dir}", f"--export_dir={tmp_path}/y",
                 "--quantization=int8")
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1] == (
        "error: --quantization applies to --format=ctranslate2 only")
