"""Registry: built-ins, lookup errors, user problem modules by dotted name and by file path."""
import subprocess
import sys
import textwrap

import pytest

from t2t_lite import problems, registry  # noqa: F401  (problems: the built-ins registered)
from t2t_lite.errors import UserError

USER_MODULE = textwrap.dedent('''
    from t2t_lite import registry
    from t2t_lite.data.translation import TranslationProblem

    @registry.register_problem
    class {cls}(TranslationProblem):
        """A user's problem."""
        vocab_size = 50

        def generate_samples(self, split, tmp_dir):
            yield "a b", "b a"
''')


def test_builtins_registered():
    names = registry.list_problems()
    for name in ("algorithmic_copy", "algorithmic_reverse"):
        assert name in names
    assert names == sorted(names)


@pytest.mark.slow
def test_the_registry_alone_imports_no_problem():
    """Registration is the problems package's import, never a hidden one of the registry's."""
    code = ("import sys; from t2t_lite import registry; "
            "print(registry.list_problems(), 't2t_lite.problems' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.split() == ["[]", "False"]


def test_unknown_problem_lists_known_names():
    with pytest.raises(UserError, match="unknown problem 'nope'.*algorithmic_copy"):
        registry.problem("nope")


def test_bad_params_are_a_user_error():
    with pytest.raises(UserError, match="bad parameters"):
        registry.problem("algorithmic_copy", no_such_param=1)


def test_problem_instance_and_params():
    p = registry.problem("algorithmic_reverse", num_symbols="7")
    assert p.name == "algorithmic_reverse" and p.num_symbols == 7


def test_default_name():
    class TranslateEndeThing:
        pass
    assert registry.default_name(TranslateEndeThing) == "translate_ende_thing"


def test_user_module_by_dotted_name(tmp_path, monkeypatch):
    (tmp_path / "my_user_problems.py").write_text(USER_MODULE.format(cls="TranslateUserDotted"))
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.import_problem_module("my_user_problems")
    assert "translate_user_dotted" in registry.list_problems()
    assert registry.problem("translate_user_dotted").vocab_size == 50
    sys.modules.pop("my_user_problems", None)


def test_user_module_by_file_path(tmp_path):
    path = tmp_path / "file_problems.py"
    path.write_text(USER_MODULE.format(cls="TranslateUserFile"))
    registry.import_problem_module(str(path))
    registry.import_problem_module(str(path))  # importing twice is harmless
    assert "translate_user_file" in registry.list_problems()


def test_missing_user_module_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not found"):
        registry.import_problem_module(str(tmp_path / "absent.py"))
    with pytest.raises(UserError, match="cannot import"):
        registry.import_problem_module("no_such_module_t2t_lite_test")


def test_name_clash_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        @registry.register_problem("algorithmic_copy")
        class Other:
            pass


def test_registry_help_lists_problems():
    text = registry.registry_help()
    assert "algorithmic_reverse  -- Reverse a random string of symbols." in text
