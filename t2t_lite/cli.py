"""Shared plumbing for the thin CLIs in bin/: TensorFlow set up fast and quiet, one-line errors.

Importing this module (every tool does, before TensorFlow) sets, unless the user already did:
- TF_ENABLE_ONEDNN_OPTS=1: oneDNN kernels, faster on x86 CPUs for GEMMs and markedly for
  attention's batched matmuls (docs/performance.md);
- TF_CPP_MIN_LOG_LEVEL=3: TensorFlow's C++ start-up lines ("failed call to cuInit: CUDA error"
  on a machine without a GPU, oneDNN and CPU-feature banners) are noise to a user.
TensorFlow 2.21 prints some of those lines before its logging reads that variable, so a tool also
filters its own stderr at the file-descriptor level (native code writes there too): TensorFlow's
C++ INFO/WARNING lines and its known-harmless CUDA errors are dropped; Python log lines,
tracebacks, real native errors and everything else pass. `--verbosity=0` (or a
TF_CPP_MIN_LOG_LEVEL of the user's) shows it all.
"""
import atexit
import logging
import os
import shlex
import subprocess
import sys

os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
_USER_SET_CPP_LEVEL = "TF_CPP_MIN_LOG_LEVEL" in os.environ
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app  # noqa: E402

from t2t_lite import exit_status, process_end, stderr_filter  # noqa: E402
from t2t_lite.errors import UserError  # noqa: E402


def run(main, required=(), problem_flags=False):
    """absl.app.run(main) for every tool, so they all behave alike:

    positional arguments are refused; with `problem_flags` (define_problem_flags), a
    --registry_help prints the registry and exits; the `required` flags must be given; with
    `problem_flags`, a --problem no problem has is refused before TensorFlow loads, unless a
    --problem_module may register it, and so are a --problem_module that is not there and a
    --problem_param that is no key=value (ProblemSpec.check); a UserError becomes `error: ...`
    on stderr and exit status 1 (a flag the tool lacks or cannot parse: status 2); a write that
    fails (full disk, EIO), during the run or in the final flush of stdout, becomes one `error:`
    line and status 120 (process_end); a reader that went away, status 141, quietly. The
    statuses are exit_status.py's table.
    """

    def guarded(argv):
        _set_verbosity()
        try:
            if len(argv) > 1:
                raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
            if problem_flags and _print_registry_if_asked():
                return None
            _check_required(required, _tool_name(main))
            if problem_flags:
                _check_problem_name()
            return main(argv)
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(exit_status.WRITE_FAILED if isinstance(error, process_end.WriteFailed)
                     else exit_status.USER_ERROR)
        except BrokenPipeError:
            # The reader went away (`t2t-lite-bleu ... | head`): stop quietly, as cat does.
            process_end.discard_stdout()
            sys.exit(exit_status.PIPE_CLOSED)
        except Exception as error:  # pylint: disable=broad-except  (re-raised unless a write)
            # A write that failed for good (a full disk, /dev/full, EIO; TensorFlow's writers
            # say so in their own errors) is one line and status 120, as Python's own failed
            # final flush; any other error keeps its traceback.
            if not process_end.write_failure_reason(error):
                raise
            sys.exit(process_end.report_write_failure(error))

    _help_describes(sys.modules[main.__module__])
    try:
        app.run(guarded, flags_parser=_parse_flags)
    except app.UsageError as error:  # raised by absl for unknown / malformed flags
        print(f"error: {error}", file=sys.stderr)
        _exit(exit_status.USAGE)
    except SystemExit as stop:  # app.run's end, the tool's own exit status
        if stop.code is None or isinstance(stop.code, int):
            _exit(stop.code or exit_status.OK)
        print(stop.code, file=sys.stderr)  # as Python prints an exit message
        _exit(exit_status.USER_ERROR)


