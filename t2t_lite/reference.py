"""docs/reference.md, generated from the code: every setting, hparams set, problem parameter and
tool flag, so the page cannot drift from what the tools do.

    python -m t2t_lite.reference docs/reference.md     # rewrite the page (from a checkout)
    python -m t2t_lite.reference                       # print it

Each fact is read from its one home in the code:
- a config field's type and default from its dataclass (t2t_lite/config.py), its meaning from the
  comment on its line there, else from the comment block directly above it;
- which sets change a field: each gin set resolved (t2t_lite.hparams), compared with the set it
  includes (base.gin: with the dataclass defaults);
- a problem's parameters from its constructor's signature, their meanings from the "Args"
  section of the first constructor docstring up its classes that names them;
- a tool's flags from its module (setup.py's console scripts), loaded in a child process
  without running the tool (absl's flag registry is global, and two tools define the same names):
  reference_facts.py, through isolated.call.

Nothing builds a model; the problems' import loads TensorFlow once. tests/test_reference.py fails
when the committed page differs from what this prints.
"""
import ast
import dataclasses
import inspect
import io
import pathlib
import re
import sys
import tokenize
from concurrent import futures

from t2t_lite import config, formats, hparams, isolated, reference_facts, registry
from t2t_lite import problems  # noqa: F401  (registers the built-in problems)

PACKAGE = pathlib.Path(__file__).resolve().parent
ROOT = PACKAGE.parent
PAGE = "docs/reference.md"
COMMAND = f"python -m t2t_lite.reference {PAGE}"
CONFIGS = (config.ModelConfig, config.TrainConfig, config.DecodeConfig)
# The tool whose flags of a field's name override that field for one run (the decoder's
# --batch_tokens is its own setting, so tools are matched per config, not by name alone).
OVERRIDING_TOOL = {"TrainConfig": "t2t-lite-trainer", "DecodeConfig": "t2t-lite-decoder"}

# ----------------------------------------------------------------------------- meanings


def field_meanings(cls):
    """{field name: meaning} from the comments of `cls`'s fields in its source file."""
    source = inspect.getsource(sys.modules[cls.__module__])
    lines = source.splitlines()
    trailing, full_line = {}, set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            row, column = token.start
            if lines[row - 1][:column].strip():
                trailing[row] = token.string
            else:
                full_line.add(row)
    class_node = next(node for node in ast.walk(ast.parse(source))
                      if isinstance(node, ast.ClassDef) and node.name == cls.__name__)
    meanings = {}
    for node in class_node.body:
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        row = node.lineno
        if row in trailing:
            text = [trailing[row]]
        else:
            above = row - 1
            while above in full_line:
                above -= 1
            text = [lines[r - 1] for r in range(above + 1, row)]
        meanings[node.target.id] = " ".join(line.strip().lstrip("#").strip() for line in text)
    return meanings


def docstring_args(function):
    """{name: meaning} from the "Args" section of a Google-style docstring."""
    doc = inspect.getdoc(function) or ""
    found, current, indent = {}, None, None
    for line in doc.splitlines():
        if re.match(r"Args\b.*:\s*$", line):
            indent, current = -1, None  # entries' indent: the first line below sets it
            continue
        if indent is None or not line.strip():
            continue
        depth = len(line) - len(line.lstrip())
        if indent == -1:
            indent = depth
        entry = re.match(r"(\w+): (.*)", line.strip())
        if depth == indent and entry:
            current = entry.group(1)
            found[current] = entry.group(2).strip()
        elif depth > indent and current:
            found[current] += " " + line.strip()
        else:
            indent = None  # the section ended
    return found


# ----------------------------------------------------------------------------- facts


def resolved_sets():
    """{set name: (parent set or None, {config class name: config instance})}, sets sorted.

    Resolved in a child process (reference_facts.resolve_sets): gin's bindings are global, and a
    caller's (a test session's) must stay as they are.
    """
    resolved = _in_child(reference_facts.resolve_sets, reference_facts.AllSets(),
                         "resolving the hparams sets")
    classes = {cls.__name__: cls for cls in CONFIGS}
    return {name: (found.parent, {kind: classes[kind](**{key: _tuples(value)
                                                         for key, value in fields.items()})
                                  for kind, fields in found.configs.items()})
            for name, found in resolved.items()}


def _in_child(function, request, what):
    """isolated.call(function, request), its output kept for the error a failure raises."""
    lines = []
    try:
        return isolated.call(function, request, "", lambda line, **_: lines.append(line))
    except isolated.Failed as failure:
        raise RuntimeError(failure.reason(what) + "".join(f"\n{line}" for line in lines[-40:])
                           ) from None


