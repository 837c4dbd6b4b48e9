"""Options dataclasses <-> a tool's flags, both ways from the dataclass fields, by one rule.

A field is the flag of the same name (`model_dir` <-> `--model_dir=M`, `start_over` <->
`--start_over` / `--nostart_over`), except a sequence field: named in the plural, it is the
repeated flag of the singular (`gin_params` <-> `--gin_param=a --gin_param=b`, absl's
DEFINE_multi_*); named otherwise, it is one comma-separated flag (`warm_start_accept` <->
`--warm_start_accept=a,b`, absl's DEFINE_list). A field that no flag carries (a TrainOptions'
`configs`, a DemoOptions' `samples`) is left at its default by `from_flags` and must be named in
`to_args`' `omit` when it is set.

    to_args(options)                    the flags that give `options` (default fields left out),
                                        in field order: the command a user can repeat
    from_flags(OptionsType, FLAGS)      the parsed flags as options: a flag the user did not give
                                        leaves the field's default
    flag_args(name=value, ...)          the same rule for a tool without an options class
    shown(tool, args)                   "$ t2t-lite-<tool> <args, shell-quoted>", as printed

tests/test_command_line.py checks, for every options class and its tool's own flag definitions,
that the printed command parses back to the same options.
"""
import collections.abc
import dataclasses
import shlex
import typing


def to_args(options, omit=()):
    """The flags that give the dataclass `options`: one (or, repeated, several) per field whose
    value is not the field's default, in field order. A field no flag carries must be in `omit`
    (ValueError otherwise, as for a None where the default is not: no flag says None)."""
    values = {}
    for field in dataclasses.fields(options):
        value = getattr(options, field.name)
        if field.name in omit or _is_default(field, value):
            continue
        if value is None:
            raise ValueError(f"{type(options).__name__}.{field.name} is None, not its default "
                             f"{_default(field)!r}: no flag says that")
        values[field.name] = value
    return flag_args(**values)


def flag_args(**values):
    """`--name=value` for each keyword, by the module's rule (sequences repeated or
    comma-joined, booleans as --name / --noname); None values are left out."""
    args = []
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            args.append(f"--{name}" if value else f"--no{name}")
        elif isinstance(value, (list, tuple)):
            if _repeated(name):
                args += [f"--{name[:-1]}={_text(name, item)}" for item in value]
            else:
                items = [_text(name, item) for item in value]
                if any("," in item for item in items):
                    raise ValueError(f"--{name} is comma-separated: {items!r} holds a comma")
                args.append(f"--{name}={','.join(items)}")
        else:
            args.append(f"--{name}={_text(name, value)}")
    return args


def from_flags(options_type, flag_values):
    """`options_type` (a dataclass) from absl's parsed `flag_values`: each field from its flag
    when the user gave it, else the field's default. A flag of the wrong kind for its field (a
    plural sequence field's flag not a multi flag...) is a TypeError: the rule and the tool's
    definitions disagree."""
    given = {}
    for field, flag in flags_of(options_type, flag_values).items():
        if not flag.using_default_value:
            given[field] = flag.value
    return options_type(**given)


def flags_of(options_type, flag_values):
    """{field name: its absl Flag} for the fields of `options_type` that `flag_values` defines,
    each checked to be the kind the rule says."""
    from absl import flags

    hints = typing.get_type_hints(options_type)
    found = {}
    for field in dataclasses.fields(options_type):
        sequence = _is_sequence(hints[field.name])
        repeated = sequence and _repeated(field.name)
        name = field.name[:-1] if repeated else field.name
        if name not in flag_values:
            continue
        flag = flag_values[name]
        multi = isinstance(flag, flags.MultiFlag)
        comma_list = not multi and isinstance(flag.parser, flags.ListParser)
        wanted = ("a multi flag" if repeated else
                  "a list flag" if sequence else "a single-valued flag")
        if (multi, comma_list) != (repeated, sequence and not repeated):
            raise TypeError(f"{options_type.__name__}.{field.name}: --{name} should be {wanted}")
        found[field.name] = flag
    return found


def shown(tool, args):
    """The command as printed for a user to repeat: `$ t2t-lite-<tool> <args>` (tool: the
    module name in t2t_lite/bin, e.g. avg_checkpoints), shell-quoted."""
    return f"$ t2t-lite-{tool.replace('_', '-')} {shlex.join(args)}".rstrip()


def _repeated(name):
    return name.endswith("s")


def _text(name, value):
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"--{name}: {value!r} is not a flag value")
    return repr(value) if isinstance(value, float) else str(value)


def _default(field):
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def _is_default(field, value):
    default = _default(field)
    if default is dataclasses.MISSING:
        return False
    if isinstance(value, (list, tuple)) and isinstance(default, (list, tuple)):
        return list(value) == list(default)
    return type(value) is type(default) and value == default or value is default


def _is_sequence(hint):
    if typing.get_origin(hint) is typing.Union:
        hint = next((arg for arg in typing.get_args(hint) if arg is not type(None)), hint)
    origin = typing.get_origin(hint) or hint
    return isinstance(origin, type) and issubclass(origin, collections.abc.Sequence) and not (
        issubclass(origin, (str, bytes)))
