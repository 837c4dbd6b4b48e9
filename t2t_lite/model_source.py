"""Which model and which engine: the one choice of what translates, for the decoder, the scorer
and t2t-lite-po.

    source = ModelSource.from_options(options)   # the flat flags of any tool's options
    source.check(); source.identity(); source.problem_and_target_language(); source.load()

It sits above export/, whose converter turns a model_dir into a CTranslate2 folder on the fly.
A translator comes from a model_dir's checkpoint (TensorFlow), a SavedModel export (TensorFlow)
or a CTranslate2 folder (or a model_dir converted to one on the fly). `check_choice` refuses a
combination of settings that cannot work before anything is read, so a mistake costs no model
load; `load` builds the translator.
"""
import dataclasses
import json
import os
from typing import Optional

from t2t_lite.errors import UserError


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """A model_dir (and a checkpoint of it) or an export, the engine that runs it and how:
    built once from a tool's flags, it owns the checks of that choice, the identity a resumed
    run must match, the problem and target language the model records, and loading."""
    model_dir: Optional[str] = None
    export_dir: Optional[str] = None
    checkpoint_path: Optional[str] = None
    engine: str = "tensorflow"
    precision: str = "float32"  # the --decode_precision flag
    compute_type: str = "default"
    beam_size: Optional[int] = None
    eos_until_met: bool = False  # the decoder's --eos_until_met
    no_repeat_ngram_size: Optional[int] = None  # None: the model's

    @classmethod
    def from_options(cls, options):
        """The ModelSource of a tool's options (DecodeOptions, ScoreOptions, PoOptions): their
        flags of the same names, the defaults where a tool has no such flag."""
        values = {field.name: getattr(options, field.name, field.default)
                  for field in dataclasses.fields(cls)}
        values["precision"] = getattr(options, "decode_precision", cls.precision)
        return cls(**values)

    def check(self):
        """UserError for a choice that cannot work, before anything is read (no TensorFlow
        import unless a --beam_size is given, which is checked against the model's bounds)."""
        check_choice(self.model_dir, self.export_dir, self.checkpoint_path, self.engine,
                     self.precision, self.compute_type, self.eos_until_met)
        if self.beam_size is not None and self.beam_size < 1:
            raise UserError(f"--beam_size must be >= 1, got {self.beam_size}")
        if self.beam_size is not None or self.no_repeat_ngram_size is not None:
            from t2t_lite.inference.translator import check_overrides

            check_overrides(beam_size=self.beam_size,
                            no_repeat_ngram_size=self.no_repeat_ngram_size)

    def identity(self):
        """What identifies the model a resumed run must use (resume.model_identity)."""
        from t2t_lite.inference import resume

        return resume.model_identity(self.model_dir, self.checkpoint_path, self.export_dir,
                                     self.engine)

    def recorded_beam_size(self):
        """The beam the search will use, read without TensorFlow: --beam_size, else the model's
        (configs.json) or the export's (its metadata); None where it cannot be read (loading
        says what is wrong with the model)."""
        if self.beam_size is not None:
            return self.beam_size
        return _recorded(self.model_dir, self.export_dir).get("beam_size")

    def problem_and_target_language(self):
        """(problem name, target language) the model records; either may be None. The target
        language is the problem's `target_lang` parameter, else its class's target_language."""
        recorded = _recorded(self.model_dir, self.export_dir)
        problem, params = recorded.get("problem"), recorded.get("problem_params") or []
        for pair in params:
            key, _, value = str(pair).partition("=")
            if key == "target_lang" and value:
                return problem, value
        return problem, problem_target_language(problem)

    def load(self, alpha=None, precision=None, compute_type=None, searches=1):
        """The translator (see `load`); precision and compute_type: what the machine-chosen
        settings resolved to, if not this source's own."""
        return load(self.model_dir, self.export_dir, self.checkpoint_path, self.engine,
                    beam_size=self.beam_size, alpha=alpha, precision=precision or self.precision,
                    compute_type=compute_type or self.compute_type, searches=searches,
                    eos_until_met=self.eos_until_met,
                    no_repeat_ngram_size=self.no_repeat_ngram_size)


