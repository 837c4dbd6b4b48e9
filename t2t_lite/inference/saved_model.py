"""Finding and loading the versioned SavedModels t2t-lite-exporter writes (E/<n>/), for the
decoder, the scorer and anything else that translates with an export. An export is data someone
may have sent: its settings are held to the bounds of model_dir/limits.py before it loads."""
import json
import math
import os

from t2t_lite.errors import UserError


def versions(export_dir):
    """The integer versions in export_dir, ascending."""
    if not os.path.isdir(export_dir):
        return []
    return sorted(int(name) for name in os.listdir(export_dir)
                  if name.isdigit() and os.path.isdir(os.path.join(export_dir, name)))


def latest_version_dir(export_dir):
    """export_dir itself if it holds a SavedModel, else its newest version folder."""
    if os.path.isfile(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    existing = versions(export_dir)
    if not existing:
        raise UserError(f"no SavedModel in {export_dir} (expected {export_dir}/<version>/"
                        "saved_model.pb); export one with t2t-lite-exporter")
    return os.path.join(export_dir, str(existing[-1]))


# The settings file the exporter writes beside every export, whatever its format: a CTranslate2
# folder holds it at its top, a SavedModel under assets.extra (TF Serving ignores that folder).
METADATA_NAME = "t2t_lite.json"
METADATA_FILE = os.path.join("assets.extra", METADATA_NAME)


def _read_metadata(version_dir):
    """assets.extra/t2t_lite.json as a dict, or None for an export without it."""
    path = os.path.join(version_dir, METADATA_FILE)
    if not os.path.isfile(path):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise UserError(f"cannot read {path}: {' '.join(str(error).split())[:200]}") from None


def _variable_elements(version_dir):
    """Numbers the SavedModel's variables hold, from their index (no weight is read)."""
    import tensorflow as tf

    prefix = os.path.join(version_dir, "variables", "variables")
    if not os.path.isfile(prefix + ".index"):
        return 0
    try:
        shapes = tf.train.load_checkpoint(prefix).get_variable_to_shape_map().values()
    except (tf.errors.OpError, ValueError) as error:
        raise UserError(f"cannot read {prefix}.index: "
                        f"{' '.join(str(error).split())[:200]}") from None
    return sum(math.prod(shape) for shape in shapes)


def check_export(version_dir):
    """UserError unless the export's format is one this t2t_lite reads (formats.SAVED_MODEL; an
    export without a metadata file is format 1), and its settings (its metadata file) and the
    weights its variables index declares are within the bounds a model_dir's are: checked before
    anything loads."""
    from t2t_lite import formats
    from t2t_lite.model_dir import limits

    metadata = _read_metadata(version_dir)
    if metadata is not None:
        path = os.path.join(version_dir, METADATA_FILE)
        formats.check_version(metadata, formats.SAVED_MODEL, path)
        limits.check_settings(metadata, path)
    limits.check_elements(_variable_elements(version_dir), f"{version_dir}/variables declares",
                         "the export")


def load(export_dir):
    """The newest export of export_dir (or the version folder given), loaded as a
    translator.SavedModelTranslator. Its settings are checked before it loads (check_export) and,
    as its describe() returns them (what the decoder will use, whatever the file says), after."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops the SavedModel uses

    from t2t_lite.inference.translator import SavedModelTranslator

    version_dir = latest_version_dir(export_dir)
    check_export(version_dir)
    return SavedModelTranslator(tf.saved_model.load(version_dir), version_dir)
