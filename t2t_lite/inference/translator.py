"""What translates: the interface every engine offers the decoder, the scorer and t2t-lite-po.

    DecodeSettings          an engine's fixed settings (beam, alpha, lengths, the model's widths)
                            and provenance; it checks itself once, when it is built
    check_overrides         the one check of a user's --beam_size / --alpha
    Translator              the protocol of the three engines: TranslationModule (a checkpoint),
                            SavedModelTranslator (an export) and CTranslate2Translator
    SavedModelTranslator    a loaded export behind the protocol

model_source.load is the one way to get a Translator for a model_dir or an export.
"""
import dataclasses
import json
from typing import Any, Mapping, Optional, Protocol, runtime_checkable

from t2t_lite.config import MODEL_DIMENSIONS
from t2t_lite.errors import UserError
from t2t_lite.model_dir import limits


@dataclasses.dataclass(frozen=True)
class DecodeSettings:
    """What an engine fixes for every translation, and where it came from (`values`: every key
    the engine's describe() or metadata file holds, as read). A value outside a model_dir's
    bounds is a UserError when it is built (`where` and `why` name the source in the message);
    from_values also checks the model a dict names: an export someone sent is data."""
    beam_size: int
    alpha: float
    extra_length: int
    max_length: int
    vocab_size: int
    # The rule against loops (decoding/repeats.py); an export written without it has 0.
    no_repeat_ngram_size: int = 0
    num_layers: Optional[int] = None
    d_model: Optional[int] = None
    num_heads: Optional[int] = None
    problem: Optional[str] = None
    values: Mapping[str, Any] = dataclasses.field(default_factory=dict, compare=False,
                                                  repr=False)
    where: dataclasses.InitVar[str] = "decoding"
    why: dataclasses.InitVar[str] = ""

    def __post_init__(self, where, why):
        limits.check_bounds({"beam_size": self.beam_size, "alpha": self.alpha,
                            "extra_length": self.extra_length, "max_length": self.max_length,
                            "vocab_size": self.vocab_size,
                            "no_repeat_ngram_size": self.no_repeat_ngram_size,
                            **self.model_dims()}, where, why)
        limits.check_beam_steps(self.beam_size, self.max_length, where)
        object.__setattr__(self, "alpha", float(self.alpha))  # an int alpha is in bounds too

    @classmethod
    def for_model(cls, model, beam_size, alpha, extra_length, no_repeat_ngram_size=0,
                  provenance=None, where="decoding"):
        """The settings an engine running `model` fixes (a TranslationModule, an export of
        either format), with `provenance` (the run's problem, hparams, checkpoint, ...)."""
        from t2t_lite.decoding.translate import clamp_to_limit

        max_length = int(model.config.max_length)
        values = dict(provenance or {})
        values.update(beam_size=beam_size, alpha=alpha, vocab_size=int(model.vocab_size),
                      no_repeat_ngram_size=no_repeat_ngram_size,
                      # clamped as translate() clamps it: any configured value fits int32
                      extra_length=clamp_to_limit(extra_length, max_length),
                      max_length=max_length, max_source_tokens=max_length - 1,
                      **{name: int(getattr(model.config, name)) for name in _MODEL_DIMS})
        return cls.from_values(values, where, why="")

    @classmethod
    def from_values(cls, values, where, why=limits.DAMAGED_EXPORT):
        """Settings from a dict (describe()'s JSON, t2t_lite.json, a module's metadata); a
        UserError naming `where` (and adding `why`) for anything outside the bounds."""
        limits.check_is_settings(values, where)
        config = values.get("model_config") if isinstance(values.get("model_config"), dict) else {}
        dims = {}
        for name in _MODEL_DIMS:  # the search memory's widths; an older export may lack them
            value = values.get(name, config.get(name))
            if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                dims[name] = value
        problem = values.get("problem")
        # Built first: its own check bounds the values (a missing one is None, out of bounds).
        settings = cls(beam_size=values.get("beam_size"), alpha=values.get("alpha"),
                       extra_length=values.get("extra_length"),
                       max_length=values.get("max_length"), vocab_size=values.get("vocab_size"),
                       no_repeat_ngram_size=values.get("no_repeat_ngram_size", 0),
                       problem=problem if isinstance(problem, str) else None,
                       values=dict(values), where=where, why=why, **dims)
        limits.check_named_model(values, where, why)
        return settings

    @property
    def max_source_tokens(self):
        return self.max_length - 1

    def model_dims(self):
        """{num_layers, d_model, num_heads}: the ones known."""
        return {name: getattr(self, name) for name in _MODEL_DIMS
                if getattr(self, name) is not None}

    def to_json(self):
        return json.dumps(dict(self.values), sort_keys=True, indent=2)


