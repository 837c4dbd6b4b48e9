"""One writer per file: an exclusive lock file beside what is written.

The lock file records its holder (pid, host, start time), written and fsync'd when the lock is
taken; the record names the holder in the message a second writer gets. How a lock holds depends
on what the file system's flock can prove:

- flock works and is seen by every machine that can reach the file (a local file system; NFS
  with its locks passed to the server): the lock is an fcntl.flock on the file, which the OS drops
  when its holder exits, even after kill -9. So a lock file that nobody flocks is stale whatever
  it holds: a record naming another host (a pod's hostname changes on every restart), an empty
  file, or the NUL bytes a power loss can leave. It is taken over, with one line on stderr.
- flock fails (ENOLCK, EOPNOTSUPP, ENOSYS), or its locks stay on one machine (NFS mounted
  `nolock` or `local_lock=all|flock`, SMB/CIFS, FUSE, 9p, ...): the lock file's existence is the
  lock. It is created with O_CREAT|O_EXCL, so of two runs started together one creates it and
  the other finds it. Such a lock is stale only when it names this host and its holder is gone:
  its pid no longer runs, or, where flock works on this machine, nobody here flocks it. "This
  host" is the host name and also the kernel's boot id (and, for the pid, the pid namespace),
  which the record holds too: Kubernetes gives the pods of an Indexed Job's index one host name,
  and a replacement pod on another node may start while the old one still saves in its grace
  period. One naming another host, or this host name on another machine, cannot be checked from
  here: a lock with `wait_seconds` (the trainer's) waits that long for its holder to release it
  (an ending run removes its lock file), then, like every other lock, it is left for the user to
  remove; so is an empty one (a run may be creating it). A stale lock is renamed away before it
  is replaced, so of two runs taking it over at once only one wins.

A file at the lock's path that is not such a record is someone else's and is never touched.

A lock file kept between runs (the trainer's, where flock proves its holders gone) is put back as
it was found, its record's bytes and its modification time, when the lock is released: a re-run
that has nothing to do leaves it, like every other file of the model_dir, as it was. While held
it names its holder.
"""
import datetime
import errno
import fcntl
import json
import os
import re
import socket
import sys
import time

from t2t_lite import process_end
from t2t_lite.errors import UserError

LOCK_SUFFIX = ".lock"
_KIND = "t2t_lite lock"
_NO_FLOCK = (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS)
_TRIES = 8
_EMPTY = "empty"  # _take's answer for an empty record it cannot judge yet
_RETRY = "retry"  # _check_stale's answer when the lock it waited for has gone

# The kernel's id since boot: the same for every container of one machine, another on any other.
BOOT_ID = "/proc/sys/kernel/random/boot_id"

# Where the mounts are listed (a test points it at a file of its own).
MOUNTINFO = "/proc/self/mountinfo"
# File systems whose flocks other machines may not see (NFS is judged by its mount options).
_SHARED_WITHOUT_SHARED_FLOCK = frozenset({
    "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "glusterfs", "lustre", "beegfs", "ncpfs",
    "coda", "fuse"})


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
    """The holder record of a lock file's bytes; {} for an empty or NUL-filled file (never
    written, or its record lost in a power cut); None if it is not a t2t_lite lock."""
    if not data.strip(b"\0 \t\r\n"):
        return {}
    try:
        record = json.loads(data)
    except ValueError:
        return None
    if not (isinstance(record, dict) and record.get("kind") == _KIND
            and isinstance(record.get("pid"), int) and isinstance(record.get("host"), str)):
        return None
    return record


def this_machine():
    """What tells this machine and this process's pid namespace apart from others of the same
    host name: {"boot": boot id, "pid_ns": the pid namespace}; a value is None where unknown."""
    try:
        with open(BOOT_ID, encoding="ascii", errors="replace") as f:
            boot = f.read().strip() or None
    except OSError:
        boot = None
    try:
        pid_ns = os.readlink("/proc/self/ns/pid")
    except OSError:
        pid_ns = None
    return {"boot": boot, "pid_ns": pid_ns}


def _differs(record, here, key):
    """Whether the record was written where `key` (boot, pid_ns) had another value; a record
    without it (written before it was recorded) does not say."""
    return record.get(key) is not None and here[key] is not None and record[key] != here[key]


def _holder(record):
    if not record:
        return "another process"
    if record.get("host") is None:  # a record without a host: an old trainer's "pid N"
        return f"pid {record['pid']}"
    return f"pid {record['pid']} on host {record['host']} since {record.get('started', '?')}"


def _unescape(field):
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def mount_of(path, mountinfo):
    """(file system type, its options) of the mount holding `path` (absolute, links resolved),
    from the text of /proc/self/mountinfo; None when no mount holds it."""
    found, longest = None, -1
    for line in mountinfo.splitlines():
        left, separator, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not separator or len(fields) < 5 or not tail:
            continue
        mount = _unescape(fields[4])
        inside = (mount == "/" or path == mount
                  or path.startswith(mount.rstrip("/") + "/"))
        if inside and len(mount) >= longest:  # the longest; of equals, the last mounted
            found, longest = (tail[0], tail[2] if len(tail) > 2 else ""), len(mount)
    return found