def _tuples(value):
    """JSON's lists back to the tuples the configs hold."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def set_descriptions():
    """{set name: the first sentence of its file's opening comment}."""
    found = {}
    for name in hparams.list_hparams_sets():
        block = []
        for line in hparams.hparams_file(name).read_text(encoding="utf-8").splitlines():
            if not line.startswith("#"):
                break
            block.append(line.lstrip("#").strip())
        found[name] = re.split(r"(?<=\.)\s", " ".join(block), maxsplit=1)[0]
    return found


def _defaults(cls):
    return {f.name: f.default for f in dataclasses.fields(cls)}


def changed_by(sets, cls, field):
    """[(set, value)] of the sets whose resolved value differs from the set they include."""
    default = _defaults(cls)[field]  # not cls(): gin bindings in force would change it
    changes = []
    for name, (parent, values) in sets.items():
        before = getattr(sets[parent][1][cls.__name__], field) if parent else default
        value = getattr(values[cls.__name__], field)
        if value != before:
            changes.append((name, value))
    return changes


def builtin_problems():
    """The registered problems that t2t_lite ships (not those a user's module or a test added)."""
    return [name for name in registry.list_problems()
            if registry.problem_class(name).__module__.startswith("t2t_lite.problems.")]


def problem_params(cls):
    """[(name, default, meaning)] of a problem class's constructor parameters."""
    meanings = {}
    for klass in reversed(cls.__mro__):  # the nearest class's docstring wins
        if "__init__" in vars(klass):
            meanings.update(docstring_args(vars(klass)["__init__"]))
    rows = []
    for name, parameter in inspect.signature(cls).parameters.items():
        default = parameter.default
        if default is None:  # None: the class's own setting, where it has one
            default = getattr(cls, name, getattr(cls, f"default_{name}", None))
            if not isinstance(default, (str, int, float)):
                default = None
        rows.append((name, default, meanings.get(name, "")))
    return rows


def console_scripts():
    """[(tool, module)] in setup.py's order."""
    setup_py = ROOT / "setup.py"
    if not setup_py.is_file():  # an installed package has no setup.py beside it
        raise RuntimeError(f"{setup_py} not found: generate {PAGE} from a checkout")
    text = setup_py.read_text(encoding="utf-8")
    return re.findall(r"[\"'](t2t-lite-[a-z0-9-]+)\s*=\s*([\w.]+):\w+[\"']", text)


def tool_flags():
    """{tool: (module, [reference_facts.Flag])} for every console script, listed side by side
    in child processes (reference_facts.tool_flags)."""
    scripts = console_scripts()
    with futures.ThreadPoolExecutor(max_workers=len(scripts)) as pool:
        listed = [pool.submit(_in_child, reference_facts.tool_flags,
                              reference_facts.ToolModule(module),
                              f"listing {tool}'s flags ({module})") for tool, module in scripts]
        return {tool: (module, rows.result())
                for (tool, module), rows in zip(scripts, listed)}


# ----------------------------------------------------------------------------- the page


_FLAG_TYPES = {"multi string": "string, repeatable", "string enum": "one of",
               "comma separated list of strings": "comma-separated strings"}


def _cell(text):
    """Text for one table cell: one line, and nothing Markdown or HTML would read as markup
    (a <lang> placeholder is an HTML tag to a renderer, a * may start emphasis)."""
    text = " ".join(str(text).split())
    for char, escaped in (("|", "\\|"), ("<", "&lt;"), ("*", "\\*")):
        text = text.replace(char, escaped)
    return text


def _value(value):
    if isinstance(value, str):
        return f'`"{value}"`'
    if value is None:
        return "none"
    if isinstance(value, list):
        return "`[]`" if not value else "`" + ",".join(map(str, value)) + "`"
    return f"`{value!r}`"


def _plain(value):
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _type_name(annotation):
    return getattr(annotation, "__name__", str(annotation))


def render():
    """The whole page, as text."""
    sets = resolved_sets()
    flags = tool_flags()
    flag_names = {tool: {flag.name for flag in defined} for tool, (_, defined) in flags.items()}
    out = [*_settings_section(sets, flag_names), *_sets_section(sets),
           *_problem_params_section(flags, flag_names), *_flags_section(flags),
           "", *formats.reference_section()]  # from t2t_lite/formats.py, the formats' home
    return "\n".join(out) + "\n"


def _settings_section(sets, flag_names):
    """The page's opening and its Settings: every field of the configs."""
    out = [
        "# Configuration reference",
        "",
        f"Generated from the code by `{COMMAND}`; do not edit it by hand "
        "(tests/test_reference.py fails when it differs from the code). The other pages link "
        "here for defaults.",
        "",
        "- [Settings](#settings): every field of ModelConfig, TrainConfig and DecodeConfig",
        "- [Hparams sets](#hparams-sets): the values of each set",
        "- [Problem parameters](#problem-parameters): `--problem_param=NAME=VALUE`",
        "- [Tool flags](#tool-flags): every flag of every `t2t-lite-*` command",
        "- [Compatibility](#compatibility): the model_dir and export formats each version reads",
        "",
        "## Settings",
        "",
        "An hparams set (`--hparams_set=NAME`, a gin file in t2t_lite/hparams_sets/) binds these "
        "fields; `--gin_param='TrainConfig.keep_checkpoints = 10'` overrides one, "
        "`--gin_file=mine.gin` adds your own bindings. *Default* is the dataclass's value, "
        "which a set that binds nothing gets; *changed by* lists each set whose value differs "
        "from the set it includes (for `base`, from the default), with that value; *flag* is "
        "the flag of the same name that overrides the field for one run. A model_dir keeps the "
        "values a run used in its configs.json.",
    ]
    for cls in CONFIGS:
        meanings = field_meanings(cls)
        tool = OVERRIDING_TOOL.get(cls.__name__)
        out += ["", f"### {cls.__name__}", "", _cell(inspect.getdoc(cls).splitlines()[0]), "",
                "| field | type | default | meaning | changed by |" + (" flag |" if tool else ""),
                "|---|---|---|---|---|" + ("---|" if tool else "")]
        for field in dataclasses.fields(cls):
            changes = ", ".join(f"`{name}`: {_value(value)}"
                                for name, value in changed_by(sets, cls, field.name))
            row = (f"| `{field.name}` | {_type_name(field.type)} | {_value(field.default)} | "
                   f"{_cell(meanings.get(field.name, ''))} | {changes} |")
            if tool:
                row += (f" {tool} `--{field.name}` |" if field.name in flag_names[tool]
                        else " |")
            out.append(row)
    return out


def _sets_section(sets):
    """Hparams sets: each set's description, and the resolved values where they differ."""
    out = ["", "## Hparams sets", "",
           "Each set's opening sentence and the set it includes:", "",
           "| set | includes | what |", "|---|---|---|"]
    descriptions = set_descriptions()
    for name, (parent, _) in sets.items():
        out.append(f"| `{name}` | {f'`{parent}`' if parent else ''} | "
                   f"{_cell(descriptions[name])} |")
    main = [name for name in sets if "/" not in name]
    out += ["", "The resolved values of the sets outside table3/ (each table3/ row is "
            "`table3/base` plus the fields its row of the table above changes), for every field "
            "on which they differ:", "",
            "| field | " + " | ".join(f"`{name}`" for name in main) + " |",
            "|---|" + "---|" * len(main)]
    for cls in CONFIGS:
        for field in dataclasses.fields(cls):
            values = [getattr(sets[name][1][cls.__name__], field.name) for name in main]
            if len({repr(v) for v in values}) > 1:
                out.append(f"| `{cls.__name__}.{field.name}` | "
                           + " | ".join(_cell(_plain(v)) for v in values) + " |")
    return out


def _problem_params_section(flags, flag_names):
    """Problem parameters: each built-in problem's constructor parameters."""
    takers = [tool for tool in flags if "problem_param" in flag_names[tool]]
    out = ["", "## Problem parameters", "",
           "`--problem_param=NAME=VALUE` (repeatable) passes a parameter to the problem's "
           f"constructor, in {', '.join(takers)}. Values arrive as strings; the problem "
           "converts them. *Default* none: the parameter is unset."]
    for name in builtin_problems():
        cls = registry.problem_class(name)
        doc = (inspect.getdoc(cls) or "").splitlines()
        out += ["", f"### {name}", "", _cell(doc[0] if doc else ""), ""]
        aliases = registry.aliases_of(name)
        if aliases:
            out += ["Also named " + ", ".join(f"`{alias}`" for alias in aliases)
                    + f": `--problem={aliases[0]}` is this problem, with the same files in "
                    "--data_dir and the same model_dirs.", ""]
        rows = problem_params(cls)
        if not rows:
            out.append("No parameters.")
            continue
        out += ["| parameter | default | meaning |", "|---|---|---|"]
        out += [f"| `{param}` | {_value(default)} | {_cell(meaning)} |"
                for param, default, meaning in rows]
    return out


def _flags_section(flags):
    """Tool flags: every flag of every command."""
    out = ["", "## Tool flags", "",
           "The flags each command defines (absl's own, such as `--helpfull` and "
           "`--verbosity`, come on top). `--helpshort` prints the same list."]
    for tool, (module, defined) in flags.items():
        doc = inspect.getdoc(sys.modules[module]) if module in sys.modules else None
        if doc is None:
            doc = ast.get_docstring(ast.parse(_module_source(module))) or ""
        summary = doc.splitlines()[0].split(": ", 1)[-1] if doc else ""
        summary = summary[:1].upper() + summary[1:]
        out += ["", f"### {tool}", "", _cell(summary), "",
                "| flag | type | default | meaning |", "|---|---|---|---|"]
        for flag in defined:
            kind = _FLAG_TYPES.get(flag.type, flag.type)
            kind += f" ({', '.join(flag.values)})" if flag.values else ""
            out.append(f"| `--{flag.name}` | {_cell(kind)} | {_value(flag.default)} | "
                       f"{_cell(flag.help)} |")
    return out


def _module_source(module):
    path = ROOT.joinpath(*module.split(".")).with_suffix(".py")
    return path.read_text(encoding="utf-8")


def main(argv):
    text = render()
    if len(argv) > 1:
        pathlib.Path(argv[1]).write_text(text, encoding="utf-8")
        print(f"wrote {argv[1]}")
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main(sys.argv)
