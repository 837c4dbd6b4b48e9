"""Atomic file writes: a file is written under a temporary name beside it and renamed into place
when complete, so a reader (or a re-run after a kill) never sees half a file."""
import contextlib
import json
import os
import shutil

TMP_SUFFIX = ".incomplete"


@contextlib.contextmanager
def open_atomic(path, mode="w", encoding="utf-8", newline=None):
    """Like open(path, mode) for writing; the file appears at `path` only if the block succeeds."""
    tmp = path + TMP_SUFFIX
    binary = "b" in mode
    try:
        with open(tmp, mode, **({} if binary else {"encoding": encoding, "newline": newline})) as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def write_text(path, text):
    with open_atomic(path) as f:
        f.write(text)


def write_json(path, obj, **dump_options):
    with open_atomic(path) as f:
        json.dump(obj, f, **dump_options)
        f.write("\n")


def copy_file(source, path):
    tmp = path + TMP_SUFFIX
    shutil.copyfile(source, tmp)
    os.replace(tmp, path)
