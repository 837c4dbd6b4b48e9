"""problems.build: --problem and --problem_param -> a Problem, the built-ins registered by the
import alone."""
import subprocess
import sys

import pytest

from t2t_lite import problems
from t2t_lite.errors import UserError


def test_build_gives_the_named_problem_its_params():
    problem = problems.build("algorithmic_reverse", ["num_symbols=7", "max_length=9"])
    assert problem.name == "algorithmic_reverse"
    assert (problem.num_symbols, problem.max_length) == (7, 9)


def test_build_refuses_a_param_that_is_no_pair():
    with pytest.raises(UserError, match="key=value"):
        problems.build("algorithmic_copy", ["num_symbols"])


@pytest.mark.slow
def test_importing_the_package_registers_every_built_in_family():
    code = ("from t2t_lite import problems, registry; "
            "print(sorted({registry.problem_class(n).__module__ for n in registry.list_problems()}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == str([f"t2t_lite.problems.{family}" for family in
                               ("algorithmic", "gettext", "parsing", "text_files", "wmt14")])
