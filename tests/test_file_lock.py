"""file_lock.FileLock and the trainer's lock (model_dir.files.TrainerLock), through the real calls.

Where flock works and every machine sees it (the tests pin that with a mountinfo of their own), a
free flock proves the holder gone: lock files naming another host, empty ones and ones of NUL
bytes are taken over; a held flock refuses. Where flock fails (fcntl.flock raising ENOLCK, as
on a file system without it, in this process or in helper processes) the lock is the file,
created with O_EXCL: of two runs started together one wins, a live same-host pid refuses, a dead
one is stale. Processes are coordinated through pipes: the tests wait for states, never sleep.
"""
import errno
import fcntl
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from t2t_lite import file_lock
from t2t_lite.errors import UserError
from t2t_lite.model_dir import files

HOST = socket.gethostname()
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _mountinfo(tmp_path, fstype, options="rw"):
    path = tmp_path / f"mountinfo.{fstype}"
    path.write_text(f"1 0 8:1 / / rw,relatime shared:1 - {fstype} /dev/x {options}\n")
    return str(path)


@pytest.fixture
def local(tmp_path, monkeypatch):
    """A file system whose flocks every machine sees."""
    monkeypatch.setattr(file_lock, "MOUNTINFO", _mountinfo(tmp_path, "ext4"))


@pytest.fixture
def nolock_nfs(tmp_path, monkeypatch):
    """NFS mounted nolock: flock works, but only on this machine."""
    monkeypatch.setattr(file_lock, "MOUNTINFO",
                        _mountinfo(tmp_path, "nfs", "rw,vers=3,nolock,local_lock=all,addr=1"))


@pytest.fixture
def no_flock(monkeypatch):
    """A file system without flock."""
    def flock(*args):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    monkeypatch.setattr(fcntl, "flock", flock)


def _record(pid, host=HOST):
    return json.dumps({"kind": "t2t_lite lock", "pid": pid, "host": host, "started": "x"})


def _dead_pid():
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def _held(path):
    """Another open file description that flocks `path` (as another process's would)."""
    descriptor = os.open(path, os.O_RDWR)
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return descriptor


def _own_record(path):
    record = json.loads(path.read_text())
    return record["pid"] == os.getpid() and record["host"] == HOST


@pytest.mark.parametrize("content", [
    _record(4242, "pod-before-restart").encode(), b"", b"\0" * 96, b"\0" * 4096 + b"\n"],
    ids=["another host", "empty", "NUL bytes", "NUL bytes and a newline"])
def test_a_free_lock_is_taken_over_whatever_it_names(tmp_path, local, capsys, content):
    lock = tmp_path / "out.lock"
    lock.write_bytes(content)
    with file_lock.FileLock(str(lock), "--decode_to_file out"):
        assert _own_record(lock)
    assert not lock.exists()
    line, = capsys.readouterr().err.splitlines()
    assert line.startswith(f"taking over the lock {lock} of a run that has ended (")
    assert ("pid 4242 on host pod-before-restart" in line) == bool(content.strip(b"\0\n"))


@pytest.mark.parametrize("content", [_record(4242, "gpu2").encode(), b"\0" * 64],
                         ids=["another host", "NUL bytes"])
def test_a_held_lock_refuses_whatever_it_names(tmp_path, local, content):
    lock = tmp_path / "out.lock"
    lock.write_bytes(content)
    holder = _held(lock)
    try:
        with pytest.raises(UserError) as refused:
            file_lock.FileLock(str(lock), "--decode_to_file out").acquire()
    finally:
        os.close(holder)
    who = "pid 4242 on host gpu2 since x" if content.strip(b"\0") else "another process"
    assert str(refused.value) == (f"--decode_to_file out is being written by another run "
                                  f"({who}); wait for it or stop it (its lock: {lock})")
    assert lock.read_bytes() == content


def test_the_record_is_fsynced(tmp_path, local, monkeypatch):
    synced = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(os.fstat(fd).st_ino), real(fd)))
    lock = tmp_path / "out.lock"
    with file_lock.FileLock(str(lock), "out"):
        assert synced == [os.stat(lock).st_ino] and _own_record(lock)


def test_a_file_that_is_not_a_lock_is_never_touched(tmp_path, local):
    lock = tmp_path / "out.lock"
    lock.write_bytes(b"my notes\0\n")
    with pytest.raises(UserError, match="exists and is not a t2t_lite lock; move it away"):
        file_lock.FileLock(str(lock), "out").acquire()
    assert lock.read_bytes() == b"my notes\0\n"


