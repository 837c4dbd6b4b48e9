"""Problem registry: maps names such as `translate_ende_gettext` to Problem classes.

Registering your own problem, with no change to t2t_lite:

    # mypkg/myproblems.py
    from t2t_lite import registry
    from t2t_lite.data.translation import TranslationProblem

    @registry.register_problem
    class TranslateMyPairs(TranslationProblem):       # registered as "translate_my_pairs"
        def generate_samples(self, split, tmp_dir):
            ...

    t2t-lite-datagen --problem_module=mypkg.myproblems --problem=translate_my_pairs --data_dir=D
    # or --problem_module=/path/to/myproblems.py

A problem may have other names: `@registry.register_problem(aliases=("my_pairs",))`. An alias
names the same problem: every lookup resolves it to the registered name, which is what the
problem's files in data_dir and a model_dir's run.json carry, so --problem=my_pairs and
--problem=translate_my_pairs share data and model_dirs.

The lookups below see the problems registered so far: the built-ins register when
`t2t_lite.problems` is imported, so a caller that looks problems up by name imports that package
(its `build` makes a problem from --problem and --problem_param), and a user's module registers
its own through `import_problem_module`.
"""
import importlib
import inspect
import importlib.util
import os
import re
import sys

from t2t_lite.errors import UserError

_PROBLEMS = {}
_ALIASES = {}  # another name -> the name its problem is registered under


def default_name(cls):
    """CamelCase class name -> snake_case registry name (TranslateEndeGettext -> translate_ende_gettext)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()


def register_problem(name_or_cls=None, aliases=()):
    """Class decorator: `@register_problem`, `@register_problem("my_name")`, and either with
    `aliases=(...)`: other names that look up the same problem (see canonical_name)."""
    aliases = tuple(aliases)

    def decorate(cls, name):
        name = name or default_name(cls)
        if name in aliases:
            raise ValueError(f"problem {name!r} cannot be an alias of itself")
        for taken in (name, *aliases):
            existing = _PROBLEMS.get(canonical_name(taken))
            # Re-importing the same module (e.g. a file and its dotted name) is harmless; a clash
            # is not.
            if existing is not None and _qualname(existing) != _qualname(cls):
                raise ValueError(f"problem {taken!r} is already registered by "
                                 f"{_qualname(existing)}")
        _PROBLEMS[name] = cls
        _ALIASES.update((alias, name) for alias in aliases)
        cls.registered_name = name
        return cls

    if isinstance(name_or_cls, type):
        return decorate(name_or_cls, None)
    return lambda cls: decorate(cls, name_or_cls)


def canonical_name(name):
    """The name a problem is registered under, for any of its names (wmt14_ende ->
    translate_ende_wmt14); a name that is no alias comes back unchanged. Compare problem names
    through this: an alias is the same problem, with the same files and model_dirs."""
    return _ALIASES.get(name, name) if isinstance(name, str) else name


def aliases_of(name):
    """Sorted other names of the problem registered as `name` (or as one of its aliases)."""
    name = canonical_name(name)
    return sorted(alias for alias, target in _ALIASES.items() if target == name)


def _qualname(obj):
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def list_problems():
    """Sorted names of all registered problems (built-in and user-imported), each once, under
    the name it is registered as (aliases_of lists its other names)."""
    return sorted(_PROBLEMS)


def list_names():
    """Sorted names and aliases of all registered problems: every name --problem takes."""
    return sorted([*_PROBLEMS, *_ALIASES])


def problem_class(name):
    """The Problem class registered under `name` or an alias of it (UserError naming the known
    ones if none)."""
    cls = _PROBLEMS.get(canonical_name(name))
    if cls is None:
        raise unknown_problem(name, list_names())
    return cls


def unknown_problem(name, known):
    """The UserError for a problem name that none of the names `known` is."""
    return UserError(f"unknown problem {name!r}; known problems: "
                     f"{', '.join(sorted(known)) or '(none)'}")


def problem(name, **params):
    """Returns a new Problem instance registered under `name`; params go to its constructor."""
    cls = problem_class(name)
    try:
        inspect.signature(cls).bind(**params)
    except TypeError as e:
        raise UserError(f"bad parameters {sorted(params)} for problem {name!r}: {e}") from None
    return cls(**params)


def parse_params(pairs):
    """["key=value", ...] (--problem_param) -> {key: value}; values stay strings, problems
    convert them."""
    params = {}
    for pair in pairs or ():
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise UserError(f"--problem_param must look like key=value, got {pair!r}")
        params[key.strip()] = value
    return params


def check_problem_module(spec):
    """The UserError import_problem_module would give for a module that is not there (a .py
    path that is no file, a dotted name no package on sys.path holds), given without running
    the module's code: what a tool checks before TensorFlow loads."""
    if spec.endswith(".py") or os.sep in spec:
        if not os.path.isfile(os.path.abspath(os.path.expanduser(spec))):
            raise UserError(f"problem module file not found: {spec}")
        return
    _search_the_current_directory()
    try:
        found = importlib.util.find_spec(spec)
    except (ImportError, ValueError) as error:  # a parent package that is missing or broken
        raise UserError(f"cannot import problem module {spec!r}: {error}") from None
    if found is None:
        raise UserError(f"cannot import problem module {spec!r}: No module named {spec!r}")


def _search_the_current_directory():
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())


def import_problem_module(spec):
    """Imports a user's module so its @register_problem classes land in the registry.

    `spec` is a dotted module name importable from sys.path (or the current directory), or a
    path to a .py file.
    """
    if spec.endswith(".py") or os.sep in spec:
        check_problem_module(spec)
        path = os.path.abspath(os.path.expanduser(spec))
        module_name = "t2t_lite_user_problems_" + re.sub(r"\W", "_", os.path.splitext(path)[0])
        if module_name in sys.modules:
            return sys.modules[module_name]
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[module_name]
            raise
        return module
    _search_the_current_directory()
    try:
        return importlib.import_module(spec)
    except ModuleNotFoundError as e:
        if e.name and spec.startswith(e.name):
            raise UserError(f"cannot import problem module {spec!r}: {e}") from None
        raise


def registry_help():
    """Human-readable listing of problems and hparams sets (for --registry_help)."""
    lines = ["Problems:"]
    for name in list_names():
        if name in _ALIASES:
            lines.append(f"  {name}  -- another name for {_ALIASES[name]} (the same problem, "
                         "files and model_dirs)")
            continue
        doc = (getattr(_PROBLEMS[name], "__doc__", None) or "").strip().splitlines()
        lines.append(f"  {name}" + (f"  -- {doc[0]}" if doc else ""))
    try:
        from t2t_lite import hparams
    except ImportError:
        hparams = None
    if hparams is not None:
        lines.append("Hparams sets:")
        lines.extend(f"  {name}" for name in hparams.list_hparams_sets())
    return "\n".join(lines)
