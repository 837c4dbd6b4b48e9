"""A problem as the tools name it (ProblemSpec: --problem, --problem_param, --problem_module) and
what every stage does with one: import the user's modules, build the Problem, write an
evaluation split as the source and reference files a decoder and a scorer read.

    spec = ProblemSpec.of(options)     # any options with problem / problem_params (/ modules)
    spec.check_name()                  # a name no problem has: refused, nothing imported
    spec.check()                       # that, bad params and missing modules too
    problem = spec.build()             # the modules imported, then problems.build
    write_eval_split(problem, data_dir, "test", "test.src", "test.ref", limit=100)

BUILT_IN_PROBLEMS names the built-in problems without importing them: t2t_lite.problems brings
TensorFlow, a few seconds a tool should not spend on a mistyped --problem.
"""
import dataclasses
import os
from typing import Sequence

from t2t_lite import atomic, registry
from t2t_lite.errors import UserError


# Every name of a built-in problem, its aliases too -> the module of t2t_lite.problems that
# registers it. tests/test_problem_spec.py keeps it equal to what importing that package
# registers: a new built-in problem is added here too.
BUILT_IN_PROBLEMS = {
    "algorithmic_copy": "t2t_lite.problems.algorithmic",
    "algorithmic_reverse": "t2t_lite.problems.algorithmic",
    "parsing_wsj": "t2t_lite.problems.parsing",
    "parsing_wsj_semi": "t2t_lite.problems.parsing",
    "translate_ende_gettext": "t2t_lite.problems.gettext",
    "translate_enfr_gettext": "t2t_lite.problems.gettext",
    "translate_gettext": "t2t_lite.problems.gettext",
    "translate_ende_wmt14": "t2t_lite.problems.wmt14",
    "translate_enfr_wmt14": "t2t_lite.problems.wmt14",
    "wmt14_ende": "t2t_lite.problems.wmt14",
    "wmt14_enfr": "t2t_lite.problems.wmt14",
    "translate_text_files": "t2t_lite.problems.text_files",
}


@dataclasses.dataclass(frozen=True)
class ProblemSpec:
    """A registered problem's name, its constructor's key=value params and the user modules
    that register it (dotted names or .py paths), as their flags give them."""
    name: str
    params: Sequence[str] = ()
    modules: Sequence[str] = ()

    @classmethod
    def of(cls, options):
        """The spec of options that carry a problem as the flags do (problem, problem_params and,
        where the tool has --problem_module, problem_modules)."""
        return cls(options.problem, tuple(options.problem_params),
                   tuple(getattr(options, "problem_modules", ())))

    def check_name(self):
        """The UserError `build` would give for a name no problem has, given now, with nothing
        imported: without user modules only a built-in problem's name (BUILT_IN_PROBLEMS) or
        one registered so far can build. With modules, theirs may be any name: `build` says."""
        if self.modules:
            return
        known = {*BUILT_IN_PROBLEMS, *registry.list_names()}
        if self.name not in known:
            raise registry.unknown_problem(self.name, known)

    def check(self):
        """What check_name checks, and the --problem_param syntax and the --problem_module
        files and names, with no module run: a mistake in any is refused before TensorFlow
        loads."""
        registry.parse_params(self.params)
        for module in self.modules:
            registry.check_problem_module(module)
        if self.name:
            self.check_name()

    def import_modules(self):
        import_problem_modules(self.modules)

    def build(self):
        """A new instance of the problem, its modules imported first."""
        from t2t_lite import problems

        self.import_modules()
        return problems.build(self.name, self.params)


def import_problem_modules(modules):
    """Imports each user module (registry.import_problem_module), so that the problems it
    registers can be built by name; the built-in problems are registered too."""
    from t2t_lite import problems  # noqa: F401  (the built-ins, registered on import)

    for module in modules:
        registry.import_problem_module(module)


@dataclasses.dataclass
class EvalSplit:
    lines: int  # pairs written
    changed: bool  # whether either file was (re)written: what was decoded from it is stale


def write_eval_split(problem, data_dir, split, source_path, reference_path, limit=0):
    """The problem's clean `split` text (Problem.eval_text_pairs) as two line-aligned files,
    sources and references, its first `limit` pairs (0: all); a file already holding that text is
    left as it is. An empty split is a UserError."""
    pairs = problem.eval_text_pairs(data_dir, split)
    if limit:
        pairs = pairs[:limit]
    if not pairs:
        raise UserError(f"the {split} split of {problem.name} in {data_dir} is empty")
    changed = False
    for path, column in ((source_path, 0), (reference_path, 1)):
        text = "".join((pair[column] if len(pair) > column else "") + "\n" for pair in pairs)
        if not os.path.isfile(path) or _read(path) != text:
            atomic.write_text(path, text)
            changed = True
    return EvalSplit(lines=len(pairs), changed=changed)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()
