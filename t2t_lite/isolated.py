"""A library call in a child process of its own, for work that must not share the caller's
process: a Table 3 row's training and evaluation (a crash or an out-of-memory kill ends the row,
not the table; TensorFlow's state and the GPU's memory leave with the child).

    result = isolated.call(train, TrainOptions(...), prefix="[base]", echo=print)

`function` is a module-level function of one dataclass argument; `options` is that dataclass.
The child gets the options as JSON (dataclasses.asdict) and builds them back (`rebuild`: nested
dataclasses too, by the fields' type hints), runs `function(options)` and writes what it returns
(JSON values, dataclasses among them as theirs) as JSON; `call` builds the result back as `result_type`, by default
the function's return annotation (`-> TrainResult`), and returns the JSON values as they are
when there is neither. The child's output is streamed line by line with `prefix`, TensorFlow's
start-up noise dropped. A UserError in the child, or the child dying, raises Failed.

The child runs the code the caller runs: it is started with the caller's own sys.path (given
explicitly, before anything is imported) and never with its working directory on it, so a
source clone's `t2t_lite/` in the working directory cannot stand in for the installed package
the caller imported (`python -m` would put it first). If the caller dies without a word (kill
-9), the child is killed too (Linux): it must not outlive its caller, holding a model_dir's lock.

`stream` runs any command the same way (the tools a caller runs as a user would). While the
child runs (in the main thread), SIGTERM and SIGINT sent to the caller are passed to the child,
which has a process group of its own so that a terminal's Ctrl-C reaches it once, through the
caller. The caller waits for the child to do what it does with them (the trainer: save, then
exit 143), keeps echoing its output, and then stops as the signal asked: a SIGTERM ends it with
the child's exit status and one line on stderr; a SIGINT raises KeyboardInterrupt (the caller's
own handler, if it set one, runs then, and decides). A second SIGINT stops at once: the child is
killed and KeyboardInterrupt raised. A second SIGTERM is only noted (the save goes on). A signal
the caller ignores (SIG_IGN, as under `nohup ... &`) stays ignored.
"""
import collections.abc
import dataclasses
import importlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import types
import typing

from t2t_lite import atomic, exit_status, stderr_filter
from t2t_lite.errors import UserError

TAIL_LINES = 40
FORWARDED = (signal.SIGTERM, signal.SIGINT)

# The child's first lines: the caller's sys.path (argv[1] entries from argv[2]) before any import
# (`-P`, Python 3.11+, keeps the working directory off sys.path; on 3.10 `-c` puts it first only
# after site has run, and it is replaced here before the next import); then, on Linux, death with
# the caller (PR_SET_PDEATHSIG, checked against the caller's pid for a caller already gone).
_BOOTSTRAP = """\
import sys
count = int(sys.argv[1])
sys.path[:] = sys.argv[2:2 + count]
del sys.argv[1:2 + count]
from t2t_lite import isolated
isolated._die_with_parent(int(sys.argv[1]))
isolated._child(sys.argv[2])
"""


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


def call(function, options, prefix, echo, result_type=None):
    """`function(options)` in a child process; its result built back as `result_type` (default:
    `function`'s return annotation; neither: the JSON values). Failed if there is none."""
    handle, result_path = tempfile.mkstemp(prefix="t2t_lite_call_", suffix=".json")
    os.close(handle)
    os.remove(result_path)  # the child writes it (atomically) only when the call returns
    request = {"function": _name(function), "options_type": _name(type(options)),
               "options": dataclasses.asdict(options), "result": result_path}
    try:
        returncode, tail = stream(child_command(json.dumps(request)), prefix, echo,
                                  name=request["function"])
        outcome = _read(result_path)
    finally:
        if os.path.exists(result_path):
            os.remove(result_path)
    if returncode or outcome is None or "error" in outcome:
        raise Failed(returncode or 1, (outcome or {}).get("error"), tail)
    kind = result_type if result_type is not None else _return_type(function)
    return outcome["value"] if kind is None else rebuild(kind, outcome["value"])


def rebuild(kind, values):
    """`values` (what dataclasses.asdict gave, through JSON) built back as the type hint `kind`:
    a dataclass from its dict, field by field by the fields' own hints (nested dataclasses,
    Optional[...], lists, tuples and dicts of them); a value of any other hint as it is. A dict
    that does not fit the dataclass (a missing or unknown field) is a TypeError."""
    if values is None or kind is typing.Any:
        return values
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Union or (hasattr(types, "UnionType") and origin is types.UnionType):
        inner = [arg for arg in args if arg is not type(None)]
        return rebuild(inner[0], values) if len(inner) == 1 else values
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        if not isinstance(values, dict):
            raise TypeError(f"{kind.__name__} from {type(values).__name__}, not a dict")
        hints = typing.get_type_hints(kind)
        return kind(**{name: rebuild(hints.get(name, typing.Any), value)
                       for name, value in values.items()})
    if isinstance(values, list) and (origin or kind) in (list, tuple, collections.abc.Sequence):
        if (origin or kind) is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            items = ([rebuild(arg, value) for arg, value in zip(args, values)]
                     if len(args) == len(values) else values)
            return tuple(items)
        item = args[0] if args else typing.Any
        built = [rebuild(item, value) for value in values]
        return tuple(built) if (origin or kind) is tuple else built
    if isinstance(values, dict) and (origin or kind) in (dict, collections.abc.Mapping):
        item = args[1] if len(args) == 2 else typing.Any
        return {key: rebuild(item, value) for key, value in values.items()}
    return values


