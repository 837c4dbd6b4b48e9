"""problem_spec: a problem as its flags name it, built with its user modules imported; an
evaluation split written as source and reference files, the problem's own split even when the
data_dir holds another problem's."""
import dataclasses
import json

import pytest

from t2t_lite import isolated, registry
from t2t_lite.errors import UserError
from t2t_lite.problem_spec import BUILT_IN_PROBLEMS, ProblemSpec, write_eval_split

PARAMS = ("num_symbols=8", "max_length=6", "train_samples=40", "eval_samples=10")
USER_MODULE = '''
from t2t_lite import registry
from t2t_lite.problems.algorithmic import AlgorithmicCopy


@registry.register_problem
class {cls}(AlgorithmicCopy):
    pass
'''


@dataclasses.dataclass
class Options:
    problem: str
    problem_params: list
    data_dir: str = "D"


def test_a_spec_of_options_builds_its_problem_with_its_modules_imported(tmp_path):
    path = tmp_path / "spec_problems.py"
    path.write_text(USER_MODULE.format(cls="SpecCopy"))
    spec = ProblemSpec("spec_copy", PARAMS, (str(path),))
    assert "spec_copy" not in registry.list_problems()
    problem = spec.build()
    assert problem.name == "spec_copy" and problem.num_symbols == 8
    assert ProblemSpec.of(Options("algorithmic_copy", list(PARAMS))) == ProblemSpec(
        "algorithmic_copy", PARAMS, ())
    # As isolated.call sends it inside other options (table3's DevPerplexity): built back.
    sent = json.loads(json.dumps(dataclasses.asdict(spec)))
    assert ProblemSpec(**{k: tuple(v) if isinstance(v, list) else v for k, v in sent.items()}) \
        == spec
    assert isolated.rebuild(ProblemSpec, sent).build().name == "spec_copy"


def test_the_built_in_problems_table_is_what_the_problems_package_registers():
    from t2t_lite import problems  # noqa: F401  (the built-ins registered)

    registered = {}
    for name in registry.list_problems():
        module = registry.problem_class(name).__module__
        if module.startswith("t2t_lite."):  # not a test's or a user's problem
            registered.update(dict.fromkeys([name, *registry.aliases_of(name)], module))
    assert registered == BUILT_IN_PROBLEMS


def test_a_name_no_problem_has_is_refused_unbuilt_with_the_registrys_own_line():
    from t2t_lite import problems

    with pytest.raises(UserError) as built:
        problems.build("nope")
    with pytest.raises(UserError) as checked:
        ProblemSpec("nope").check_name()
    assert str(checked.value) == str(built.value)
    for name in ("algorithmic_copy", "wmt14_ende"):  # a name, an alias
        ProblemSpec(name).check_name()
    ProblemSpec("nope", modules=("mine.py",)).check_name()  # the user's module may register it


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("spec") / "data"
    for name in ("algorithmic_copy", "algorithmic_reverse"):  # two problems, one folder
        ProblemSpec(name, PARAMS).build().generate_data(str(folder))
    return folder


def test_the_problems_own_split_is_written_its_first_lines_and_only_when_it_changed(
        data_dir, tmp_path):
    copy, reverse = (ProblemSpec(name, PARAMS).build()
                     for name in ("algorithmic_copy", "algorithmic_reverse"))
    source, reference = tmp_path / "test.src", tmp_path / "test.ref"
    written = write_eval_split(reverse, str(data_dir), "test", str(source), str(reference))
    pairs = reverse.eval_text_pairs(str(data_dir), "test")
    assert written.lines == len(pairs) == 10 and written.changed
    assert source.read_text().splitlines() == [p[0] for p in pairs]
    assert reference.read_text().splitlines() == [p[1] for p in pairs]
    assert all(r == " ".join(reversed(s.split())) for s, r in pairs)  # reverse's, not copy's
    again = write_eval_split(reverse, str(data_dir), "test", str(source), str(reference))
    assert (again.lines, again.changed) == (10, False)
    first = write_eval_split(copy, str(data_dir), "dev", str(source), str(reference), limit=3)
    assert (first.lines, first.changed) == (3, True)
    assert reference.read_text().splitlines() == [
        p[1] for p in copy.eval_text_pairs(str(data_dir), "dev")[:3]]


def test_an_empty_or_missing_split_is_one_user_error(tmp_path):
    problem = ProblemSpec("algorithmic_copy", PARAMS).build()
    with pytest.raises(UserError, match="no complete test data for algorithmic_copy"):
        write_eval_split(problem, str(tmp_path), "test", str(tmp_path / "s"), str(tmp_path / "r"))
