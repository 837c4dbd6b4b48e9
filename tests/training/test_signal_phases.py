"""preemption.Signals after the loop: a signal once the last checkpoint is written skips the
final evaluation (Interrupted), one at the end-of-run barrier ends the process at once with its
line, and a second SIGINT always does, with the model_dir lock's release (before_exit) run
first. The trainer end to end is in test_cluster_ends.py."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from t2t_lite.training import preemption


def test_a_signal_during_the_save_skips_the_final_evaluation():
    signals = preemption.Signals().install()
    try:
        signals.arm()
        os.kill(os.getpid(), signal.SIGTERM)  # during the end's save: only recorded
        time.sleep(0.1)
        with pytest.raises(preemption.Interrupted) as stop:
            signals.ending()
        assert stop.value.signum == signal.SIGTERM
    finally:
        signals.restore()


def test_a_signal_during_the_final_evaluation_interrupts_it_once():
    signals = preemption.Signals().install()
    try:
        signals.arm()
        signals.ending()
        with pytest.raises(preemption.Interrupted) as stop:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises at the next bytecode, well before this ends
        assert stop.value.signum == signal.SIGTERM
        os.kill(os.getpid(), signal.SIGTERM)  # a second one is only recorded
        time.sleep(0.1)
        assert signals.received == signal.SIGTERM
    finally:
        signals.restore()


CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from t2t_lite.training import preemption
    signals = preemption.Signals().install()
    signals.arm()
    preemption.before_exit(lambda: open(sys.argv[2], "w").write("released"))
    if sys.argv[1] == "waiting":
        signals.waiting(lambda signum: f"{preemption.signal_name(signum)}: saved M/ckpt-7")
        os.kill(os.getpid(), signal.SIGTERM)
    else:
        os.kill(os.getpid(), signal.SIGINT)
        while not signals._announced:  # the watcher has seen it: two are never merged into one
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)
    time.sleep(60)
    print("still here")
""")


@pytest.mark.slow  # a child process that imports TensorFlow
@pytest.mark.parametrize("phase,status,line", [
    ("training", 130, "SIGINT received: saving after the step in progress, then exiting (Ctrl-C "
                      "again stops at once, without saving)\nSIGINT again: stopping at once"),
    ("waiting", 143, "SIGTERM: saved M/ckpt-7"),
])
def test_what_cannot_wait_ends_the_process_at_once_after_before_exit(tmp_path, phase, status,
                                                                    line):
    released = tmp_path / "released"
    start = time.monotonic()
    child = subprocess.run([sys.executable, "-c", CHILD, phase, str(released)],
                           capture_output=True, text=True, timeout=50)
    assert child.returncode == status, child.stderr[-2000:]
    assert line in child.stdout + child.stderr and "still here" not in child.stdout
    assert released.read_text() == "released" and time.monotonic() - start < 30