def flock_is_shared(fstype, options):
    """Whether a flock on this file system is seen by every machine that can reach the file."""
    if fstype in ("nfs", "nfs4"):
        options = options.split(",")
        return not ("nolock" in options or "local_lock=all" in options
                    or "local_lock=flock" in options)
    return fstype.split(".")[0] not in _SHARED_WITHOUT_SHARED_FLOCK


def _flock_proves_gone(path):
    """Whether a free flock on `path` proves that its holder, on whatever host, has exited."""
    try:
        with open(MOUNTINFO, encoding="utf-8", errors="replace") as f:
            mountinfo = f.read()
    except OSError:
        return False  # unknown: keep to what this host can check
    mount = mount_of(os.path.realpath(os.path.dirname(os.path.abspath(path))), mountinfo)
    return mount is not None and flock_is_shared(*mount)


class FileLock:
    """Exclusive lock file `path`; `what` names what it guards in messages ("--decode_to_file
    out.de"). acquire() raises UserError when another live writer holds it. release() removes
    the file, unless the class keeps it (_keep) where flock proves its holders gone."""

    _keep = False
    wait_seconds = 0  # how long to wait for a holder that cannot be checked from here

    def __init__(self, path, what):
        self.path, self.what = path, what
        self._waited = False
        self._descriptor = None
        self._flock_proves = False
        self._found = None  # a kept file's (bytes, atime_ns, mtime_ns) as taken over

    def acquire(self):
        empty = False
        for attempt in range(_TRIES):
            if empty:  # the run creating it writes its record next
                time.sleep(0.02 * attempt)
            created = True
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                created = False
                try:
                    descriptor = os.open(self.path, os.O_RDWR)
                except FileNotFoundError:  # its holder removed it meanwhile: again
                    continue
                except OSError as error:
                    raise self._cannot_create(error) from None
            except OSError as error:
                raise self._cannot_create(error) from None
            try:
                taken = self._take(descriptor, created)
            except BaseException as error:
                failed = isinstance(error, OSError) and process_end.is_write_failure(error)
                if failed and created:  # its record failed: an empty file would stop a re-run
                    self._remove_own(descriptor)
                os.close(descriptor)
                if failed:
                    raise process_end.write_failed(
                        error, f"the lock {self.path} of {self.what}",
                        "nothing was written") from None
                raise
            if taken is True:
                self._descriptor = descriptor
                return self
            os.close(descriptor)
            empty = taken == _EMPTY
        if empty:
            raise UserError(f"{self.path} is empty, and on this file system it cannot show "
                            f"whether a run is starting; if no run is writing {self.what}, "
                            f"remove it")
        raise self._keeps_changing()

    def _remove_own(self, descriptor):
        try:
            if os.stat(self.path).st_ino == os.fstat(descriptor).st_ino:
                os.remove(self.path)
        except OSError:
            pass

    def _cannot_create(self, error):
        return UserError(f"cannot write {self.what}: its lock {self.path} cannot be "
                         f"created ({error.strerror})")

    def _keeps_changing(self):
        return UserError(f"{self.path}: cannot take the lock (it keeps changing); is another "
                         f"run starting on {self.what}?")

    def _busy(self, record):
        """The error for a live holder (`record` may be {}: unknown)."""
        return UserError(f"{self.what} is being written by another run ({_holder(record)}); "
                         f"wait for it or stop it (its lock: {self.path})")

    def _parse(self, data):
        return _parse(data)

    def _take(self, descriptor, created):
        """True when `descriptor` is now this process's lock on the file at self.path; False to
        try again; _EMPTY for an empty record that may still be being written."""
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            flocked = True
        except BlockingIOError:
            raise self._busy(self._parse(_read(descriptor)) or {}) from None
        except OSError as error:
            if error.errno not in _NO_FLOCK:
                raise
            flocked = False  # a file system without flock: O_EXCL and the record decide
        self._flock_proves = flocked and _flock_proves_gone(self.path)
        try:
            mine, there = os.fstat(descriptor), os.stat(self.path)
        except FileNotFoundError:
            return False
        if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino):
            return False
        if not created:
            data = _read(descriptor)
            record = self._parse(data)
            if record is None:
                raise UserError(f"{self.path} exists and is not a t2t_lite lock; move it away "
                                f"to write {self.what}")
            if not record and not self._flock_proves:
                return _EMPTY
            if record and self._check_stale(record, flocked) == _RETRY:
                return False
            if not self._flock_proves:  # the file is the lock: replace it, exclusively
                return self._move_aside(descriptor, record)
            self._taking_over(record)
            if self._keep and record.get("kind") == _KIND:  # put back as found, on release
                self._found = (data, mine.st_atime_ns, mine.st_mtime_ns)
        self._write(descriptor)
        return True

    def _check_stale(self, record, flocked):
        """None when the recorded holder is provably gone; _RETRY when the lock file went while
        waiting for a holder that cannot be checked; else UserError."""
        if self._flock_proves or record.get("host") is None:
            # Nobody flocks it: its holder has exited, whatever host or pid it names (pids are
            # reused, in containers soon). A record without a host is an old trainer's, which
            # only ever ran under flock.
            return None
        here = this_machine()
        if record["host"] != socket.gethostname():
            return self._unverifiable(record, "another machine")
        if _differs(record, here, "boot"):  # a local flock or pid says nothing of it
            return self._unverifiable(record, "another machine of this host name (a "
                                              "Kubernetes pod of the same index on another node?)")
        if not flocked:
            if _differs(record, here, "pid_ns"):
                return self._unverifiable(record, "another container of this machine")
            if record["pid"] != os.getpid() and _alive(record["pid"]):
                raise self._busy(record)
        return None

    def _unverifiable(self, record, where):
        """_RETRY when the lock file goes (or is replaced) within wait_seconds (once), else the
        UserError that leaves it to the user."""
        waited = ""
        if self.wait_seconds > 0 and not self._waited:
            self._waited = True
            print(f"waiting up to {self.wait_seconds:g} s for the run holding {self.path} "
                  f"({_holder(record)}, {where}) to end", file=sys.stderr, flush=True)
            if self._released_within(self.wait_seconds):
                return _RETRY
            waited = f" (waited {self.wait_seconds:g} s)"
        raise UserError(f"{self.what} has a lock from {_holder(record)}, {where} that cannot be "
                        f"checked from here{waited}; if that run has ended, remove {self.path}")

    def _released_within(self, seconds):
        """Whether the lock file at self.path goes or is replaced within `seconds`."""
        try:
            before = os.stat(self.path)
        except FileNotFoundError:
            return True
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
            try:
                now = os.stat(self.path)
            except FileNotFoundError:
                return True
            if (now.st_ino, now.st_mtime_ns, now.st_size) != (
                    before.st_ino, before.st_mtime_ns, before.st_size):
                return True
        return False

    def _taking_over(self, record):
        if self._keep and self._flock_proves:
            return  # a kept lock file is the normal state between runs
        holder = _holder(record) if record else "its record is empty: never written, or lost"
        print(f"taking over the lock {self.path} of a run that has ended ({holder})",
              file=sys.stderr, flush=True)

    def _move_aside(self, descriptor, record):
        """Removes the stale lock file open at `descriptor` by renaming it to a name of this
        process's first, so that of two runs taking it over only one removes it; False (the
        caller creates the lock afresh)."""
        aside = f"{self.path}.stale.{socket.gethostname()}.{os.getpid()}"
        try:
            os.rename(self.path, aside)
        except FileNotFoundError:  # another run moved it first
            return False
        mine, moved = os.fstat(descriptor), os.stat(aside)
        if (mine.st_dev, mine.st_ino) == (moved.st_dev, moved.st_ino):
            os.remove(aside)
            self._taking_over(record)
            return False
        try:  # the lock another run has just created: put it back
            os.link(aside, self.path)
        except FileExistsError:
            os.remove(aside)
            raise self._keeps_changing() from None
        except OSError:  # no hard links here
            os.rename(aside, self.path)
            return False
        os.remove(aside)
        return False

    def _write(self, descriptor):
        data = json.dumps({
            "kind": _KIND, "pid": os.getpid(), "host": socket.gethostname(),
            "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            **this_machine(),
        }).encode() + b"\n"
        os.ftruncate(descriptor, 0)
        os.lseek(descriptor, 0, os.SEEK_SET)
        while data:
            data = data[os.write(descriptor, data):]
        os.fsync(descriptor)  # never a lock file of NUL bytes after a power cut

    def release(self):
        """Closes the lock; removes its file first (while still holding it, so nobody takes a
        file about to go) unless it is kept."""
        if self._descriptor is None:
            return
        try:
            if not (self._keep and self._flock_proves):
                if os.stat(self.path).st_ino == os.fstat(self._descriptor).st_ino:
                    os.remove(self.path)
            elif self._found is not None:
                self._put_back(*self._found)
        except FileNotFoundError:
            pass
        finally:
            os.close(self._descriptor)
            self._descriptor, self._found = None, None

    def _put_back(self, data, atime_ns, mtime_ns):
        """The kept file's bytes and times as they were found (written over in place, no
        truncation first: a full disk cannot leave it empty); left as it is if that fails."""
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(self._descriptor, data[written:], written)
            os.ftruncate(self._descriptor, len(data))
            os.utime(self._descriptor, ns=(atime_ns, mtime_ns))
            os.fsync(self._descriptor)
        except OSError:
            pass

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
