"""Ending a process at once (os._exit) without losing what it printed: the tools' exit after
their work (cli) and a cluster worker's (training/preemption) both end here."""
import os
import sys


def end_now(status):
    """Flushes stdout and stderr, then ends the process with `status`, running nothing else (no
    atexit functions, no waiting for threads, no interpreter teardown): the caller has done what
    must run first."""
    for stream in (sys.stdout, sys.stderr):  # None where the descriptor was closed
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)
