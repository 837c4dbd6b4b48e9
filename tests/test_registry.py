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


def test_the_wmt14_aliases_are_the_same_problem():
    """wmt14_ende / wmt14_enfr (the card's names) look up the WMT14 problems themselves: the
    same class, registered name, data files and vocabulary."""
    for alias, name in (("wmt14_ende", "translate_ende_wmt14"),
                        ("wmt14_enfr", "translate_enfr_wmt14")):
        assert registry.problem_class(alias) is registry.problem_class(name)
        assert registry.canonical_name(alias) == name == registry.canonical_name(name)
        assert registry.aliases_of(name) == registry.aliases_of(alias) == [alias]
        by_alias, by_name = registry.problem(alias), registry.problem(name)
        assert by_alias.name == by_name.name == name
        assert by_alias.dataset_name == by_name.dataset_name
        assert by_alias.vocab_path("D") == by_name.vocab_path("D")
        assert by_alias.text_path("D", "test") == by_name.text_path("D", "test")
    # Listed once, under the registered name; the help and the unknown-name error list both.
    assert "wmt14_ende" not in registry.list_problems()
    assert registry.canonical_name("algorithmic_copy") == "algorithmic_copy"
    assert registry.canonical_name(None) is None and registry.aliases_of("nope") == []
    with pytest.raises(UserError, match="unknown problem 'wmt14'; known problems: .*wmt14_ende"):
        registry.problem("wmt14")


def test_registry_help_lists_the_aliases():
    lines = registry.registry_help().splitlines()
    for alias, name in (("wmt14_ende", "translate_ende_wmt14"),
                        ("wmt14_enfr", "translate_enfr_wmt14")):
        assert f"  {alias}  -- another name for {name} (the same problem, files and " \
               "model_dirs)" in lines
    problems_part = lines[1:lines.index("Hparams sets:")]
    assert problems_part == sorted(problems_part)


@pytest.mark.slow
def test_the_datagen_cli_registry_help_lists_the_aliases():
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.datagen", "--registry_help"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "  wmt14_ende  -- another name for translate_ende_wmt14" in result.stdout
    assert "  wmt14_enfr  -- another name for translate_enfr_wmt14" in result.stdout


def test_user_aliases_and_their_clashes():
    from t2t_lite.data.translation import TranslationProblem

    cls = type("TranslateAliasProbe", (TranslationProblem,), {})
    try:
        registry.register_problem(aliases=("alias_probe",))(cls)
        assert registry.problem_class("alias_probe") is cls
        assert cls.registered_name == "translate_alias_probe"
        registry.register_problem(aliases=("alias_probe",))(cls)  # the same again: harmless
        other = type("Other", (TranslationProblem,), {"__module__": "elsewhere"})
        # An alias may not take a registered name or another problem's alias, nor a name an
        # alias of another problem.
        with pytest.raises(ValueError, match="'algorithmic_copy' is already registered"):
            registry.register_problem(aliases=("algorithmic_copy",))(other)
        with pytest.raises(ValueError, match="'wmt14_ende' is already registered by "
                                             ".*TranslateEndeWmt14"):
            registry.register_problem("my_other", aliases=("wmt14_ende",))(other)
        with pytest.raises(ValueError, match="'alias_probe' is already registered"):
            registry.register_problem("alias_probe")(other)
        with pytest.raises(ValueError, match="alias of itself"):
            registry.register_problem("same", aliases=("same",))(other)
        assert "my_other" not in registry.list_problems()  # a refused registration adds nothing
        assert registry.canonical_name("alias_probe") == "translate_alias_probe"
    finally:
        registry._PROBLEMS.pop("translate_alias_probe", None)
        registry._ALIASES.pop("alias_probe", None)