def test_where_flocks_stay_on_one_machine_another_host_is_left_to_the_user(tmp_path,
                                                                          nolock_nfs, capsys):
    lock = tmp_path / "out.lock"
    lock.write_text(_record(4242, "gpu2"))
    with pytest.raises(UserError) as refused:
        file_lock.FileLock(str(lock), "--decode_to_file out").acquire()
    assert str(refused.value) == (
        f"--decode_to_file out has a lock from pid 4242 on host gpu2 since x, another machine "
        f"that cannot be checked from here; if that run has ended, remove {lock}")
    # This host's own lock nobody flocks here is stale: renamed aside, created afresh.
    lock.write_text(_record(4242))
    with file_lock.FileLock(str(lock), "out"):
        assert _own_record(lock) and sorted(os.listdir(tmp_path)) == ["mountinfo.nfs", "out.lock"]
    assert "taking over the lock" in capsys.readouterr().err and not lock.exists()


def _record_elsewhere(pid, **machine):
    """A record naming this host name, written on another machine (`boot`) or in another
    container (`pid_ns`) of this one."""
    return json.dumps({"kind": "t2t_lite lock", "pid": pid, "host": HOST, "started": "x",
                       **{**file_lock.this_machine(), **machine}})


def test_the_record_names_the_machine_beside_the_host_name(tmp_path, local):
    lock = tmp_path / "out.lock"
    with file_lock.FileLock(str(lock), "out"):
        record = json.loads(lock.read_text())
    assert {key: record[key] for key in ("boot", "pid_ns")} == file_lock.this_machine()


def test_this_host_name_on_another_machine_is_not_this_machine(tmp_path, nolock_nfs):
    """Kubernetes gives the pods of one Indexed Job index one host name: a replacement pod on
    another node must not take the lock of the old pod still saving in its grace period, free
    as its flock is here."""
    lock = tmp_path / "out.lock"
    lock.write_text(_record_elsewhere(os.getpid(), boot="another-boot-id"))
    with pytest.raises(UserError) as refused:
        file_lock.FileLock(str(lock), "--decode_to_file out").acquire()
    assert str(refused.value) == (
        f"--decode_to_file out has a lock from pid {os.getpid()} on host {HOST} since x, another "
        f"machine of this host name (a Kubernetes pod of the same index on another node?) that "
        f"cannot be checked from here; if that run has ended, remove {lock}")
    assert lock.read_text() == _record_elsewhere(os.getpid(), boot="another-boot-id")


def test_without_flock_a_pid_of_another_pid_namespace_is_not_judged(tmp_path, no_flock):
    lock = tmp_path / "out.lock"
    lock.write_text(_record_elsewhere(_dead_pid(), pid_ns="pid:[1]"))
    with pytest.raises(UserError, match="another container of this machine that cannot be "
                                        "checked from here"):
        file_lock.FileLock(str(lock), "out").acquire()


def test_the_trainer_waits_for_a_lock_it_cannot_check_to_be_released(tmp_path, nolock_nfs,
                                                                    monkeypatch, capsys):
    """The old pod ends within its grace period and removes its lock: the new one goes on."""
    import threading

    model_dir = tmp_path / "M"
    model_dir.mkdir()
    lock = model_dir / files.LOCK
    lock.write_text(_record_elsewhere(4242, boot="another-boot-id"))
    monkeypatch.setattr(files.TrainerLock, "wait_seconds", 30)
    timer = threading.Timer(1.0, lock.unlink)
    timer.start()
    try:
        with files.TrainerLock(str(model_dir)):
            assert _own_record(lock)
    finally:
        timer.cancel()
    assert "waiting up to 30 s for the run holding" in capsys.readouterr().err
    # One that stays is left to the user, saying how long it waited.
    lock.write_text(_record_elsewhere(4242, boot="another-boot-id"))
    monkeypatch.setattr(files.TrainerLock, "wait_seconds", 0.6)
    with pytest.raises(UserError, match=r"that cannot be checked from here \(waited 0.6 s\); "
                                        r"if that run has ended, remove"):
        files.TrainerLock(str(model_dir)).acquire()


@pytest.mark.parametrize("mounts,path,expected", [
    ("1 0 8:1 / / rw - ext4 /dev/a rw\n2 1 0:5 / /mnt/data rw - nfs4 srv:/x rw,local_lock=none\n",
     "/mnt/data/runs", ("nfs4", "rw,local_lock=none")),
    ("1 0 8:1 / / rw - ext4 /dev/a rw\n2 1 0:5 / /mnt/data rw - nfs4 srv:/x rw\n",
     "/mnt/database", ("ext4", "rw")),
    ("1 0 8:1 / / rw - ext4 /dev/a rw\n2 1 0:5 / /my\\040runs rw - fuse.sshfs h:/ rw\n",
     "/my runs/M", ("fuse.sshfs", "rw")),
    ("1 0 8:1 / / rw - ext4 /dev/a rw\n2 1 0:5 / /w rw - ext4 /dev/b rw\n"
     "3 1 0:6 / /w rw - cifs //s/w rw\n", "/w/out", ("cifs", "rw")),
])
def test_the_mount_of_a_path(mounts, path, expected):
    assert file_lock.mount_of(path, mounts) == expected