def _parse_flags(argv):
    """absl's parse, with a flag the tool lacks or cannot read said in one `error:` line and
    status USAGE (absl itself prints `FATAL Flags parsing error` and exits 1)."""
    from absl import flags

    try:
        return flags.FLAGS(argv)
    except flags.Error as error:
        print(f"error: {error} (see --helpshort)", file=sys.stderr)
        _exit(exit_status.USAGE)


def _exit(status):
    """Ends the tool as the interpreter's exit does, less its teardown of modules and native
    state, which costs TensorFlow's tools about half a second after the work is done: other
    threads are waited for (and thread pools shut down), atexit functions run (the stderr
    filter's included) and the output is flushed, then the process ends. The tools close the
    files they write themselves (with-blocks, atomic writers), never at teardown."""
    import threading

    threading._shutdown()  # pylint: disable=protected-access  (what the interpreter calls)
    atexit._run_exitfuncs()  # pylint: disable=protected-access
    process_end.end_now(status)


def _help_describes(tool):
    """--help prints the __main__ module's docstring and the flags defined in sys.argv[0]. An
    installed command is a wrapper script that imports the tool, so both would be empty: they are
    taken from the tool's module."""
    from absl import flags

    main_module = sys.modules["__main__"]
    if main_module is not tool and not main_module.__doc__:
        main_module.__doc__ = tool.__doc__
    for module in (tool.__name__, __name__):  # the tool's flags, define_problem_flags' ones
        for flag in flags.FLAGS.get_flags_for_module(module):
            flags.FLAGS.register_key_flag_for_module(sys.argv[0], flag)


def define_problem_flags(data_dir_help):
    """The flags every tool that reads a problem shares (datagen, trainer)."""
    from absl import flags

    flags.DEFINE_string("problem", None, "Registered problem name (see --registry_help).")
    flags.DEFINE_string("data_dir", None, data_dir_help)
    flags.DEFINE_multi_string("problem_module", [], "Your module registering problems: a dotted "
                              "name or a path to a .py file (repeatable).")
    flags.DEFINE_multi_string("problem_param", [], "key=value for the problem's constructor, "
                              "e.g. target_lang=es (repeatable).")
    flags.DEFINE_bool("registry_help", False, "List problems and hparams sets, then exit.")


def define_decode_precision_flag(applies_to):
    """--decode_precision, shared by the decoder and the exporter; `applies_to` opens the help."""
    from absl import flags

    # decoding/precision.py's PRECISIONS, not imported: it loads Keras, and --help should not.
    flags.DEFINE_enum("decode_precision", "float32", ["float32", "bfloat16", "auto"],
                      f"{applies_to}: the beam search's precision. bfloat16 (opt-in) is "
                      "faster on CPUs with bfloat16 units; near-tied hypotheses may differ from "
                      "float32's. auto: bfloat16 only where a probe measures it faster.")


def define_no_repeat_ngram_flag(applies_to):
    """--no_repeat_ngram_size, shared by the decoder, the exporter and t2t-lite-po; `applies_to`
    ends the help (how the tool takes it)."""
    from absl import flags

    flags.DEFINE_integer("no_repeat_ngram_size", None,
                         "The rule against loops: no output repeats an n-gram of this many "
                         "tokens, counted as fairseq, Hugging Face and CTranslate2 count them; "
                         "0: off; a required phrase may still repeat (default: the model's "
                         f"DecodeConfig, docs/decoding.md). {applies_to}")


def _print_registry_if_asked():
    from absl import flags

    from t2t_lite import registry
    from t2t_lite.problem_spec import import_problem_modules

    if not flags.FLAGS.registry_help:
        return False
    import_problem_modules(flags.FLAGS.problem_module)  # the built-ins and the user's
    print(registry.registry_help())
    return True


def _check_problem_name():
    from absl import flags

    from t2t_lite.problem_spec import ProblemSpec

    ProblemSpec(flags.FLAGS.problem, tuple(flags.FLAGS.problem_param),
                tuple(flags.FLAGS.problem_module)).check()


