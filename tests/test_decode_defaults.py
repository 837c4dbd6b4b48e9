"""Every decoding entry point's keyword defaults are DecodeConfig's (the paper's beam 4, alpha 0.6,
extra length 50) and ModelConfig's max_length: one home, so a set, a flag and a library call
that sets nothing all decode alike."""
import dataclasses
import inspect

import pytest

from t2t_lite.config import DecodeConfig, ModelConfig
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.translate import translate
from t2t_lite.inference.ctranslate2_engine import translate_tokens
from t2t_lite.inference.translation_module import TranslationModule
from t2t_lite.viz.sentence import sentence_attention, translate_ids

# Field defaults, read off the dataclasses: gin bindings of a loaded set cannot move them.
DEFAULTS = {field.name: field.default for field in dataclasses.fields(DecodeConfig)}
DEFAULTS["max_length"] = DEFAULTS["max_decode_length"] = next(
    field.default for field in dataclasses.fields(ModelConfig) if field.name == "max_length")


@pytest.mark.parametrize("function", [beam_search, translate, translate_tokens,
                                      TranslationModule.__init__, translate_ids,
                                      sentence_attention])
def test_defaults_are_the_configs(function):
    parameters = inspect.signature(function).parameters
    shared = {name: parameters[name].default for name in DEFAULTS if name in parameters}
    assert {"beam_size", "alpha"} <= shared.keys()
    assert shared == {name: DEFAULTS[name] for name in shared}
