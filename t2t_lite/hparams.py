"""The one module that parses gin: hparam sets, the user's gin files and bindings.

Hparam sets are gin files in t2t_lite/hparams_sets (gin/ in a checkout), one name per file:
`--hparams_set=base` reads base.gin, `table3/B_dk16` reads table3/B_dk16.gin. Sets derive from
each other with gin's `include`, resolved against the same folder. Everything below this module
receives plain dataclasses (t2t_lite.config); a model_dir stores them as values, never as gin.
"""
import os
import pathlib
import re
from typing import Iterable, Sequence, Tuple

import gin

from t2t_lite.config import DecodeConfig, ModelConfig, TrainConfig
from t2t_lite.errors import UserError


def hparams_dir() -> pathlib.Path:
    """The folder holding the .gin sets (t2t_lite/hparams_sets; gin/ in a checkout links to it)."""
    folder = pathlib.Path(__file__).resolve().parent / "hparams_sets"
    if not (folder / "base.gin").is_file():
        raise RuntimeError("t2t_lite's gin hparam sets are missing from this installation")
    return folder


def list_hparams_sets() -> list:
    root = hparams_dir()
    return sorted(p.relative_to(root).with_suffix("").as_posix() for p in root.rglob("*.gin"))


# A set is named, never given as a path: your own gin files come in through --gin_file.
_SET_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*(/[A-Za-z0-9_][A-Za-z0-9_.-]*)*")


def hparams_file(name: str) -> pathlib.Path:
    known = ", ".join(list_hparams_sets())
    if not _SET_NAME.fullmatch(name or "") or ".." in name.split("/"):
        raise UserError(f"--hparams_set names a set, not a path: {name!r} (known sets: {known}; "
                        "your own gin file goes in --gin_file)")
    path = hparams_dir() / f"{name}.gin"
    if not path.is_file():
        raise UserError(f"unknown hparams set {name!r}; known sets: {known}")
    return path


def check_gin_files(gin_files: Sequence[str]) -> None:
    """UserError for a --gin_file that does not exist (checked by the trainer's and datagen's
    CLIs before TensorFlow loads, and by the trainer)."""
    for path in gin_files:
        if not os.path.isfile(path):
            raise UserError(f"--gin_file {path} does not exist")


def parse(name: str, gin_params: Iterable[str] = (), gin_files: Sequence[str] = ()) -> None:
    """Clears gin and binds the set `name`, then extra gin files, then `--gin_param` overrides."""
    path = hparams_file(name)
    gin.clear_config()
    search_path = str(hparams_dir())
    # Private gin state, on purpose: `include 'base.gin'` must resolve against the sets' folder
    # before the working directory (gin's '' prefix), where a stray base.gin would replace the
    # parent set, and gin's one public call, add_config_file_search_path, appends after ''.
    prefixes = gin.config._LOCATION_PREFIXES  # pylint: disable=protected-access
    if not prefixes or prefixes[0] != search_path:
        prefixes.insert(0, search_path)
    try:
        # finalize_config=False: problems may still register configurables after this.
        gin.parse_config_files_and_bindings([str(path), *gin_files], list(gin_params),
                                            finalize_config=False)
    except (ValueError, KeyError, SyntaxError, IOError) as error:
        raise UserError(f"bad gin configuration for set {name!r}: {_one_line(error)}") from None


def configs() -> Tuple[ModelConfig, TrainConfig, DecodeConfig]:
    """Builds the three configs from whatever gin currently binds."""
    try:
        return ModelConfig(), TrainConfig(), DecodeConfig()
    except (ValueError, TypeError) as error:
        raise UserError(f"bad hparams: {_one_line(error)}") from None


def load(name: str, gin_params: Iterable[str] = (),
         gin_files: Sequence[str] = ()) -> Tuple[ModelConfig, TrainConfig, DecodeConfig]:
    parse(name, gin_params, gin_files)
    return configs()


def bind(gin_files: Sequence[str] = (), gin_params: Iterable[str] = ()) -> None:
    """Adds the user's gin files and bindings to what gin binds (datagen's problem settings)."""
    if not gin_files and not gin_params:
        return
    try:
        gin.parse_config_files_and_bindings(list(gin_files), list(gin_params))
    except (ValueError, KeyError, SyntaxError, IOError) as error:
        raise UserError(f"gin: {_one_line(error)}") from None


def config_text() -> str:
    """Every binding in force, for people to read (a model_dir's config.gin)."""
    return gin.config_str()


def operative_config_text() -> str:
    """The values the run actually used (a model_dir's operative_config.gin)."""
    return gin.operative_config_str()


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text[:500]
