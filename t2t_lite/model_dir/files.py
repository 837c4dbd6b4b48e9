"""A model_dir's files: run.json, configs.json, the vocabulary copy, the trainer's lock.

Layout:
    M/run.json          problem name, hparams set, gin params, vocabulary file name and size
    M/configs.json      the resolved ModelConfig / TrainConfig / DecodeConfig, as plain values:
                        what every later tool reads; its "format_version" (formats.MODEL_DIR) is
                        the model_dir's format, checked before any other value is read
    M/config.gin        every gin binding in force, for people to read (never executed again);
                        for a run whose caller gave the configs (no gin bound them), every
                        field's value as a gin binding
    M/operative_config.gin  gin's operative config (the values the run actually used); the
                        configs' values again for a run given its configs
    M/<vocabulary file> a copy of the problem's vocabulary
    M/ckpt-N.*          checkpoints (tf.train.CheckpointManager)
    M/.lock             held by the running trainer (file_lock.py), so a second trainer refuses

Each of these files is written only when its content changes: a re-run with the same settings
leaves them, times included, as they were.

The files' texts are given by the caller (the trainer reads gin's bindings; this module never reads
gin). A model_dir is data: someone may send you one. Tools build the configs from configs.json's values;
they never bind config.gin, whose `import` lines would run code on the reader's machine.
run.json names the vocabulary by file name, never a path out of the model_dir.
"""
import dataclasses
import filecmp
import json
import os
import re

from t2t_lite import atomic, file_lock, formats, registry
from t2t_lite.config import DecodeConfig, ModelConfig, TrainConfig
from t2t_lite.errors import UserError

RUN_INFO = "run.json"
CONFIGS = "configs.json"
CONFIG = "config.gin"
OPERATIVE_CONFIG = "operative_config.gin"
LOCK = ".lock"


class TrainerLock(file_lock.FileLock):
    """The trainer's exclusive lock on model_dir (M/.lock): file_lock.FileLock's rules, with the
    trainer's message. Where a free flock proves its holder gone, the file stays between runs
    (M's listing does not change) and is taken over silently. A trainer before this one wrote
    "pid N" in it: such a file whose flock is free is taken over, one whose flock is held
    refuses as a running trainer."""

    _keep = True
    # A lock that cannot be checked from here (a file system whose flocks stay on one machine,
    # held by this host name on another node: a replacement pod): waited for this long, the
    # Kubernetes manifests' grace period (120 s) and some, since an ending trainer removes it.
    wait_seconds = 150

    def __init__(self, model_dir):
        super().__init__(os.path.join(model_dir, LOCK), f"--model_dir {model_dir}")
        self.model_dir = model_dir

    def _parse(self, data):
        old = re.fullmatch(rb"pid (\d+)\s*", data)
        if old:
            return {"pid": int(old.group(1)), "host": None}
        return super()._parse(data)

    def _busy(self, record):
        holder = f"pid {record['pid']}" if record else "another process"
        return UserError(f"{self.model_dir} is in use by another trainer ({holder}); stop it or "
                         f"use another --model_dir")


def read_run_info(model_dir):
    """run.json as a dict, checked enough that its readers get what they index (one-line
    UserErrors for a damaged or foreign file)."""
    path = os.path.join(model_dir, RUN_INFO)
    if not os.path.isfile(path):
        raise UserError(f"{model_dir} is not a t2t_lite model_dir (no {RUN_INFO}); train into it "
                        "with t2t-lite-trainer first")
    try:
        with open(path, encoding="utf-8") as f:
            info = json.load(f)
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read {path}: {' '.join(str(error).split())[:300]}") from None
    size = info.get("vocab_size") if isinstance(info, dict) else None
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise UserError(f"{path} is not a t2t_lite run.json (needs a positive vocab_size)")
    return info


def check_model_dir(model_dir):
    """UserError unless model_dir holds a run.json and a configs.json its readers can use: what
    a tool that reads a model_dir checks first. Imports no TensorFlow, so a wrong --model_dir
    costs no start-up."""
    read_run_info(model_dir)
    load_configs(model_dir)


