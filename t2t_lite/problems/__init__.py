"""Built-in problems, installed as t2t_lite.problems.

Importing this package registers every built-in problem (and its gin configurables), so a caller
that looks problems up by name imports it rather than t2t_lite.registry alone. A problem added here
is named in problem_spec.BUILT_IN_PROBLEMS too: the tools refuse a --problem from that table before
importing this package (tests/test_problem_spec.py checks that the two agree)."""
from t2t_lite import registry
from t2t_lite.problems import algorithmic  # noqa: F401  (registers on import)
from t2t_lite.problems import text_files  # noqa: F401
from t2t_lite.problems import wmt14  # noqa: F401
from t2t_lite.problems import gettext  # noqa: F401
from t2t_lite.problems import parsing  # noqa: F401


def build(name, params=()):
    """The problem --problem and --problem_param name: a new instance of the problem registered
    as `name`, its ["key=value", ...] params given to its constructor."""
    return registry.problem(name, **registry.parse_params(params))
