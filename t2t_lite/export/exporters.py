"""One interface for every export format: an Exporter writes a model_dir's checkpoint for another
runtime, registered under the name `t2t-lite-exporter --format` takes.

    exporter = make_exporter("ctranslate2", quantization="int8")
    exporter.export(model_dir, export_dir)    # the folder written

Options of one format (the SavedModel's beam search precision, CTranslate2's quantization) are
given to its constructor; the settings every format fixes (checkpoint, beam size, alpha, extra
length; each defaults to the model_dir's) to export(). Heavy imports wait until export() runs, so
listing the formats (--help) loads no TensorFlow.
"""
from t2t_lite.errors import UserError

_EXPORTERS = {}


def register_exporter(name):
    """Class decorator: registers an Exporter under `name`."""
    def register(cls):
        _EXPORTERS[name] = cls
        return cls
    return register


def names():
    """The registered formats, in registration order (the default first)."""
    return list(_EXPORTERS)


def make_exporter(name, **options):
    """The Exporter registered as `name`, built with its format's options."""
    if name not in _EXPORTERS:
        raise UserError(f"unknown export format {name!r}; known: {', '.join(_EXPORTERS)}")
    return _EXPORTERS[name](**options)


class Exporter:
    """Writes a model_dir's checkpoint in one format."""

    def export(self, model_dir, export_dir, checkpoint_path=None, beam_size=None, alpha=None,
               extra_length=None, no_repeat_ngram_size=None):
        """Exports the checkpoint (default: the averaged one if newest, else the latest) under
        export_dir; beam_size, alpha, extra_length, no_repeat_ngram_size default to the
        model_dir's DecodeConfig.
        Returns the path written. A beam or alpha outside the bounds is refused first, and so
        is an export_dir that is a model_dir or holds checkpoints (model_dir/outputs.py) and a
        model_dir without a usable run.json and configs.json, before TensorFlow loads."""
        from t2t_lite.inference.translator import check_overrides
        from t2t_lite.model_dir import files, outputs

        outputs.check_export_folder(export_dir)
        check_overrides(beam_size, alpha, no_repeat_ngram_size)
        files.check_model_dir(model_dir)
        settings = {"beam_size": beam_size, "alpha": alpha, "extra_length": extra_length,
                    "no_repeat_ngram_size": no_repeat_ngram_size}
        return self._write(model_dir, export_dir, checkpoint_path, settings)

    def _write(self, model_dir, export_dir, checkpoint_path, settings):
        """settings: the DecodeConfig.settings overrides, None for the model_dir's."""
        raise NotImplementedError


@register_exporter("savedmodel")
class SavedModelExporter(Exporter):
    """A versioned text-in/text-out SavedModel E/<n>/ (export/saved_model_versions.py), for TF Serving.

    precision: the exported beam search's, "float32" (default) or the opt-in "bfloat16".
    protect: the protected spans its text-in signatures keep (TranslationModule's `protect`)."""

    def __init__(self, precision="float32", protect="auto"):
        from t2t_lite.inference import protected_spans  # pure Python: --help stays light

        self.precision = precision
        self.protect = protected_spans.parse_setting(protect)

    def _write(self, model_dir, export_dir, checkpoint_path, settings):
        from t2t_lite.export import saved_model_versions
        from t2t_lite.inference import translation_module

        module = translation_module.from_model_dir(model_dir, checkpoint_path, **settings,
                                                   precision=self.precision, protect=self.protect)
        return saved_model_versions.save(module, export_dir)


@register_exporter("ctranslate2")
class CTranslate2Exporter(Exporter):
    """A CTranslate2 model folder (export/ctranslate2_export.py), new or empty.

    quantization: the weights' type in CTranslate2 (default float32, as trained)."""

    def __init__(self, quantization=None):
        self.quantization = quantization

    def _write(self, model_dir, export_dir, checkpoint_path, settings):
        from t2t_lite.data.tokenizers import vocabulary_tokens
        from t2t_lite.export import ctranslate2_export
        from t2t_lite.inference.ctranslate2_engine import import_ctranslate2
        from t2t_lite.inference.translator import DecodeSettings
        from t2t_lite.model_dir import files, loaded

        import_ctranslate2("--format=ctranslate2")  # a clear error before the (slow) model load
        ctranslate2_export.check_convertible(files.load_configs(model_dir)[0])
        run = loaded.load(model_dir, checkpoint_path)
        model = run.model
        vocab_path = files.vocab_path(model_dir, run.info)
        # The same settings a SavedModel fixes; a folder never carries ones its reader refuses.
        settings = DecodeSettings.for_model(
            model, **run.decode_config.settings(**settings),
            provenance=run.metadata(), where="the export settings")
        return ctranslate2_export.convert(model, vocabulary_tokens(vocab_path), export_dir,
                                          vocab_path=vocab_path, quantization=self.quantization,
                                          metadata=dict(settings.values))
