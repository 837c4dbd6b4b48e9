"""The facts of docs/reference.md that need an interpreter of their own, gathered there by
isolated.call (t2t_lite/reference.py): a tool's flags (absl's flag registry is global, and two
tools define the same names) and the hparams sets resolved (gin's bindings are global, and a
caller's must stay as they are). Light on purpose: a child imports this module, not TensorFlow.
"""
import dataclasses
import re
from typing import Dict, List, Optional


@dataclasses.dataclass
class ToolModule:
    """A tool's module (t2t_lite.bin.decoder)."""
    module: str


@dataclasses.dataclass
class Flag:
    name: str
    type: str  # absl's flag_type(): "string", "multi string", ...
    default: object
    help: str  # without what absl adds to it: the type column says that
    values: Optional[List[str]]  # an enum's choices


def tool_flags(tool: ToolModule) -> List[Flag]:
    """The flags t2t_lite defines once the tool's module is imported (flags are defined on
    import, the shared ones by t2t_lite.cli), in definition order; the tool does not run."""
    import importlib

    from absl import flags

    importlib.import_module(tool.module)
    rows = []
    for module, defined in flags.FLAGS.flags_by_module_dict().items():
        if module.split(".")[0] != "t2t_lite":
            continue
        for flag in defined:
            values = getattr(flag.parser, "enum_values", None)
            text = re.sub(r";?\s*repeat this option to specify a list of values$", "", flag.help)
            if values:
                text = re.sub(r"^<[^>]*>: ", "", text)
            rows.append(Flag(flag.name, flag.flag_type(), flag.default, text,
                             list(values) if values else None))
    return rows


@dataclasses.dataclass
class AllSets:
    """resolve_sets' request: every hparams set."""


@dataclasses.dataclass
class ResolvedSet:
    parent: Optional[str]  # the set it includes; None: base, on the dataclass defaults
    configs: Dict[str, dict]  # {config class name: its fields' values}


def resolve_sets(request: AllSets) -> Dict[str, ResolvedSet]:
    """{set name: ResolvedSet}: each set resolved by gin, with the set it includes."""
    from t2t_lite import hparams

    found = {}
    for name in hparams.list_hparams_sets():
        text = hparams.hparams_file(name).read_text(encoding="utf-8")
        parent = re.search(r"^include\s+['\"](.+)\.gin['\"]", text, re.M)
        found[name] = ResolvedSet(parent.group(1) if parent else None,
                                  {type(c).__name__: dataclasses.asdict(c)
                                   for c in hparams.load(name)})
    return found