# The model's dimensions (config.MODEL_DIMENSIONS) DecodeSettings carries: the search memory's.
_MODEL_DIMS = tuple(name for name in MODEL_DIMENSIONS
                    if name in {field.name for field in dataclasses.fields(DecodeSettings)})

def check_overrides(beam_size=None, alpha=None, no_repeat_ngram_size=None):
    """UserError for a --beam_size, --alpha or --no_repeat_ngram_size outside the bounds a
    model_dir's settings keep."""
    for name, value in (("beam_size", beam_size), ("alpha", alpha),
                        ("no_repeat_ngram_size", no_repeat_ngram_size)):
        if value is not None:
            limits.check_bounds({name: value}, f"--{name}")


@runtime_checkable
class Translator(Protocol):
    """What the decoder runs. tokenize: strings [B] -> {"ids" int32 [B, W] (truncated,
    EOS-terminated, 0-padded), "token_counts" int32 [B]}; translate_ids: those ids, alpha,
    extra_length -> {"outputs" string [B, K], "scores" float [B, K]}. With
    supports_constraints, also encode_constraints and translate_constrained_ids
    (TranslationModule's)."""
    settings: DecodeSettings
    supports_constraints: bool

    def tokenize(self, inputs): ...

    def translate_ids(self, ids, alpha, extra_length): ...


class SavedModelTranslator:
    """A loaded export (tf.saved_model.load) behind the Translator protocol, its describe()
    settings read and checked once."""

    def __init__(self, module, version_dir):
        missing = [name for name in ("describe", "tokenize", "translate_ids")
                   if not hasattr(module, name)]
        if missing:
            raise UserError(f"{version_dir} has no {'/'.join(missing)} function (an older "
                            "t2t_lite wrote it); re-export it with t2t-lite-exporter")
        try:
            values = json.loads(module.describe().numpy().decode("utf-8"))
        except ValueError:
            values = None
        self.settings = DecodeSettings.from_values(values, f"{version_dir} (its describe())")
        self.module, self.version_dir = module, version_dir
        self.supports_constraints = hasattr(module, "translate_constrained_ids")

    def __getattr__(self, name):
        # The export's other functions (serve, nbest, translate_constrained, attention,
        # describe, ...) as tf.saved_model.load gives them.
        if name in ("module", "version_dir"):
            raise AttributeError(name)
        return getattr(self.module, name)

    def tokenize(self, inputs):
        return self.module.tokenize(inputs)

    def translate_ids(self, ids, alpha, extra_length):
        return self.module.translate_ids(ids, alpha, extra_length)

    def encode_constraints(self, constraints):
        return self.module.encode_constraints(constraints)

    def translate_constrained_ids(self, ids, positive, negative, alpha, extra_length):
        return self.module.translate_constrained_ids(ids, positive, negative, alpha, extra_length)

    def score(self, inputs, targets):
        if not hasattr(self.module, "score"):
            raise UserError(f"{self.version_dir} has no score function (an older t2t_lite wrote "
                            "it); re-export it with t2t-lite-exporter")
        return self.module.score(inputs, targets)
