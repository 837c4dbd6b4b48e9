"""A problem as the tools name it (ProblemSpec: --problem, --problem_param, --problem_module) and
what every stage does with one: import the user's modules, build the Problem, write an
evaluation split as the source and reference files a decoder and a scorer read.

    spec = ProblemSpec.of(options)     # any options with problem / problem_params (/ modules)
    problem = spec.build()             # the modules imported, then problems.build
    write_eval_split(problem, data_dir, "test", "test.src", "test.ref", limit=100)
"""
import dataclasses
import os
from typing import Sequence

from t2t_lite import atomic, registry
from t2t_lite.errors import UserError


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
