"""Small full disks for the tests of failed writes: a tmpfs of a few kilobytes (root only; the
test skips, saying why, elsewhere), filled to its last block and freed again."""
import contextlib
import os
import subprocess
import tempfile

import pytest


@contextlib.contextmanager
def tmpfs(size="64k"):
    """A fresh tmpfs of `size` mounted on a temporary folder, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("a full disk is a small tmpfs, and mounting one needs root")
    folder = tempfile.mkdtemp(prefix="full_disk_")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", folder],
                             capture_output=True, text=True)
    if mounted.returncode:
        os.rmdir(folder)
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", folder], check=False)
        os.rmdir(folder)


def fill(folder, leave=0):
    """Fills the filesystem under `folder` up to its last `leave` bytes (0: to the last byte);
    returns the filler's path, for free()."""
    path = os.path.join(folder, "filler")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        statvfs = os.statvfs(folder)
        room = statvfs.f_bavail * statvfs.f_frsize - leave
        block = b"\0" * 4096
        while room > 0:
            try:
                room -= os.write(descriptor, block[:min(room, len(block))])
            except OSError:
                break
    finally:
        os.close(descriptor)
    return path


def free(filler):
    os.remove(filler)


@contextlib.contextmanager
def full(size="64k"):
    """A tmpfs with no byte left."""
    with tmpfs(size) as folder:
        fill(folder)
        yield folder