def write_run_info(model_dir, problem_name, hparams_set, gin_params, vocab_path, vocab_size,
                   configs, extra=None, config_text=None):
    """Records what later tools need; refuses to mix two different runs in one model_dir.

    `configs` is the run's (ModelConfig, TrainConfig, DecodeConfig); `config_text`: config.gin's
    text, the gin bindings that gave them (hparams.config_text(), read by the caller), or None
    for configs no gin bound: config.gin then lists the configs' values.
    """
    os.makedirs(model_dir, exist_ok=True)
    info = {"problem": registry.canonical_name(problem_name), "hparams_set": hparams_set,
            "gin_params": list(gin_params), "vocab_file": os.path.basename(vocab_path),
            "vocab_size": int(vocab_size)}
    info.update(extra or {})
    config_text = configs_gin(configs) if config_text is None else config_text
    existing_path = os.path.join(model_dir, RUN_INFO)
    if os.path.isfile(existing_path):
        old = read_run_info(model_dir)
        # Problems compare by registered name: an alias (wmt14_ende) is the same problem.
        held = dict(old, problem=registry.canonical_name(old.get("problem")))
        for key in ("problem", "vocab_size"):
            if held.get(key) != info[key]:
                raise UserError(f"{model_dir} holds a run with {key}={old.get(key)!r}, not "
                                f"{info[key]!r}; use another --model_dir")
        old_model = _read_configs_json(model_dir).get("model") if os.path.isfile(
            os.path.join(model_dir, CONFIGS)) else None
        # Only the model's shape matters for resuming; budgets and schedules may change. Fields
        # added since the old run was written take their defaults.
        if old_model is not None and not _same_model(old_model, configs[0]):
            raise UserError(f"{model_dir} was trained with other hparams (see "
                            f"{os.path.join(model_dir, CONFIGS)}); resume with the same "
                            "--hparams_set/--gin_param or use another --model_dir")
    vocab_copy = os.path.join(model_dir, info["vocab_file"])
    if (os.path.abspath(vocab_path) != os.path.abspath(vocab_copy)
            and not _same_bytes(vocab_path, vocab_copy)):
        atomic.copy_file(vocab_path, vocab_copy)
    write_if_changed(os.path.join(model_dir, CONFIG), config_text)
    write_if_changed(os.path.join(model_dir, CONFIGS), json.dumps(formats.stamped(
        {key: dataclasses.asdict(config) for key, config in zip(_CONFIG_KEYS, configs)},
        formats.MODEL_DIR), indent=2) + "\n")
    write_if_changed(existing_path, json.dumps(info, indent=2) + "\n")
    return info


def write_if_changed(path, text):
    """Writes `text` to `path` (atomically) unless the file holds it already: a re-run that
    changes no setting leaves the model_dir's files, their times included, as they were (a paused
    decode checks the settings it was started with; rsync and make compare times)."""
    data = text.encode("utf-8")
    try:
        with open(path, "rb") as f:
            if f.read(len(data) + 1) == data:
                return False
    except OSError:
        pass  # absent or unreadable: written (an unreadable one fails there, in one line)
    atomic.write_text(path, text)
    return True


def _same_bytes(path, other):
    """Whether two files hold the same bytes (False when either cannot be read)."""
    try:
        return filecmp.cmp(path, other, shallow=False)
    except OSError:
        return False


def _same_model(old_values, config):
    """Whether a stored ModelConfig (values) describes `config`; fields it lacks (added to
    t2t_lite since) must hold their defaults."""
    new = dataclasses.asdict(config)
    defaults = {f.name: f.default for f in dataclasses.fields(ModelConfig)}
    return (all(new.get(key) == value for key, value in old_values.items())
            and all(new[key] == defaults[key] for key in new if key not in old_values))


_CONFIG_KEYS = ("model", "train", "decode")
_CONFIG_CLASSES = (ModelConfig, TrainConfig, DecodeConfig)


def configs_gin(configs):
    """The configs' values as gin bindings, every field, laid out as gin's own config text."""
    sections = []
    for config in sorted(configs, key=lambda config: type(config).__name__):
        name = type(config).__name__
        bindings = "".join(f"{name}.{field} = {value!r}\n"
                           for field, value in sorted(dataclasses.asdict(config).items()))
        sections.append(f"# Parameters for {name}:\n# {'=' * 78}\n{bindings}")
    return "\n".join(sections)


