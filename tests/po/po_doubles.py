"""A model stand-in for t2t-lite-po's tests: a function of the lines is the engine.

    stats = translate_catalog(PoOptions(input=..., output=...), lambda lines, kinds: [...])

translate(lines, kinds) gives one translation (or a list of hypotheses) per line; it answers
the engine's first attempt ("best") and has no further ones, so a line whose hypotheses all
break a format is left untranslated as the model's would be after its last attempt.
"""
import sys

from t2t_lite.po import run as po_run


class FunctionEngine:
    """translate_catalog's engine backed by translate(lines, kinds)."""

    can_force = False  # no search to force spans into
    resumed = 0  # no work folder: nothing is taken from an earlier run

    def __init__(self, translate):
        self.function = translate

    def translate(self, lines, kinds, attempt="best", spans_of=None):
        if attempt != "best":
            return [[] for _ in lines]
        outputs = self.function(list(lines), kinds)
        assert len(outputs) == len(lines), f"{len(outputs)} translations for {len(lines)} lines"
        return [[out] if isinstance(out, str) else list(out) for out in outputs]


def translate_catalog(options, translate, kinds_of=None, progress=sys.stderr):
    """po/run.translate_catalog with FunctionEngine(translate) as its engine."""
    return po_run.translate_catalog(options, engine=FunctionEngine(translate), kinds_of=kinds_of,
                                    progress=progress)
