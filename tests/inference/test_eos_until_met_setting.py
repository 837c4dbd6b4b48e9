"""The decoder's --eos_until_met reaches the constrained search through the model source, and
only where the search is built here (a model_dir on TensorFlow): an export's is fixed."""
import pytest

from t2t_lite import model_source
from t2t_lite.errors import UserError
from t2t_lite.file_decoding import DecodeOptions


def test_the_setting_travels_from_the_decoder_options_to_the_model_source():
    options = DecodeOptions(model_dir="m", eos_until_met=True)
    source = model_source.ModelSource.from_options(options)
    assert source.eos_until_met is True
    source.check()
    assert model_source.ModelSource.from_options(DecodeOptions(model_dir="m")).eos_until_met \
        is False


@pytest.mark.parametrize("settings", [dict(export_dir="e"),
                                      dict(model_dir="m", engine="ctranslate2")])
def test_an_export_or_ctranslate2_refuses_it(settings):
    with pytest.raises(UserError, match="--eos_until_met needs --model_dir"):
        model_source.ModelSource.from_options(
            DecodeOptions(eos_until_met=True, **settings)).check()
