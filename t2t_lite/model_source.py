"""Which model and which engine: the decoder's and the scorer's one choice of what translates.

It sits above export/, whose converter turns a model_dir into a CTranslate2 folder on the fly.
A translator comes from a model_dir's checkpoint (TensorFlow), a SavedModel export (TensorFlow)
or a CTranslate2 folder (or a model_dir converted to one on the fly). `check_choice` refuses a
combination of settings that cannot work before anything is read, so a mistake costs no model
load; `load` builds the translator.
"""
from t2t_lite.errors import UserError


def check_choice(model_dir=None, export_dir=None, checkpoint_path=None, engine="tensorflow",
          precision="float32", compute_type="default"):
    """UserError for settings that do not fit together (named as the CLIs' flags)."""
    if bool(model_dir) == bool(export_dir):
        raise UserError("give exactly one of --model_dir and --export_dir")
    if checkpoint_path and not model_dir:
        raise UserError("--checkpoint_path needs --model_dir (an export holds one checkpoint)")
    if engine == "ctranslate2":
        if precision != "float32":
            raise UserError("--decode_precision is TensorFlow's; CTranslate2 has --compute_type")
        return
    if compute_type != "default":
        raise UserError("--compute_type applies to --engine=ctranslate2 only")
    if export_dir and precision != "float32":
        raise UserError("--decode_precision needs --model_dir: an export's precision is fixed "
                        "(t2t-lite-exporter --decode_precision)")


def load(model_dir=None, export_dir=None, checkpoint_path=None, engine="tensorflow",
         beam_size=None, alpha=None, precision="float32", compute_type="default", searches=1):
    """The translator (inference/translator.py's Translator protocol) for these settings: the one
    way to load a model for translation. check() first; `precision` is resolved ("float32" or
    "bfloat16"); `searches`: how many searches run at once (CTranslate2's threads)."""
    check_choice(model_dir, export_dir, checkpoint_path, engine, precision, compute_type)
    if engine == "ctranslate2":
        return _ctranslate2(model_dir, export_dir, checkpoint_path, beam_size, compute_type,
                            searches)
    if model_dir:
        from t2t_lite.inference import translation_module

        return translation_module.from_model_dir(model_dir, checkpoint_path, beam_size=beam_size,
                                         alpha=alpha, precision=precision)
    from t2t_lite.inference import saved_model

    version_dir = saved_model.latest_version_dir(export_dir)
    module = saved_model.load(version_dir)
    fixed = module.settings.beam_size
    if beam_size is not None and beam_size != fixed:
        raise UserError(f"{version_dir} was exported with beam size {fixed}; re-export with "
                        f"--beam_size={beam_size} or decode with --model_dir")
    return module


def _ctranslate2(model_dir, export_dir, checkpoint_path, beam_size, compute_type, searches):
    from t2t_lite.inference import ctranslate2_engine

    folder, keep_alive = export_dir, None
    if model_dir:
        folder, keep_alive = _converted(model_dir, checkpoint_path)
    return ctranslate2_engine.CTranslate2Translator(
        folder, compute_type=compute_type, beam_size=beam_size, keep_alive=keep_alive,
        searches=searches)


def _converted(model_dir, checkpoint_path=None):
    """A model_dir's checkpoint converted into a temporary CTranslate2 folder: (the model
    folder, the TemporaryDirectory that removes it when dropped or at exit)."""
    import os
    import tempfile

    from t2t_lite.export import exporters
    from t2t_lite.inference.ctranslate2_engine import import_ctranslate2

    import_ctranslate2()  # before the conversion imports it
    keep_alive = tempfile.TemporaryDirectory(prefix="t2t_lite_ct2_")
    folder = os.path.join(keep_alive.name, "model")
    exporters.make_exporter("ctranslate2").export(model_dir, folder,
                                                  checkpoint_path=checkpoint_path)
    return folder, keep_alive