@pytest.mark.parametrize("fstype,options,shared", [
    ("ext4", "rw", True), ("xfs", "rw", True), ("overlay", "rw", True), ("tmpfs", "rw", True),
    ("nfs4", "rw,vers=4.2,local_lock=none", True), ("nfs", "rw,vers=3,nolock", False),
    ("nfs4", "rw,local_lock=flock", False), ("cifs", "rw", False), ("fuse.sshfs", "rw", False),
    ("9p", "rw", False),
])
def test_which_file_systems_share_their_flocks(fstype, options, shared):
    assert file_lock.flock_is_shared(fstype, options) == shared


# ---- without flock

HELPER = textwrap.dedent("""
    import errno, fcntl, os, sys
    from t2t_lite import file_lock
    from t2t_lite.errors import UserError

    def no_flock(*args):
        raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))
    fcntl.flock = no_flock
    pause = sys.argv[2]  # "take": before its first judgement; "aside": before moving one aside
    method = {"take": "_take", "aside": "_move_aside"}.get(pause)
    if method:
        real = getattr(file_lock.FileLock, method)
        def paused(self, descriptor, *args):
            setattr(file_lock.FileLock, method, real)
            created = args[0] if method == "_take" else None
            print(f"paused {created}", flush=True)
            sys.stdin.readline()
            return real(self, descriptor, *args)
        setattr(file_lock.FileLock, method, paused)
    try:
        lock = file_lock.FileLock(sys.argv[1], "out").acquire()
    except UserError as error:
        print(f"refused {error}", flush=True)
        sys.exit(1)
    print("held", flush=True)
    sys.stdin.readline()
    lock.release()
""")


