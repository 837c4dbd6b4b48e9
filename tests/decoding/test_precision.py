"""The opt-in bfloat16 decoding twin: same weights, bfloat16 compute, float32 stays the default."""
import dataclasses

import keras
import numpy as np
import pytest

from t2t_lite import cpu, hparams, models
from t2t_lite.decoding import precision
from t2t_lite.decoding.translate import translate
from t2t_lite.models.transformer import Transformer

VOCAB = 40


@pytest.fixture(scope="module")
def model():
    keras.utils.set_random_seed(5)
    return Transformer(dataclasses.replace(hparams.load("tiny")[0], max_length=16), VOCAB)


def test_float32_is_the_model_itself(model):
    assert precision.twin(model, "float32") is model
    assert precision.choose("float32") == ("float32", "requested")
    with pytest.raises(ValueError):
        precision.choose("float16")


def test_auto_decodes_in_bfloat16_where_it_pays(monkeypatch):
    monkeypatch.setattr(cpu, "bfloat16_pays", lambda **machine: (True, "a probe ran faster"))
    assert precision.choose("auto") == ("bfloat16", "a probe ran faster")
    monkeypatch.setattr(cpu, "bfloat16_pays", lambda **machine: (False, "no bfloat16 units"))
    assert precision.choose("auto") == ("float32", "no bfloat16 units")


@pytest.mark.slow
def test_bfloat16_twin_holds_the_same_weights_and_computes_in_bfloat16(model, monkeypatch):
    built = []

    def build(config, vocab_size, **kwargs):  # the twin is built where every model is
        built.append((config, vocab_size, kwargs))
        return models_build(config, vocab_size, **kwargs)

    models_build = models.build
    monkeypatch.setattr(models, "build", build)
    twin = precision.twin(model, "bfloat16")
    assert built == [(model.config, VOCAB, {"dtype_policy": "bfloat16",
                                            "name": f"{model.name}_bfloat16"})]
    assert keras.config.dtype_policy().name == "float32"  # the global policy is restored
    assert twin.embedding.compute_dtype == "bfloat16"
    assert all(v.dtype == "bfloat16" for v in twin.variables)
    for ours, theirs in zip(model.variables, twin.variables):
        np.testing.assert_allclose(np.asarray(theirs, np.float32), np.asarray(ours), rtol=2 ** -8)
    inputs = np.array([[5, 6, 7, 1], [9, 1, 0, 0]], np.int32)
    sequences, scores = translate(twin, inputs, beam_size=2, extra_length=3)
    assert scores.dtype.name == "float32" and np.all(np.isfinite(scores.numpy()[:, 0]))
    assert np.all((sequences.numpy()[:, 0] == 1).sum(axis=-1) == 1)  # each ends with one EOS
