"""The exit status of every t2t_lite tool: one per kind of failure, the table of
docs/troubleshooting.md ("Exit statuses"; tests/test_exit_status.py keeps the two equal).

Scripts, cron and batch schedulers branch on these: 1 is for the user to fix, 120 for the disk,
143 for a scheduler to requeue. The signal statuses are 128 + the signal's number, what a shell
reports for a process the signal ended, and what Kubernetes and Slurm record.
"""
import signal

OK = 0
USER_ERROR = 1  # a bad flag value, a missing or malformed file, a refused output: one line
USAGE = 2  # a flag the tool does not have, or one it cannot parse (a bad number)
WRITE_FAILED = 120  # a write failed for good (full disk, quota, EIO, read-only): Python's own
INTERRUPTED = 128 + signal.SIGINT  # 130: Ctrl-C; the trainer saved first
KILLED = 128 + signal.SIGKILL  # 137: killed by the kernel (out of memory) or kill -9; never set
PIPE_CLOSED = 128 + signal.SIGPIPE  # 141: the reader of the output went away (`| head`), quietly
TERMINATED = 128 + signal.SIGTERM  # 143: SIGTERM; the trainer saved first (schedulers requeue)

# (status, what it means), in the order of docs/troubleshooting.md's table.
TABLE = (
    (OK, "done"),
    (USER_ERROR, "a mistake the user can fix (a bad flag value, a missing or malformed file, an "
                 "output that would destroy something, a run that cannot resume, a cluster "
                 "worker lost or never joined): one `error:` line"),
    (USAGE, "a flag the tool does not have, or a value it cannot parse"),
    (WRITE_FAILED, "a write failed for good: a full disk, a quota, an I/O error, a read-only "
                   "file system, /dev/full; what was complete is kept"),
    (INTERRUPTED, "SIGINT (Ctrl-C): the trainer saved a checkpoint first"),
    (KILLED, "SIGKILL: the kernel ended it (out of memory) or `kill -9`; never the tool's own"),
    (PIPE_CLOSED, "the program reading the output stopped first (`... | head -1`); no message"),
    (TERMINATED, "SIGTERM (a scheduler's preemption): the trainer saved a checkpoint first"),
)


def for_signal(signum):
    """The status a tool stopped by `signum` exits with."""
    return 128 + int(signum)
