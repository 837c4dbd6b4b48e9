"""Atomic file writes: a file is written under a temporary name beside it and renamed into place
when complete, so a reader (or a re-run after a kill) never sees half a file.

A write that fails for good (a full disk, a quota, EIO) removes the temporary file, leaves the
file at `path` as it was, and raises process_end.WriteFailed: one line naming `path`."""
import contextlib
import json
import math
import os
import shutil

from t2t_lite import process_end

TMP_SUFFIX = ".incomplete"


@contextlib.contextmanager
def open_atomic(path, mode="w", encoding="utf-8", newline=None, durable=False):
    """Like open(path, mode) for writing; the file appears at `path` only if the block succeeds.

    durable: the bytes are fsync'd before the rename and the folder after it, so after a power
    loss `path` holds either the old file or all of the new one."""
    tmp = path + TMP_SUFFIX
    binary = "b" in mode
    try:
        with open(tmp, mode, **({} if binary else {"encoding": encoding, "newline": newline})) as f:
            yield f
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, path)
        if durable:
            fsync_folder(path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(error, OSError) and process_end.is_write_failure(error):
            raise _failed(error, path) from None
        raise


def _failed(error, path):
    kept = "the file there is kept as it was" if os.path.exists(path) else "nothing was written"
    return process_end.write_failed(error, path, kept)


def fsync_folder(path):
    """Makes a rename or creation of `path` survive a power loss (its folder entry on disk)."""
    descriptor = os.open(os.path.dirname(os.path.abspath(path)), os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def write_text(path, text, durable=False):
    with open_atomic(path, durable=durable) as f:
        f.write(text)


def finite(obj):
    """`obj` (JSON-able values) with every float JSON has no number for (inf, nan) as None:
    json writes them as Infinity and NaN, which strict readers (other languages' parsers,
    `json.loads(..., parse_constant=reject)`) refuse."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {key: finite(value) for key, value in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(value) for value in obj]
    return obj


def write_json(path, obj, durable=False, **dump_options):
    """`obj` as strict JSON (finite), replacing the file at `path` whole."""
    with open_atomic(path, durable=durable) as f:
        json.dump(finite(obj), f, allow_nan=False, **dump_options)
        f.write("\n")


def copy_file(source, path):
    tmp = path + TMP_SUFFIX
    try:
        shutil.copyfile(source, tmp)
        os.replace(tmp, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        if isinstance(error, OSError) and process_end.is_write_failure(error):
            raise _failed(error, path) from None
        raise