def _read_configs_json(model_dir):
    path = os.path.join(model_dir, CONFIGS)
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read {path}: {error}") from None
    # The format first: a newer layout is refused as newer, not as a damaged file.
    formats.check_version(data, formats.MODEL_DIR, path)
    if not isinstance(data, dict) or not all(isinstance(data.get(k), dict) for k in _CONFIG_KEYS):
        raise UserError(f"{path} is not a t2t_lite configs file (needs model, train, decode)")
    return data


def write_operative_config(model_dir, configs, operative_text=None):
    """operative_config.gin: `operative_text`, gin's operative config (hparams.
    operative_config_text(), read by the caller), or None for a run given its `configs` (gin bound
    none): their values."""
    write_if_changed(os.path.join(model_dir, OPERATIVE_CONFIG),
                     configs_gin(configs) if operative_text is None else operative_text)


def configs_where(model_dir):
    """How messages name the file a model_dir's configs come from."""
    return os.path.join(model_dir, CONFIGS)


def load_configs(model_dir):
    """(ModelConfig, TrainConfig, DecodeConfig) exactly as the run in model_dir used them.

    Built from configs.json's values, never by executing the model_dir's gin.
    """
    if not os.path.isfile(os.path.join(model_dir, CONFIGS)):
        raise UserError(f"{model_dir} has no {CONFIGS}; train into it with t2t-lite-trainer first")
    data = _read_configs_json(model_dir)
    try:
        return configs_from_values([data[key] for key in _CONFIG_KEYS])
    except (ValueError, TypeError) as error:
        raise UserError(f"bad configuration in {os.path.join(model_dir, CONFIGS)}: "
                        f"{' '.join(str(error).split())[:300]}") from None


def configs_from_values(values):
    """(ModelConfig, TrainConfig, DecodeConfig) from their values, three dicts as configs.json
    (or dataclasses.asdict through JSON) holds them; a value of the wrong type is a ValueError,
    one out of range the config's own ValueError, an unknown field a TypeError."""
    return tuple(cls(**_typed_values(key, cls, section))
                 for key, cls, section in zip(_CONFIG_KEYS, _CONFIG_CLASSES, values))


def _typed(field_type, value):
    """`value` from JSON as a config field of `field_type` holds it (bool is not a number, an
    int is a float, a whole float such as a gin `1e5` is an int), else ValueError. A field
    annotated with anything but a plain class (Optional[...], a string) is left to the class."""
    if not isinstance(field_type, type):
        return value
    if field_type is tuple and isinstance(value, list):  # JSON has no tuples
        return tuple(tuple(item) if isinstance(item, list) else item for item in value)
    if (field_type is bool) == isinstance(value, bool):  # neither or both
        if field_type is float and isinstance(value, int):
            return value
        if field_type is int and isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, field_type):
            return value
    raise ValueError(f"must be {field_type.__name__}, got {value!r:.60}")


def _typed_values(key, cls, values):
    """configs.json's `key` section with each value checked against its field's type (else
    ValueError): the dataclasses check ranges, not types, and a string where a size goes would
    otherwise fail deep inside the model as a traceback."""
    types = {field.name: field.type for field in dataclasses.fields(cls)}
    typed = dict(values)
    for name, value in values.items():
        if name in types:
            try:
                typed[name] = _typed(types[name], value)
            except ValueError as error:
                raise ValueError(f"{key}.{name} {error}") from None
    return typed


def vocab_path(model_dir, info=None):
    """The vocabulary copy in model_dir (`info`: run.json already read, to spare reading it).

    run.json names it by file name alone: a path would read (and an export would ship) a file
    from outside the model_dir."""
    # Here, not at the top: the vocabulary module loads TensorFlow, and the rest of this module
    # is read by tools before it loads (check_model_dir).
    from t2t_lite.data import vocab

    info = info if info is not None else read_run_info(model_dir)
    return vocab.file_in_folder(model_dir, info.get("vocab_file"),
                                os.path.join(model_dir, RUN_INFO))
