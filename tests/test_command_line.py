"""command_line: for every options class, the command printed for it parses back, through its
tool's own flag definitions, to the same options (every field set apart from its default, and
random mixes of set and default fields); each flag's --help default is its field's default."""
import dataclasses
import random
import shlex
import typing
from typing import List

import pytest

from t2t_lite import command_line, isolated

# (the tool's module in t2t_lite/bin, its options class, the fields no flag carries); the
# trainer's child loads Keras and TensorFlow (about 13 s): in the full suite, not the quick tier.
TOOLS = [
    pytest.param("trainer", "t2t_lite.training.trainer:TrainOptions", {"configs"},
                 marks=pytest.mark.slow, id="trainer"),
    pytest.param("demo", "t2t_lite.demo:DemoOptions", {"samples"}, id="demo"),
    pytest.param("decoder", "t2t_lite.file_decoding:DecodeOptions", set(), id="decoder"),
    pytest.param("score", "t2t_lite.file_scoring:ScoreOptions", set(), id="score"),
    pytest.param("po", "t2t_lite.po.run:PoOptions", set(), id="po"),
    pytest.param("table3", "t2t_lite.table3.run:TableOptions", set(), id="table3"),
]
MIXES = 20


@dataclasses.dataclass
class Tool:
    name: str
    options_type: str


@dataclasses.dataclass
class Checked:
    without_flags: List[str]
    commands: List[str]  # the printed commands, each of which parsed back to its options
    help_defaults_differ: List[str]


def round_trip(tool: Tool) -> Checked:
    """In a child process of its own (the tools define their flags in absl's global FLAGS):
    the tool's flags defined, then options rendered, printed, parsed and compared."""
    import importlib

    from absl import flags

    importlib.import_module(f"t2t_lite.bin.{tool.name}")
    module, _, name = tool.options_type.partition(":")
    options_type = getattr(importlib.import_module(module), name)
    defined = command_line.flags_of(options_type, flags.FLAGS)
    fields = dataclasses.fields(options_type)
    hints = typing.get_type_hints(options_type)
    without = [f.name for f in fields if f.name not in defined]
    required = {f.name: f"/path/to/{f.name}" for f in fields
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    changed = {name: _other_value(name, hints[name], _field(options_type, name), flag)
               for name, flag in defined.items()}
    generator = random.Random(46)
    mixes = [changed] + [{name: value for name, value in changed.items()
                          if generator.random() < 0.5} for _ in range(MIXES)] + [{}]
    commands = []
    for mix in mixes:
        options = options_type(**{**required, **mix})
        printed = command_line.shown(tool.name, command_line.to_args(options))
        argv = shlex.split(printed)[1:]
        flags.FLAGS.unparse_flags()
        flags.FLAGS(argv)
        parsed = command_line.from_flags(options_type, flags.FLAGS)
        assert parsed == options, (printed, parsed, options)
        commands.append(printed)
    differ = []
    for name, flag in defined.items():
        default = command_line._default(_field(options_type, name))
        if default is dataclasses.MISSING:  # a required flag (cli.run's `required`)
            continue
        if isinstance(default, (list, tuple)):
            same = list(flag.default or []) == list(default)
        else:
            same = flag.default == default and type(flag.default) is type(default)
        if not same:
            differ.append(f"--{flag.name}: {flag.default!r} (field {default!r})")
    return Checked(without, commands, differ)


def _field(options_type, name):
    return next(f for f in dataclasses.fields(options_type) if f.name == name)


def _other_value(name, hint, field, flag):
    """A value of the field's type, apart from its default, that its flag accepts; text with
    spaces and quotes where the flag takes any (the printed command must quote it)."""
    from absl import flags

    default = command_line._default(field)
    if isinstance(flag.parser, flags.EnumParser):
        return next(v for v in flag.parser.enum_values if v != default)
    if isinstance(flag, flags.MultiFlag):
        return [f"{name} one = 'x y'", f'{name}="two"']
    if isinstance(flag.parser, flags.ListParser):
        return [f"{name}_a", f"{name}_b"]
    kind = next((a for a in typing.get_args(hint) if a is not type(None)), hint)
    if kind is bool:
        return not default
    if kind is int:
        return (default or 0) + 7
    if kind is float:
        return (default or 0.0) + 0.25
    if kind is str:
        return f"{name} value's"
    raise AssertionError(f"no value for {name}: {hint}")


@pytest.mark.parametrize("name, options_type, without_flags", TOOLS)
def test_the_printed_command_parses_back_to_the_same_options(name, options_type, without_flags):
    checked = isolated.call(round_trip, Tool(name, options_type), "", print)
    assert isinstance(checked, Checked)
    assert set(checked.without_flags) == without_flags
    assert len(checked.commands) == MIXES + 2
    everything = checked.commands[0]
    assert everything.startswith(f"$ t2t-lite-{name.replace('_', '-')} ") and "--" in everything
    assert checked.help_defaults_differ == []


def test_the_rule_names_flags_and_renders_values():
    @dataclasses.dataclass
    class Options:
        model_dir: str
        gin_params: typing.Sequence[str] = ()
        accept: typing.Sequence[str] = ()
        start_over: bool = False
        cached: bool = True
        alpha: typing.Optional[float] = None
        steps: int = 10
        configs: typing.Optional[tuple] = None

    options = Options("M", gin_params=["a = 1", "b"], accept=("x", "y"), start_over=True,
                      cached=False, alpha=0.6, configs=({"model": 1},))
    with pytest.raises(ValueError, match="not a flag value"):
        command_line.to_args(options)
    args = command_line.to_args(options, omit=("configs",))
    assert args == ["--model_dir=M", "--gin_param=a = 1", "--gin_param=b", "--accept=x,y",
                    "--start_over", "--nocached", "--alpha=0.6"]
    assert command_line.shown("avg_checkpoints", args[:3]) == (
        "$ t2t-lite-avg-checkpoints --model_dir=M '--gin_param=a = 1' --gin_param=b")
    assert command_line.to_args(Options("M")) == ["--model_dir=M"]
    with pytest.raises(ValueError, match="None, not its default 10"):
        command_line.to_args(Options("M", steps=None))
    assert command_line.flag_args(problem="p", problem_params=["a=1"], num_last=None) == [
        "--problem=p", "--problem_param=a=1"]


def test_a_flag_of_the_wrong_kind_for_its_field_is_refused():
    from absl import flags

    @dataclasses.dataclass
    class Options:
        gin_params: typing.Sequence[str] = ()

    values = flags.FlagValues()
    flags.DEFINE_string("gin_param", None, "not repeatable", flag_values=values)
    with pytest.raises(TypeError, match="--gin_param should be a multi flag"):
        command_line.flags_of(Options, values)
