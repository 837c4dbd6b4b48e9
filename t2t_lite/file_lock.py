"""One writer per file: an exclusive lock file beside what is written, released on exit.

The lock is an fcntl.flock on the lock file, which the OS drops when its holder exits, even
after kill -9. The file records its holder (pid, host, start time): that names the holder in
the message a second writer gets, and decides whether a lock file nobody flocks is stale. It is
taken over only when its holder is provably gone: nobody flocks it and it names this host
(where flock is unavailable, its pid must no longer run). A holder on another host cannot be
checked from here (a shared file system may not pass flocks on), so its lock is left for the
user to remove. A file at the lock's path that is not such a record is someone else's and is
never touched.
"""
import datetime
import errno
import fcntl
import json
import os
import socket
import sys

from t2t_lite.errors import UserError

LOCK_SUFFIX = ".lock"
_KIND = "t2t_lite lock"


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def _read(descriptor):
    os.lseek(descriptor, 0, os.SEEK_SET)
    data = b""
    while block := os.read(descriptor, 1 << 16):
        data += block
    return data


def _parse(data):
    """The holder record of a lock file's bytes; {} for an empty file; None if it is not one."""
    if not data.strip():
        return {}
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not (isinstance(record, dict) and record.get("kind") == _KIND
            and isinstance(record.get("pid"), int) and isinstance(record.get("host"), str)):
        return None
    return record


def _holder(record):
    if not record:
        return "another process"
    return f"pid {record['pid']} on host {record['host']} since {record.get('started', '?')}"


class FileLock:
    """Exclusive lock file `path`; `what` names what it guards in messages ("--decode_to_file
    out.de"). acquire() raises UserError when another live writer holds it."""

    def __init__(self, path, what):
        self.path, self.what = path, what
        self._descriptor = None

    def acquire(self):
        for _ in range(8):  # a holder that removes its file between our open and flock: retry
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as error:
                raise UserError(f"cannot write {self.what}: its lock {self.path} cannot be "
                                f"created ({error.strerror})") from None
            try:
                if self._take(descriptor):
                    self._descriptor = descriptor
                    return self
            except BaseException:
                os.close(descriptor)
                raise
            os.close(descriptor)
        raise UserError(f"{self.path}: cannot take the lock (it keeps changing); is another "
                        f"run starting on {self.what}?")

    def _take(self, descriptor):
        """True when `descriptor` is now this process's lock on the file at self.path."""
        flocked = True
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UserError(f"{self.what} is being written by another run "
                            f"({_holder(_parse(_read(descriptor)))}); wait for it or stop it "
                            f"(its lock: {self.path})") from None
        except OSError as error:
            if error.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
            flocked = False  # a file system without flock: the record alone decides
        try:
            if os.fstat(descriptor).st_ino != os.stat(self.path).st_ino:
                return False
        except FileNotFoundError:
            return False
        record = _parse(_read(descriptor))
        if record is None:
            raise UserError(f"{self.path} exists and is not a t2t_lite lock; move it away to "
                            f"write {self.what}")
        if record:
            self._check_stale(record, flocked)
        os.ftruncate(descriptor, 0)
        os.lseek(descriptor, 0, os.SEEK_SET)
        os.write(descriptor, json.dumps({
            "kind": _KIND, "pid": os.getpid(), "host": socket.gethostname(),
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }).encode() + b"\n")
        return True

    def _check_stale(self, record, flocked):
        """UserError unless the recorded holder is provably gone; says so when taking over."""
        pid, host = record["pid"], record["host"]
        if host != socket.gethostname():
            raise UserError(f"{self.what} has a lock from {_holder(record)}, another machine "
                            f"that cannot be checked from here; if that run has ended, remove "
                            f"{self.path}")
        # Where flock works, a free lock means its holder has exited, whatever runs under its
        # pid now (pids are reused, in containers soon); the pid decides only without flock.
        if not flocked and pid != os.getpid() and _alive(pid):
            raise UserError(f"{self.what} is being written by another run ({_holder(record)}); "
                            f"wait for it or stop it (its lock: {self.path})")
        print(f"taking over the lock {self.path} of a run that has ended ({_holder(record)})",
              file=sys.stderr, flush=True)

    def release(self):
        """Removes the lock file (while still holding it, so nobody takes a file about to go)."""
        if self._descriptor is None:
            return
        try:
            if os.stat(self.path).st_ino == os.fstat(self._descriptor).st_ino:
                os.remove(self.path)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._descriptor)
            self._descriptor = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
