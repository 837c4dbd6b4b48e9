"""Drops TensorFlow's start-up noise from a stream of stderr lines; everything else passes.

`is_noise` decides line by line. Run as a script (`python stderr_filter.py`), it copies stdin to
stdout without the noise: the tools start it as a separate process behind their stderr, so that a
native crash of the tool (abort, segfault) cannot take the last lines, which matter most, with it.
Imports nothing from t2t_lite: the filter process starts in milliseconds.
"""
import re
import signal
import sys

# glog/absl-style lines: "I0000 00:00:1796056222.613050    5086 port.cc:153] ..." (C++) and
# "I1130 16:30:27.159414 140406283434880 problem.py:173] ..." (absl Python).
_LOG_LINE = re.compile(rb"^([IWEF])\d{4} [\d:.]+\s+\d+ (\S+?):\d+\] (.*)")
_HARMLESS_ERRORS = (b"cuInit", b"cuda", b"CUDA", b"TensorRT")
_NOISE_PREFIXES = (b"WARNING: All log messages before absl::InitializeLog()",
                   b"To enable the following instructions:")


def is_noise(line):
    """True for a stderr line a user need not see at the default verbosity."""
    if line.startswith(_NOISE_PREFIXES):
        return True
    match = _LOG_LINE.match(line)
    if not match:
        return False
    level, source, message = match.groups()
    if source.endswith(b".py"):
        return False  # absl logging from Python: t2t_lite's own reports (TF's INFO is off)
    if level in (b"I", b"W"):
        return True
    return any(word in message for word in _HARMLESS_ERRORS)


def copy_without_noise(source, sink):
    for line in source:
        if not is_noise(line):
            sink.write(line)
            sink.flush()


if __name__ == "__main__":
    # Ctrl-C is for the tool: the filter forwards until the tool's last write end closes.
    # (Started with python -I: nothing beside this file can shadow the standard library.)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    copy_without_noise(sys.stdin.buffer, sys.stdout.buffer)
