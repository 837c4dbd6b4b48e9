"""The Translator protocol and DecodeSettings: every engine offers the same interface, and its
settings are one checked value, the same whichever engine runs the same model."""
import pytest

from t2t_lite import model_source
from t2t_lite.errors import UserError
from t2t_lite.inference import translator as translator_lib
from t2t_lite.inference.translator import DecodeSettings, SavedModelTranslator, Translator

VALUES = dict(beam_size=4, alpha=0.6, extra_length=50, max_length=256, vocab_size=8000)
DIMS = dict(num_layers=3, d_model=256, num_heads=4)


def test_the_models_widths_come_from_their_own_keys_or_the_model_config():
    assert DecodeSettings.from_values(dict(VALUES, **DIMS), "x").model_dims() == DIMS
    nested = DecodeSettings.from_values(dict(VALUES, model_config=dict(DIMS, d_ff=1024,
                                                                       max_length=256,
                                                                       vocab_size=8000)), "x")
    assert nested.model_dims() == DIMS
    assert DecodeSettings.from_values(dict(VALUES, d_model=True), "x").model_dims() == {}
    settings = DecodeSettings.from_values(dict(VALUES, problem="translate_ende_gettext"), "x")
    assert (settings.problem, settings.max_source_tokens) == ("translate_ende_gettext", 255)
    assert settings.values["vocab_size"] == 8000


@pytest.mark.parametrize("change, message", [
    (dict(beam_size=0), r"^E \(its describe\(\)\): beam_size = 0 is outside the sane range "
                        r"\[1, 1024\]; the export is damaged or was edited$"),
    (dict(alpha=float("nan")), r"^E \(its describe\(\)\): alpha = nan is outside"),
    (dict(beam_size=1024, max_length=4096), r"beam"),
])
def test_settings_outside_the_bounds_are_refused_naming_their_source(change, message):
    with pytest.raises(UserError, match=message):
        DecodeSettings.from_values(dict(VALUES, **change), "E (its describe())")


def test_a_settings_value_checks_itself_when_built():
    with pytest.raises(UserError, match=r"^decoding: beam_size = 2000 is outside"):
        DecodeSettings(**dict(VALUES, beam_size=2000))
    with pytest.raises(UserError, match="holds no t2t_lite settings"):
        DecodeSettings.from_values(["not", "a", "dict"], "E")


def test_overrides_get_the_flags_names():
    translator_lib.check_overrides(beam_size=4, alpha=0.0)
    with pytest.raises(UserError, match=r"^--beam_size: beam_size = 0 is outside"):
        translator_lib.check_overrides(beam_size=0)
    with pytest.raises(UserError, match=r"^--alpha: alpha = inf is outside"):
        translator_lib.check_overrides(alpha=float("inf"))


class _OldExport:
    """What tf.saved_model.load gives for an export without tokenize/translate_ids."""

    def describe(self):
        raise AssertionError("not read: the functions are missing")


def test_an_export_without_the_decoders_functions_is_one_line():
    with pytest.raises(UserError, match=r"^E/1 has no tokenize/translate_ids function \(an older "
                                        r"t2t_lite wrote it\); re-export it"):
        SavedModelTranslator(_OldExport(), "E/1")


def _same_settings(a, b):
    fields = ("beam_size", "alpha", "extra_length", "max_length", "vocab_size", "problem")
    return {f: getattr(a, f) for f in fields} == {f: getattr(b, f) for f in fields}


@pytest.mark.slow
def test_a_checkpoint_and_its_export_are_translators_with_the_same_settings(
        model_dir, export_version_dir):
    checkpoint = model_source.load(model_dir=model_dir)
    export = model_source.load(export_dir=export_version_dir)
    for engine in (checkpoint, export):
        assert isinstance(engine, Translator)
        assert isinstance(engine.settings, DecodeSettings)
        assert engine.supports_constraints
    assert _same_settings(checkpoint.settings, export.settings)
    assert checkpoint.settings.model_dims() == export.settings.model_dims()


@pytest.mark.slow
def test_ctranslate2_is_a_translator_with_its_model_dirs_settings(trained_model_dir, ct2_dir):
    pytest.importorskip("ctranslate2")
    ct2 = model_source.load(export_dir=ct2_dir, engine="ctranslate2")
    checkpoint = model_source.load(model_dir=trained_model_dir)
    assert isinstance(ct2, Translator) and not ct2.supports_constraints
    assert _same_settings(ct2.settings, checkpoint.settings)
    assert ct2.settings.values["engine"] == "ctranslate2 (default)"