def _return_type(function):
    try:
        return typing.get_type_hints(function).get("return")
    except (NameError, TypeError):  # an annotation this process cannot resolve
        return None


def child_command(*args):
    """The command line of a Python child that runs with this process' sys.path (each entry
    made absolute, as this process resolves it now), never its working directory's."""
    path = [os.path.abspath(entry) for entry in sys.path]
    safe = ["-P"] if sys.version_info >= (3, 11) else []
    return [sys.executable, *safe, "-c", _BOOTSTRAP, str(len(path)), *path, str(os.getpid()),
            *args]


def stream(command, prefix, echo, merge_stderr=True, name=None):
    """Runs `command`, echoing its output lines with `prefix` (stderr merged in unless not
    `merge_stderr`: then it goes straight to this process's stderr); (exit status, last lines).
    SIGTERM and SIGINT are passed to it (the module's docstring); `name` is the child's in the
    line a SIGTERM ends with (default: the command's program)."""
    tail = []
    forwarding = _Forwarding(name or os.path.basename(command[0]))
    forwarding.install()
    try:
        group = ({} if not forwarding.active else {"process_group": 0}
                 if sys.version_info >= (3, 11) else {"start_new_session": True})
        process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT if merge_stderr else None,
                                   text=True, bufsize=1, errors="replace", **group)
        forwarding.started(process)
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
    finally:
        forwarding.restore()
    forwarding.deliver(process.returncode)
    return process.returncode, tail


class _Forwarding:
    """SIGTERM and SIGINT passed to a child while it runs, then acted on here (see the module's
    docstring). Python runs signal handlers in the main thread only: called from another
    thread, the child is left in this process group and nothing is installed."""

    def __init__(self, name):
        self.name = name
        self.active = threading.current_thread() is threading.main_thread()
        self.previous = {}  # the handlers replaced while the child runs
        self.process = None
        self.received = None  # the first signal's number
        self.forwarded = False

    def install(self):
        if not self.active:
            return
        for signum in FORWARDED:
            handler = signal.getsignal(signum)
            if handler is signal.SIG_IGN or handler is None:  # ignored, or not Python's to set
                continue
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self):
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def started(self, process):
        self.process = process
        if self.received is not None:  # it came between the handlers and the child
            self._forward()

    def _handle(self, signum, frame):
        if self.received is None:
            self.received = signum
            if self.process is not None:
                self._forward()
            return
        if signum == signal.SIGINT:  # a second Ctrl-C: stop at once
            if self.process is not None and self.process.poll() is None:
                self.process.kill()
            raise KeyboardInterrupt
        # A second SIGTERM: the child is already stopping; it saves, then ends.

    def _forward(self):
        if self.forwarded:
            return
        self.forwarded = True
        try:
            self.process.send_signal(self.received)
        except ProcessLookupError:
            pass

    def deliver(self, returncode):
        """After the child ended: the signal it was passed, acted on here."""
        signum = self.received
        if signum is None:
            return
        previous = self.previous.get(signum)
        if callable(previous):  # the caller's own handler (for SIGINT, Python's: KeyboardInterrupt)
            previous(signum, None)
            return
        status = (returncode if returncode and returncode > 0 else
                  exit_status.for_signal(-returncode if returncode else signum))
        print(f"{signal.Signals(signum).name}: passed to the child process ({self.name}), which "
              f"ended with status {status}; exiting with it", file=sys.stderr, flush=True)
        raise SystemExit(status)


def _die_with_parent(parent):
    """The child's side, on Linux: SIGKILL when the caller (`parent`'s thread that started it)
    dies; and at once if it already has."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGKILL)


def _name(obj):
    """module:qualname, as the child imports it; a function of a module run as `python -m`
    (__main__) by the module's own name."""
    module = obj.__module__
    if module == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else module
    return f"{module}:{obj.__qualname__}"


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
    options = rebuild(_resolve(request["options_type"]), request["options"])
    try:
        value = _resolve(request["function"])(options)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)  # as a tool says it
        atomic.write_json(request["result"], {"error": str(error)})
        sys.exit(exit_status.USER_ERROR)
    atomic.write_json(request["result"], {"value": _values(value)})


def _values(value):
    """`value` as JSON values: dataclasses (also in lists, tuples and dicts) as their dicts."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, dict):
        return {key: _values(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_values(item) for item in value]
    return value
