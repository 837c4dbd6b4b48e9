"""Finding and loading the versioned SavedModels t2t-lite-exporter writes (E/<n>/), for the
decoder, the scorer and anything else that translates with an export."""
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


def load(export_dir):
    """The newest export of export_dir (or the version folder given), loaded; it offers the
    TranslationModule's functions (tokenize, translate_ids, score, describe, ...)."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops the SavedModel uses

    return tf.saved_model.load(latest_version_dir(export_dir))
