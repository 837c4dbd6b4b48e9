"""A library call in a child process of its own, for work that must not share the caller's
process: a Table 3 row's training and evaluation (a crash or an out-of-memory kill ends the row,
not the table; TensorFlow's state and the GPU's memory leave with the child).

    result = isolated.call(train, TrainOptions(...), prefix="[base]", echo=print)

`function` is a module-level function of one dataclass argument; `options` is that dataclass.
The child gets the options as JSON (dataclasses.asdict: a field holding dataclasses arrives as
their values, for the options' class to build back), runs `function(options)` and writes what it
returns (a dataclass or JSON values) as JSON; `call` returns those values. The child's output is
streamed line by line with `prefix`, TensorFlow's start-up noise dropped. A UserError in the
child, or the child dying, raises Failed.

`stream` runs any command the same way (the tools a caller runs as a user would).
"""
import dataclasses
import importlib
import json
import os
import subprocess
import sys
import tempfile

from t2t_lite import atomic, stderr_filter
from t2t_lite.errors import UserError

TAIL_LINES = 40


class Failed(Exception):
    """A child that ended without a result: its UserError's text, or its exit status."""

    def __init__(self, returncode, error, tail):
        self.returncode, self.error, self.tail = returncode, error, tail
        super().__init__(error or f"exit {returncode}")

    def reason(self, what):
        """"<what>: <why>": the child's error, else how it ended and its last line."""
        if self.error:
            return f"{what}: {self.error}"
        if self.returncode < 0:
            how = f"killed by signal {-self.returncode}" + (
                " (out of memory?)" if self.returncode == -9 else "")
        else:
            how = f"exit {self.returncode}"
        last = next((line for line in reversed(self.tail) if line.strip()), "")
        return f"{what}: {how}" + (f": {last.strip()[:300]}" if last else "")


def call(function, options, prefix, echo):
    """`function(options)` in a child process; its result's JSON values (Failed if none)."""
    handle, result_path = tempfile.mkstemp(prefix="t2t_lite_call_", suffix=".json")
    os.close(handle)
    os.remove(result_path)  # the child writes it (atomically) only when the call returns
    request = {"function": _name(function), "options_type": _name(type(options)),
               "options": dataclasses.asdict(options), "result": result_path}
    try:
        returncode, tail = stream([sys.executable, "-m", __name__, json.dumps(request)],
                                  prefix, echo)
        outcome = _read(result_path)
    finally:
        if os.path.exists(result_path):
            os.remove(result_path)
    if returncode or outcome is None or "error" in outcome:
        raise Failed(returncode or 1, (outcome or {}).get("error"), tail)
    return outcome["value"]


def stream(command, prefix, echo, merge_stderr=True):
    """Runs `command`, echoing its output lines with `prefix` (stderr merged in unless not
    `merge_stderr`: then it goes straight to this process's stderr); (exit status, last lines)."""
    tail = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT if merge_stderr else None, text=True,
                               bufsize=1, errors="replace")
    try:
        for line in process.stdout:
            if stderr_filter.is_noise(line.encode("utf-8")):
                continue
            tail = (tail + [line.rstrip("\n")])[-TAIL_LINES:]
            echo(f"{prefix} {line.rstrip()}" if prefix else line.rstrip("\n"), flush=True)
        process.wait()
    finally:
        if process.poll() is None:  # interrupted: the child must not outlive its caller
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()
    return process.returncode, tail


def _name(obj):
    return f"{obj.__module__}:{obj.__qualname__}"


def _resolve(name):
    module, _, qualname = name.partition(":")
    target = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    return target


def _read(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _child(request):
    """The child's side: the call, its result or its UserError as JSON."""
    request = json.loads(request)
    options = _resolve(request["options_type"])(**request["options"])
    try:
        value = _resolve(request["function"])(options)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)  # as a tool says it
        atomic.write_json(request["result"], {"error": str(error)})
        sys.exit(1)
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    atomic.write_json(request["result"], {"value": value})


if __name__ == "__main__":
    _child(sys.argv[1])