def _helper(lock, pause="none"):
    return subprocess.Popen([sys.executable, "-c", HELPER, str(lock), pause], cwd=REPO,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def _say(process, line=""):
    process.stdin.write(line + "\n")
    process.stdin.flush()


def _end(process):
    _say(process)
    process.wait(timeout=60)


def test_without_flock_a_live_holder_refuses_and_a_dead_one_is_stale(tmp_path, no_flock,
                                                                      capsys):
    lock = tmp_path / "out.lock"
    first = _helper(lock)
    assert first.stdout.readline() == "held\n"
    with pytest.raises(UserError, match=rf"being written by another run \(pid {first.pid} on "
                                        rf"host {HOST} since"):
        file_lock.FileLock(str(lock), "out").acquire()
    _end(first)
    assert first.returncode == 0 and not lock.exists()

    lock.write_text(_record(_dead_pid()))
    with file_lock.FileLock(str(lock), "out"):
        assert _own_record(lock)
    assert "taking over the lock" in capsys.readouterr().err and not lock.exists()

    lock.write_text(_record(os.getppid()))  # alive
    with pytest.raises(UserError, match="being written by another run"):
        file_lock.FileLock(str(lock), "out").acquire()
    lock.write_text(_record(4242, "gpu2"))
    with pytest.raises(UserError, match="another machine that cannot be checked from here"):
        file_lock.FileLock(str(lock), "out").acquire()
    assert lock.read_text() == _record(4242, "gpu2")


@pytest.mark.parametrize("creator_first", [True, False])
def test_without_flock_two_runs_started_together_take_it_once(tmp_path, creator_first):
    """Both have opened the lock file before either judges it (the window where, with O_CREAT
    alone, both took it); then one goes on, then the other."""
    lock = tmp_path / "out.lock"
    runs = [_helper(lock, "take"), _helper(lock, "take")]
    paused = [run.stdout.readline() for run in runs]
    assert sorted(paused) == ["paused False\n", "paused True\n"]
    creator, other = runs if paused[0] == "paused True\n" else runs[::-1]
    first, second = (creator, other) if creator_first else (other, creator)
    _say(first)
    if creator_first:
        assert first.stdout.readline() == "held\n"
        _say(second)
        assert second.stdout.readline().startswith(
            f"refused out is being written by another run (pid {first.pid} on host {HOST}")
        assert second.wait(timeout=60) == 1
        _end(first)
    else:  # the creator has not written its record yet: the other cannot judge it, refuses
        assert first.stdout.readline() == (
            f"refused {lock} is empty, and on this file system it cannot show whether a run is "
            f"starting; if no run is writing out, remove it\n")
        assert first.wait(timeout=60) == 1
        _say(second)
        assert second.stdout.readline() == "held\n"
        _end(second)
    assert not lock.exists()


def test_without_flock_two_runs_taking_over_a_stale_lock_take_it_once(tmp_path):
    lock = tmp_path / "out.lock"
    lock.write_text(_record(_dead_pid()))
    runs = [_helper(lock, "aside"), _helper(lock, "aside")]
    assert [run.stdout.readline() for run in runs] == ["paused None\n"] * 2
    _say(runs[0])
    assert runs[0].stdout.readline() == "held\n"
    _say(runs[1])  # it moves aside the lock runs[0] has just made, puts it back, and refuses
    assert runs[1].stdout.readline().startswith(
        f"refused out is being written by another run (pid {runs[0].pid} on host {HOST}")
    assert runs[1].wait(timeout=60) == 1
    assert _record_pid(lock) == runs[0].pid and sorted(os.listdir(tmp_path)) == ["out.lock"]
    _end(runs[0])
    assert not lock.exists()


def _record_pid(lock):
    return json.loads(lock.read_text())["pid"]


# ---- the trainer's lock

def test_the_trainers_lock_is_kept_between_runs_and_taken_over_silently(tmp_path, local,
                                                                        capsys):
    model_dir = tmp_path / "M"
    model_dir.mkdir()
    lock = model_dir / files.LOCK
    with files.TrainerLock(str(model_dir)):
        assert _own_record(lock)
        with pytest.raises(UserError) as refused:
            files.TrainerLock(str(model_dir)).acquire()
    assert str(refused.value) == (f"{model_dir} is in use by another trainer (pid {os.getpid()}); "
                                  f"stop it or use another --model_dir")
    assert _own_record(lock)  # kept: the model_dir's listing stays as it was
    before = os.stat(model_dir).st_mtime_ns
    with files.TrainerLock(str(model_dir)):
        pass
    assert os.stat(model_dir).st_mtime_ns == before and capsys.readouterr().err == ""


def test_a_kept_lock_is_put_back_as_it_was_found_on_release(tmp_path, local):
    """A re-run that has nothing to do leaves M/.lock as it was: its bytes and its
    modification time (issue 53); while held, it names its holder."""
    model_dir = tmp_path / "M"
    model_dir.mkdir()
    lock = model_dir / files.LOCK
    lock.write_text(_record(4242, "pod-before-restart") + "\n")
    os.utime(lock, ns=(1_000_000_000, 2_000_000_000))
    with files.TrainerLock(str(model_dir)):
        assert _own_record(lock)
    assert lock.read_text() == _record(4242, "pod-before-restart") + "\n"
    assert os.stat(lock).st_mtime_ns == 2_000_000_000
    with files.TrainerLock(str(model_dir)):  # and again: the same file, taken over silently
        assert _own_record(lock)
    assert lock.read_text() == _record(4242, "pod-before-restart") + "\n"
    assert os.stat(lock).st_mtime_ns == 2_000_000_000


def test_an_old_trainers_lock_is_taken_over_when_free_and_refuses_when_held(tmp_path, local,
                                                                            capsys):
    model_dir = tmp_path / "M"
    model_dir.mkdir()
    lock = model_dir / files.LOCK
    lock.write_text("pid 4242\n")  # what a trainer before the fold wrote
    holder = _held(lock)
    try:
        with pytest.raises(UserError) as refused:
            files.TrainerLock(str(model_dir)).acquire()
    finally:
        os.close(holder)
    assert str(refused.value) == (f"{model_dir} is in use by another trainer (pid 4242); stop it "
                                  f"or use another --model_dir")
    assert lock.read_text() == "pid 4242\n"
    with files.TrainerLock(str(model_dir)):
        assert _own_record(lock)
    assert capsys.readouterr().err == ""
    # A decoder's lock never reads the old format: such a file is not its lock.
    (tmp_path / "out.lock").write_text("pid 4242\n")
    with pytest.raises(UserError, match="is not a t2t_lite lock"):
        file_lock.FileLock(str(tmp_path / "out.lock"), "out").acquire()


def test_without_flock_the_trainers_lock_is_the_file(tmp_path, no_flock, capsys):
    model_dir = tmp_path / "M"
    model_dir.mkdir()
    lock = model_dir / files.LOCK
    lock.write_text("pid 4242\n")  # an old trainer's, which ran under flock: gone
    with files.TrainerLock(str(model_dir)):
        assert _own_record(lock)
    assert not lock.exists()  # removed: a restarted pod elsewhere finds no lock
    assert "taking over the lock" in capsys.readouterr().err
    lock.write_text(_record(os.getppid()))
    with pytest.raises(UserError, match=rf"in use by another trainer \(pid {os.getppid()}\)"):
        files.TrainerLock(str(model_dir)).acquire()
