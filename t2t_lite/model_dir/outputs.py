"""Where a tool may write beside checkpoints: never over checkpoints or model_dir files it did not
make.

A tf.train.CheckpointManager takes over the `checkpoint` list of the folder it is given and
deletes what that list holds beyond its own max_to_keep: the averager's manager (max_to_keep=1)
pointed at a model_dir would delete the training checkpoints. So before reading anything:

- the averager's output folder may not be the model_dir, its best/ (the best dev checkpoint),
  another model_dir, or a folder holding checkpoints other than earlier averages. An earlier
  average is a folder the averager wrote (it holds AVERAGE_RECORD), or a model_dir's own
  `averaged/` (written before the record existed);
- an export folder may not be a model_dir or a folder holding checkpoints;
- an output file (the decoder's, the scorer's) may not be one of a model_dir's files or
  checkpoint files, whether it exists yet or not.
"""
import os
import re

from t2t_lite.errors import UserError

STATE_FILE = "checkpoint"  # tf.train.CheckpointManager's list of a folder's checkpoints
AVERAGE_RECORD = "averaged_from.json"  # in every folder the averager writes: what it averaged
AVERAGED = "averaged"  # a model_dir's default average folder
BEST = "best"  # a model_dir's best dev checkpoint (training/evaluation.py)
_CHECKPOINT_FILE = re.compile(r".+\.(?:index|data-\d+-of-\d+)\Z")
# What makes a folder a model_dir, and the other files a run keeps there (files.py's layout).
_MODEL_DIR_MARKS = ("run.json", "configs.json")
_MODEL_DIR_FILES = frozenset(_MODEL_DIR_MARKS + ("config.gin", "operative_config.gin", ".lock",
                                                 STATE_FILE, AVERAGE_RECORD))


def _names(folder):
    try:
        return os.listdir(folder)
    except OSError:
        return []


def is_model_dir(folder):
    return any(os.path.isfile(os.path.join(folder, name)) for name in _MODEL_DIR_MARKS)


def checkpoint_files(folder):
    """The names in `folder` that are checkpoints or their list, sorted."""
    return sorted(name for name in _names(folder)
                  if name == STATE_FILE or _CHECKPOINT_FILE.fullmatch(name))


def is_earlier_average(folder):
    """Whether `folder` is one the averager wrote (its record), or a model_dir's `averaged/`."""
    return (os.path.isfile(os.path.join(folder, AVERAGE_RECORD))
            or (os.path.basename(folder) == AVERAGED and is_model_dir(os.path.dirname(folder))))


def _listed(names, limit=3):
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_average_output(output_dir, model_dir, flag="--output_dir"):
    """UserError, in one line, unless the averager may write to `output_dir`: not the model_dir
    or its best/, not another model_dir, not a folder of checkpoints other than averages. Reads
    no checkpoint, only names."""
    given = f"{flag} {output_dir}"
    out, source = os.path.realpath(output_dir), os.path.realpath(model_dir)
    keep = (f"leave {flag} out (the average goes to {os.path.join(model_dir, AVERAGED)}) or "
            f"name a new folder")
    if out == source:
        raise UserError(f"{given} is the model_dir itself: the average would delete its training "
                        f"checkpoints; {keep}")
    if out == os.path.join(source, BEST) or (os.path.basename(out) == BEST
                                             and is_model_dir(os.path.dirname(out))):
        raise UserError(f"{given} is a model_dir's {BEST}/, its best dev checkpoint; {keep}")
    if os.path.exists(out) and not os.path.isdir(out):
        raise UserError(f"{given} exists and is not a folder; {keep}")
    if is_model_dir(out):
        raise UserError(f"{given} is a model_dir (it has run.json or configs.json): the average "
                        f"would delete its checkpoints; {keep}")
    found = checkpoint_files(out)
    if found and not is_earlier_average(out):
        raise UserError(f"{given} holds checkpoints that are not averages ({_listed(found)}): "
                        f"the average would delete them; {keep}")


def check_export_folder(export_dir, flag="--export_dir"):
    """UserError unless an export may be written under `export_dir`: no model_dir, no folder of
    checkpoints (the model_dir's averaged/ and best/ included)."""
    out = os.path.realpath(export_dir)
    if is_model_dir(out):
        raise UserError(f"{flag} {export_dir} is a model_dir: exports go to a folder of their "
                        f"own")
    found = checkpoint_files(out)
    if found:
        raise UserError(f"{flag} {export_dir} holds checkpoints ({_listed(found)}): exports go to "
                        f"a folder of their own")


def check_output_file(path, flag):
    """UserError when the file at `path` (links resolved) is, or would become, one of a
    model_dir's files (run.json, configs.json, the vocabulary, .lock, ...) or a checkpoint's
    (`checkpoint`, *.index, *.data-*) in a model_dir or a folder of checkpoints."""
    target = os.path.realpath(path)
    folder, name = os.path.split(target)
    if not (is_model_dir(folder) or checkpoint_files(folder)):
        return
    if (name in _MODEL_DIR_FILES or _CHECKPOINT_FILE.fullmatch(name)
            or name == _vocabulary_name(folder)):
        raise UserError(f"{flag} {path} is {'' if os.path.exists(target) else 'named as '}a "
                        f"file of the model_dir or checkpoints in {folder}: writing it would "
                        f"destroy them; write the output to another file")


def _vocabulary_name(folder):
    """The vocabulary file run.json names, or None."""
    import json

    try:
        with open(os.path.join(folder, "run.json"), encoding="utf-8") as f:
            name = json.load(f).get("vocab_file")
    except (OSError, ValueError, AttributeError):
        return None
    return os.path.basename(name) if isinstance(name, str) else None
