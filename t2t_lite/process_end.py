"""Ending a process at once (os._exit) without losing what it printed: the tools' exit after
their work (cli) and a cluster worker's (training/preemption) both end here.

A failed write is a failed run: when the output cannot be written (a full disk, /dev/full, EIO,
a pipe whose reader has gone), the process says so in one `error:` line on stderr (a closed pipe
stays quiet, as cat does) and never exits 0: it exits with WRITE_FAILED, 120, what Python exits
with when its own final flush fails (a closed pipe: PIPE_CLOSED, 141), unless the tool had
already failed with a status of its own. The statuses are exit_status.py's table.
"""
import errno
import os
import re
import sys

from t2t_lite import exit_status
from t2t_lite.errors import UserError

WRITE_FAILED = exit_status.WRITE_FAILED

# What a failed write of data raises (reads and opens of missing files raise other errnos): the
# disk or quota is full, the file is too large for it, the device failed, it is read-only.
WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS,
                          errno.EPIPE})


_WRITE_FAILURE_TEXTS = tuple(os.strerror(number)
                             for number in sorted(WRITE_ERRNOS - {errno.EPIPE}))


class WriteFailed(UserError):
    """A write that failed for good (a full disk, a quota, EIO, a read-only file system), said in
    one line that names the file and what was kept; the tools exit WRITE_FAILED."""


def is_write_failure(error):
    """True for an OSError that says the data could not be written (not a bug, not a user's
    missing file): the tools end it in one line instead of a traceback."""
    return isinstance(error, OSError) and error.errno in WRITE_ERRNOS


def write_failure_reason(error):
    """Why `error` is a failed write ("No space left on device"), or None when it is not one:
    an OSError of WRITE_ERRNOS, or an error of TensorFlow's or SentencePiece's that carries such
    an OSError's text (their C++ file writers report errno as text)."""
    if isinstance(error, OSError):
        return (error.strerror or os.strerror(error.errno)) if is_write_failure(error) else None
    text = str(error)
    return next((reason for reason in _WRITE_FAILURE_TEXTS if reason in text), None)


def failed_file(error):
    """The file a failed write names: an OSError's file name, else the path before the reason
    in a TensorFlow message ("{{function_node ...}} /m/ckpt-4_temp/part-0...; No space ...")."""
    if getattr(error, "filename", None):
        return error.filename
    match = re.search(r"(/[^\s;]+)[;:,]? (?:%s)" % "|".join(map(re.escape, _WRITE_FAILURE_TEXTS)),
                      str(error))
    if not match:
        return None
    # A checkpoint's save writes M/ckpt-N_temp/part-...: the checkpoint is what was not written.
    return re.sub(r"_temp/part-[^/]*$", "", match.group(1))


def write_failed(error, what=None, kept=""):
    """The WriteFailed for `error` (write_failure_reason's kind): `cannot write WHAT: REASON`,
    then `kept` (what is still there, what a re-run does). WHAT defaults to the file the error
    names, else "the output"."""
    what = what or failed_file(error) or "the output"
    reason = write_failure_reason(error) or error
    return WriteFailed(f"cannot write {what}: {reason}{'; ' + kept if kept else ''}")


def describe(error, what=None):
    """The one line for a failed write: `cannot write WHAT: No space left on device` (as
    write_failed says it)."""
    return str(write_failed(error, what))


def say(line):
    """Writes `line` to stderr's descriptor directly: no buffer that could fail later; a stderr
    that cannot be written either is left as it is."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    try:
        os.write(2, (line + "\n").encode("utf-8", "replace"))
    except OSError:
        pass


def report_write_failure(error, what=None):
    """The `error:` line for a failed write (none for a pipe whose reader has gone), and the
    status to exit with (WRITE_FAILED; PIPE_CLOSED for the pipe). What stdout still buffers is
    dropped when stdout is what failed, so that the final flush does not fail (and say so)
    twice."""
    closed = isinstance(error, BrokenPipeError)
    if not closed:
        say(f"error: {describe(error, what)}")
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except (OSError, ValueError):
        discard_stdout()
    return exit_status.PIPE_CLOSED if closed else WRITE_FAILED


def discard_stdout():
    """Points descriptor 1 at /dev/null, so what stdout still buffers goes nowhere, quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def flush_output(status):
    """Flushes stdout, then stderr; returns the status to exit with: `status`, or WRITE_FAILED in
    place of a 0 when a flush failed (with one `error:` line for stdout's; a closed pipe's:
    PIPE_CLOSED, quietly)."""
    try:
        if sys.stdout is not None:  # None where the descriptor was closed
            sys.stdout.flush()
    except ValueError:  # closed by the tool itself
        pass
    except BrokenPipeError:
        status = status or exit_status.PIPE_CLOSED
        discard_stdout()
    except OSError as error:
        status = status or WRITE_FAILED
        say(f"error: {describe(error, 'the output (stdout)')}")
        discard_stdout()
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except ValueError:
        pass
    except OSError:
        status = status or WRITE_FAILED
    return status


def end_now(status):
    """Flushes stdout and stderr, then ends the process with `status` (WRITE_FAILED in place of
    0 when a flush failed), running nothing else (no atexit functions, no waiting for threads,
    no interpreter teardown): the caller has done what must run first."""
    os._exit(flush_output(status))
