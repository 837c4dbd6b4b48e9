"""Versioned SavedModel exports: E/<n>/ with n one more than the newest version already there.

TF Serving watches E and loads the highest numeric folder, so a half-written folder must never get
a number: the SavedModel is written to a hidden temporary folder inside E (same filesystem) and
renamed into place only when complete; a full disk ends in one line (process_end.WriteFailed),
the temporary folder removed and the earlier versions as they were. Besides the SavedModel,
assets.extra/t2t_lite.json records the fixed settings (beam size, max length, problem, hparams)
and the export's format version (formats.SAVED_MODEL, checked by inference/saved_model.py before
an export loads); TF Serving ignores that folder.
"""
import json
import os
import shutil
import tempfile

import tensorflow as tf

from t2t_lite import formats, process_end
from t2t_lite.errors import UserError
from t2t_lite.inference.saved_model import METADATA_FILE, versions


def next_version(export_dir):
    existing = versions(export_dir)
    return existing[-1] + 1 if existing else 1


def failed(error, what, export_dir):
    """`error` itself unless it is a failed write (a full disk, a quota, EIO); then one line
    (process_end.WriteFailed): no version was added, the earlier ones are as they were."""
    if not process_end.write_failure_reason(error):
        return error
    return process_end.write_failed(error, what, f"no version was added to {export_dir} (its "
                                    f"earlier ones are kept); free some space and export again")


def save(module, export_dir):
    """Writes module as the next version under export_dir; returns the version folder."""
    if os.path.exists(export_dir) and not os.path.isdir(export_dir):
        raise UserError(f"--export_dir {export_dir} exists and is not a directory")
    try:
        os.makedirs(export_dir, exist_ok=True)
        tmp_dir = tempfile.mkdtemp(prefix=".incomplete-", dir=export_dir)
    except OSError as error:
        raise failed(error, export_dir, export_dir) from None
    try:
        try:
            tf.saved_model.save(module, tmp_dir, signatures=module.signatures())
            metadata_path = os.path.join(tmp_dir, METADATA_FILE)
            os.makedirs(os.path.dirname(metadata_path), exist_ok=True)
            with open(metadata_path, "w", encoding="utf-8") as f:
                f.write(json.dumps(formats.stamped(json.loads(module.metadata_json),
                                                   formats.SAVED_MODEL), indent=2) + "\n")
        except Exception as error:  # pylint: disable=broad-except  (re-raised unless a write)
            raise failed(error, os.path.join(export_dir, str(next_version(export_dir))),
                         export_dir) from None
        # Another exporter may have taken the number meanwhile: take the next free one.
        while True:
            version_dir = os.path.join(export_dir, str(next_version(export_dir)))
            try:
                os.rename(tmp_dir, version_dir)
                return version_dir
            except OSError:
                if not os.path.exists(version_dir):
                    raise
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