def _recorded(model_dir, export_dir):
    """{problem, problem_params, beam_size} as a model_dir's run.json and configs.json or an
    export's metadata record them; {} where they cannot be read (loading says what is wrong
    with the model)."""
    try:
        if model_dir:
            from t2t_lite.model_dir import files

            info = files.read_run_info(model_dir)
            recorded = {"problem": info.get("problem"),
                        "problem_params": info.get("problem_params")}
            try:
                recorded["beam_size"] = files.load_configs(model_dir)[2].beam_size
            except UserError:
                pass
            return recorded
        if export_dir:
            from t2t_lite.inference import saved_model

            path = os.path.join(export_dir, saved_model.METADATA_NAME)
            if not os.path.isfile(path):
                path = os.path.join(saved_model.latest_version_dir(export_dir),
                                    saved_model.METADATA_FILE)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    metadata = json.load(f)
                return {key: metadata.get(key)
                        for key in ("problem", "problem_params", "beam_size")}
    except (OSError, ValueError, UserError):
        pass
    return {}


def problem_target_language(problem):
    """A registered problem's target_language (data/problem.py), else None."""
    if not problem:
        return None
    from t2t_lite import problems, registry  # noqa: F401  (problems: the built-ins registered)

    try:
        value = getattr(registry.problem_class(problem), "target_language", None)
    except UserError:
        return None
    return value if isinstance(value, str) and value else None


def check_choice(model_dir=None, export_dir=None, checkpoint_path=None, engine="tensorflow",
          precision="float32", compute_type="default", eos_until_met=False):
    """UserError for settings that do not fit together (named as the CLIs' flags)."""
    if eos_until_met and (export_dir or engine != "tensorflow"):
        raise UserError("--eos_until_met needs --model_dir and --engine=tensorflow: an export's "
                        "constrained search is fixed when it is exported")
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
         beam_size=None, alpha=None, precision="float32", compute_type="default", searches=1,
         eos_until_met=False, no_repeat_ngram_size=None):
    """The translator (inference/translator.py's Translator protocol) for these settings: the one
    way to load a model for translation. check() first; `precision` is resolved ("float32" or
    "bfloat16"); `searches`: how many searches run at once (CTranslate2's threads);
    `eos_until_met`: the constrained search's EOS rule (TranslationModule);
    `no_repeat_ngram_size`: the rule against loops (None: the model's; an export's is fixed)."""
    check_choice(model_dir, export_dir, checkpoint_path, engine, precision, compute_type,
                 eos_until_met)
    if engine == "ctranslate2":
        return _ctranslate2(model_dir, export_dir, checkpoint_path, beam_size, compute_type,
                            searches, no_repeat_ngram_size)
    if model_dir:
        from t2t_lite.inference import translation_module

        return translation_module.from_model_dir(model_dir, checkpoint_path, beam_size=beam_size,
                                         alpha=alpha, precision=precision,
                                         eos_until_met=eos_until_met,
                                         no_repeat_ngram_size=no_repeat_ngram_size)
    from t2t_lite.inference import saved_model

    version_dir = saved_model.latest_version_dir(export_dir)
    module = saved_model.load(version_dir)
    fixed = module.settings.beam_size
    if beam_size is not None and beam_size != fixed:
        raise UserError(f"{version_dir} was exported with beam size {fixed}; re-export with "
                        f"--beam_size={beam_size} or decode with --model_dir")
    fixed = module.settings.no_repeat_ngram_size
    if no_repeat_ngram_size is not None and no_repeat_ngram_size != fixed:
        raise UserError(f"{version_dir} was exported with --no_repeat_ngram_size={fixed}; "
                        f"re-export with --no_repeat_ngram_size={no_repeat_ngram_size} or "
                        "decode with --model_dir")
    return module


def _ctranslate2(model_dir, export_dir, checkpoint_path, beam_size, compute_type, searches,
                 no_repeat_ngram_size=None):
    from t2t_lite.inference import ctranslate2_engine

    folder, keep_alive = export_dir, None
    if model_dir:
        folder, keep_alive = _converted(model_dir, checkpoint_path)
    return ctranslate2_engine.CTranslate2Translator(
        folder, compute_type=compute_type, beam_size=beam_size, keep_alive=keep_alive,
        searches=searches, no_repeat_ngram_size=no_repeat_ngram_size)


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