def _check_required(names, tool):
    """One line naming the missing flags and the command in full: what the user typed, the
    missing flags added with placeholders (--data_dir=DATA_DIR)."""
    from absl import flags

    missing = [f"--{name}" for name in names if flags.FLAGS[name].value in (None, "")]
    if missing:
        full = " ".join([tool, *map(shlex.quote, sys.argv[1:]),
                         *(f"{flag}={flag[2:].upper()}" for flag in missing)])
        raise UserError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                        f"required: {full} (see --helpshort)")


def _tool_name(main):
    """The command a user typed: t2t-lite-<tool> for t2t_lite.bin.<tool> (also under
    `python -m`), else the program's file name."""
    module = main.__module__
    if module == "__main__":
        spec = getattr(sys.modules["__main__"], "__spec__", None)
        module = spec.name if spec is not None else ""
    if module.startswith("t2t_lite.bin."):
        return "t2t-lite-" + module.rsplit(".", 1)[1].replace("_", "-")
    return os.path.basename(sys.argv[0])


def _set_verbosity():
    """absl's --verbosity (default -1: warnings) also governs TensorFlow's C++ and Python logs."""
    from absl import flags

    # absl.app sets verbosity 0 (INFO) when the flag is absent: only an explicit one counts.
    verbosity = flags.FLAGS.verbosity if flags.FLAGS["verbosity"].present else -1
    if verbosity >= 0 and not _USER_SET_CPP_LEVEL:
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"  # read when TensorFlow loads, after this
    # TensorFlow's Python INFO lines go through the "tensorflow" logger, and some (e.g.
    # functional_saver's "Sharding callback duration") through absl's: below an explicit
    # --verbosity only t2t_lite's own INFO lines (batching, skipped examples) pass.
    logging.getLogger("tensorflow").setLevel(logging.INFO if verbosity >= 0 else logging.WARNING)
    if verbosity < 0:
        from absl import logging as absl_logging

        handler = absl_logging.get_absl_handler()
        handler.addFilter(_own_info_only)
        handler.setFormatter(PlainInfoFormatter(absl_logging.PythonFormatter()))
        if not _USER_SET_CPP_LEVEL:
            filter_stderr()


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


class PlainInfoFormatter(logging.Formatter):
    """INFO lines as their bare message: what a user reads in a tool's report ("batching: ...",
    "dropping 23 of 35195 examples ..."), not a log; warnings and errors keep `prefixed`'s
    level, time and source line."""

    def __init__(self, prefixed):
        super().__init__()
        self.prefixed = prefixed

    def format(self, record):
        if record.levelno == logging.INFO:
            return record.getMessage()
        return self.prefixed.format(record)


def _own_info_only(record):
    return record.levelno > logging.INFO or os.path.abspath(record.pathname).startswith(
        _PACKAGE_DIR)


is_noise = stderr_filter.is_noise


_filter_installed = False


def filter_stderr():
    """Routes file descriptor 2 through a filter process that drops `is_noise` lines (once per
    process; child processes inherit the filtered descriptor). A process, not a thread: what a
    native crash writes last still reaches the terminal."""
    global _filter_installed
    if _filter_installed:
        return
    _filter_installed = True
    sys.stderr.flush()
    terminal = os.dup(2)
    read_end, write_end = os.pipe()
    try:
        child = subprocess.Popen([sys.executable, "-I", stderr_filter.__file__], stdin=read_end,
                                 stdout=terminal, stderr=terminal, start_new_session=True)
    except OSError:  # no filter rather than no tool
        for descriptor in (read_end, write_end, terminal):
            os.close(descriptor)
        return
    os.close(read_end)
    os.dup2(write_end, 2)
    os.close(write_end)

    def restore():
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(terminal, 2)  # the pipe's last write end closes: the filter sees EOF
        try:
            child.wait(timeout=5)
        except subprocess.TimeoutExpired:  # a grandchild still holds the pipe
            pass

    atexit.register(restore)
