"""Where a tool may write: never into a model_dir or an export it did not create for that output.

The rule is a property of the place, not a list of names: an output file (the decoder's, its
summary, the scorer's, t2t-lite-po's) may not lie in a model_dir, a folder of checkpoints or an
export, nor anywhere below one, whatever its name and whether it exists yet (checkpoints,
run.json, configs, dev_evaluations.jsonl, the vocabulary, saved_model.pb, variables/, assets/
and every file a later version adds are all covered). The path is resolved first, so a link
hides nothing, and only names are read, before TensorFlow loads. Folder outputs have one place
each that their tool made for them:

- the averager's output folder may be its own earlier average (a folder holding AVERAGE_RECORD)
  or the model_dir's `averaged/`; never the model_dir, its best/, another model_dir, a folder of
  checkpoints, an export, or a folder inside any of them. A tf.train.CheckpointManager takes over
  the `checkpoint` list of its folder and deletes what it holds beyond max_to_keep: pointed at a
  model_dir it would delete the training checkpoints;
- the exporter's folder may be a folder of export versions (E, holding E/<n>/saved_model.pb),
  to which it adds one; never a version itself, a model_dir, a folder of checkpoints, or a
  folder inside any of them.
"""
import os
import re

from t2t_lite.errors import UserError

STATE_FILE = "checkpoint"  # tf.train.CheckpointManager's list of a folder's checkpoints
AVERAGE_RECORD = "averaged_from.json"  # in every folder the averager writes: what it averaged
AVERAGED = "averaged"  # a model_dir's default average folder
BEST = "best"  # a model_dir's best dev checkpoint (training/evaluation.py)
_CHECKPOINT_FILE = re.compile(r".+\.(?:index|data-\d+-of-\d+)\Z")
# What makes a folder a model_dir (files.py's layout): the trainer writes both before anything
# else; common names alone (a project's own run.json) do not make one.
_MODEL_DIR_MARKS = ("run.json", "configs.json")
_SAVED_MODEL_FILES = ("saved_model.pb", "saved_model.pbtxt")
# A CTranslate2 folder: its weights, with CTranslate2's config or the exporter's settings.
_CTRANSLATE2_MARKS = ("model.bin", ("config.json", "t2t_lite.json"))


def _names(folder):
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _has(folder, name):
    return os.path.isfile(os.path.join(folder, name))


def is_model_dir(folder):
    return any(_has(folder, name) for name in _MODEL_DIR_MARKS)


def checkpoint_files(folder):
    """The names in `folder` that are checkpoints or their list, sorted."""
    return sorted(name for name in _names(folder)
                  if name == STATE_FILE or _CHECKPOINT_FILE.fullmatch(name))


def _holds_checkpoints(folder):
    """A checkpoint list, or a checkpoint's index beside its data (a lone `x.index` is not)."""
    names = set(_names(folder))
    return STATE_FILE in names or any(
        name.endswith(".index") and any(other.startswith(name[:-len("index")] + "data-")
                                        for other in names) for name in names)


def folder_kind(folder):
    """What `folder` is when it is a tool's own output that no other output may enter: "the
    model_dir", "the folder of checkpoints", "the SavedModel export", "the export folder" (of
    versions), "the CTranslate2 export"; None for any other folder."""
    if all(_has(folder, name) for name in _MODEL_DIR_MARKS):
        return "the model_dir"
    if any(_has(folder, name) for name in _SAVED_MODEL_FILES):
        return "the SavedModel export"
    weights, settings = _CTRANSLATE2_MARKS
    if _has(folder, weights) and any(_has(folder, name) for name in settings):
        return "the CTranslate2 export"
    if _holds_checkpoints(folder):
        return "the folder of checkpoints"
    if any(name.isdigit() and any(_has(os.path.join(folder, name), saved)
                                  for saved in _SAVED_MODEL_FILES) for name in _names(folder)):
        return "the export folder"
    return None


def _owners(path, allowed=()):
    """[(folder, kind)] for `path` (resolved) and each folder above it that is a tool's own
    output (folder_kind), nearest first, less the folders in `allowed`."""
    found, current = [], os.path.realpath(path)
    while True:
        kind = None if current in allowed else folder_kind(current)
        if kind:
            found.append((current, kind))
        parent = os.path.dirname(current)
        if parent == current:
            return found
        current = parent


def _refuse_inside(flag, given, owners, hint):
    """UserError naming the outermost owner (the model_dir rather than its best/), if any."""
    if owners:
        folder, kind = owners[-1]
        raise UserError(f"{flag} {given} is in {kind} {folder}: no tool writes into a model_dir "
                        f"or an export it did not make for that output; {hint}")


def is_earlier_average(folder):
    """Whether `folder` is one the averager wrote (its record), or a model_dir's `averaged/`."""
    return (os.path.isfile(os.path.join(folder, AVERAGE_RECORD))
            or (os.path.basename(folder) == AVERAGED and is_model_dir(os.path.dirname(folder))))


def _listed(names, limit=3):
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def check_average_output(output_dir, model_dir, flag="--output_dir"):
    """UserError, in one line, unless the averager may write to `output_dir`: not the model_dir
    or its best/, not another model_dir, not a folder of checkpoints other than averages, not
    an export, nor a folder inside any of these except the model_dir's own averaged/. Reads no
    checkpoint, only names."""
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
    earlier = is_earlier_average(out)
    if found and not earlier:
        raise UserError(f"{given} holds checkpoints that are not averages ({_listed(found)}): "
                        f"the average would delete them; {keep}")
    # Its own places: an earlier average, and the model_dir's averaged/ (inside the model_dir).
    allowed = {out} if earlier else set()
    if out == os.path.join(source, AVERAGED) or (earlier and os.path.basename(out) == AVERAGED):
        allowed.add(os.path.dirname(out))
    _refuse_inside(flag, output_dir, _owners(out, allowed), keep)


def check_export_folder(export_dir, flag="--export_dir"):
    """UserError unless an export may be written under `export_dir`: a new folder or a folder of
    earlier export versions, in no model_dir, folder of checkpoints or export (the model_dir's
    averaged/ and best/ included); a version folder itself is refused."""
    out = os.path.realpath(export_dir)
    hint = "export to a folder of its own (a new one, or one holding earlier versions)"
    _refuse_inside(flag, export_dir, _owners(os.path.dirname(out)), hint)  # E/1/variables too
    if is_model_dir(out):
        raise UserError(f"{flag} {export_dir} is a model_dir: exports go to a folder of their "
                        f"own")
    found = checkpoint_files(out)
    if found:
        raise UserError(f"{flag} {export_dir} holds checkpoints ({_listed(found)}): exports go to "
                        f"a folder of their own")
    kind = folder_kind(out)
    if kind and kind != "the export folder":  # a version itself, a CTranslate2 folder
        _refuse_inside(flag, export_dir, [(out, kind)], hint)


def check_output_file(path, flag):
    """UserError when the file at `path` (links resolved) lies in a model_dir, a folder of
    checkpoints or an export, or in a folder below one, whether it exists yet or not."""
    target = os.path.realpath(path)
    _refuse_inside(flag, path, _owners(os.path.dirname(target)),
                   "write the output outside it")
