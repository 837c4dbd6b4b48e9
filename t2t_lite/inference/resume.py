"""Where the decoder's and the scorer's finished chunks go: a resumable output file, or a stream.

`open_output` decides which, the way `sort -o` or `rsync` would treat the path:
- none: stdout, a stream;
- a descriptor alias of this process (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N and
  links to them): a stream written through that descriptor itself, so its offset is the one the
  shell shares (`(decoder ...; echo done) > log` and `> log 2>&1` keep every byte);
- a device, FIFO or socket (/dev/null, a terminal, a named pipe), or another process's
  /proc/PID/fd/N: opened and written as a stream;
- a symlink: written through (its target gets the output and the records; the link stays);
- the input itself (same device and inode, whatever the names, stdout included): refused
  before anything is read or written; so is a closed descriptor, stdout closed with `>&-` too.
- otherwise a regular file: a `ResumableOutput`, locked for this run (file_lock.py), so a second
  decoder or scorer on the same output refuses.

A stream is never replaced, has no progress record and does not resume; each chunk is written to
its last byte, however few bytes a pipe or device takes at once.

`ResumableOutput` appends each finished chunk to OUT and then records, in OUT.progress.json beside
it, how many input lines and output bytes are done, together with what identifies the run (the
input, the model and its settings, the settings that change outputs). A chunk's bytes are
fsync'd before the record that counts them, and the record is replaced atomically and fsync'd
with its folder, so after a crash or power loss the record never counts bytes that are not on
disk. A killed run re-run with the same command continues after the last recorded chunk;
anything OUT holds past the record (a chunk whose record was not written yet) is cut off first,
so the finished OUT is byte-identical to an uninterrupted run's. A record that does not match
the run (another input, model or setting, or an input on a pipe that cannot be recognised)
keeps OUT as it is and ends in one line naming the record and --start_over. OUT does not exist
until the first chunk is done: that chunk replaces any older OUT whole. A finished run removes
the progress record and the lock and leaves only OUT.
"""
import fcntl
import hashlib
import json
import os
import re
import select
import stat
import sys

from t2t_lite import atomic, file_lock, process_end
from t2t_lite.errors import UserError

PROGRESS_SUFFIX = ".progress.json"
# The longest name written beside an output: its progress record while being replaced.
SIDECAR_SUFFIX = PROGRESS_SUFFIX + atomic.TMP_SUFFIX
START_OVER_FLAG = "--start_over"
# Resolved from `auto`/`default` when a run starts, and reused when it resumes: the machine's
# probe may choose otherwise on the next start, and the output would switch mid-file.
MACHINE_CHOICES = ("auto", "default")


def _encode(lines):
    return "".join(line + "\n" for line in lines).encode("utf-8")


def first_difference(recorded, current, prefix=""):
    """The first key path where two JSON-like values differ, with both values, or None."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        for key in sorted(set(recorded) | set(current)):
            found = first_difference(recorded.get(key), current.get(key), f"{prefix}{key}.")
            if found:
                return found
        return None
    if recorded != current:
        return f"{prefix.rstrip('.')} was {recorded!r}, now {current!r}"
    return None


def _sha256(paths):
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            while block := f.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def model_identity(model_dir=None, checkpoint_path=None, export_dir=None, engine="tensorflow"):
    """What identifies the model a resumed run must use, and a digest of the settings that shape
    its outputs, so an edited decode setting is caught too.

    A model_dir's checkpoint (the one --checkpoint_path names, else the one the decoder would
    load) is identified by its own files alone: its index's digest (the index holds each
    tensor's checksum) and size, and its data files' total size; the settings are configs.json's
    model and decode sections, run.json's vocabulary and the vocabulary's bytes. The model_dir
    training on (new checkpoints, a longer --train_steps in configs.json's train section) or a
    re-run that rewrote nothing leaves a pinned checkpoint's identity as it was. An export is
    identified by its saved_model.pb (a CTranslate2 folder by its model.bin), size and mtime,
    with a digest of its graph, which holds its metadata (a CTranslate2 folder's t2t_lite.json
    and config.json)."""
    if model_dir:
        from t2t_lite.model_dir import files

        files.check_model_dir(model_dir)  # a folder that is none: said before TensorFlow loads
        from t2t_lite.model_dir import checkpoint_reader

        prefix = checkpoint_reader.resolve_checkpoint(model_dir, checkpoint_path)
        try:
            return _checkpoint_identity(model_dir, prefix)
        except OSError as error:
            raise UserError(f"cannot read the model at {error.filename or prefix} "
                            f"({error.strerror})") from None
    if engine == "ctranslate2":
        from t2t_lite.inference import ctranslate2_engine, saved_model

        ctranslate2_engine.read_settings(export_dir)  # not a CTranslate2 folder: said as such
        path = os.path.join(export_dir, "model.bin")
        settings = [os.path.join(export_dir, name)
                    for name in (saved_model.METADATA_NAME, "config.json")]
    else:
        from t2t_lite.inference import saved_model

        path = os.path.join(saved_model.latest_version_dir(export_dir), "saved_model.pb")
        settings = [path]
    try:
        status = os.stat(path)
        digest = _sha256([p for p in settings if os.path.isfile(p)])
    except OSError as error:
        raise UserError(f"cannot read the model at {error.filename or path} "
                        f"({error.strerror})") from None
    return {"path": os.path.abspath(path), "size": status.st_size, "mtime_ns": status.st_mtime_ns,
            "settings_sha256": digest}


def _checkpoint_identity(model_dir, prefix):
    """model_identity's answer for the checkpoint at `prefix` in `model_dir` (OSError when a file
    cannot be read)."""
    import glob

    from t2t_lite.model_dir import files

    index = prefix + ".index"
    data = sorted(glob.glob(glob.escape(prefix) + ".data-*-of-*"))
    settings = hashlib.sha256()
    with open(os.path.join(model_dir, files.CONFIGS), "rb") as f:
        configs = f.read()
    try:
        # Only what shapes a decode's output: the train section records run settings
        # (--train_steps, ...) that a later run of the model_dir may change.
        values = json.loads(configs)
        configs = json.dumps({key: values[key] for key in ("model", "decode")},
                             sort_keys=True).encode("utf-8")
    except (ValueError, TypeError, KeyError):
        pass  # not the trainer's configs.json: the loader says what is wrong with it
    settings.update(configs)
    # The vocabulary run.json names (loading the model checks run.json itself), and its bytes.
    try:
        with open(os.path.join(model_dir, files.RUN_INFO), "rb") as f:
            info = json.loads(f.read())
        vocab = {key: info.get(key) for key in ("vocab_file", "vocab_size")}
    except (OSError, ValueError, AttributeError):
        vocab = {}
    settings.update(json.dumps(vocab, sort_keys=True).encode("utf-8"))
    if isinstance(vocab.get("vocab_file"), str):
        vocab_file = os.path.join(model_dir, os.path.basename(vocab["vocab_file"]))
        if os.path.isfile(vocab_file):
            settings.update(_sha256([vocab_file]).encode("ascii"))
    # No path: a copied or moved model_dir is the same model, and resumes.
    return {"checkpoint": os.path.basename(prefix), "size": os.stat(index).st_size,
            "index_sha256": _sha256([index]),
            "data_size": sum(os.stat(path).st_size for path in data),
            "settings_sha256": settings.hexdigest()}


def check_output_path(path, flag="--decode_to_file"):
    """UserError unless `path` can become an output file: its folder exists and is a folder, it
    is no folder, its name can be looked up (no link loop) and is short enough for the files
    written beside it (OUT.progress.json.incomplete), and it is none of a model_dir's files or
    checkpoints (model_dir/outputs.py)."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        folder_mode = os.stat(folder).st_mode
    except FileNotFoundError:
        raise UserError(f"{flag}: folder {folder} does not exist") from None
    except OSError as error:
        raise UserError(f"{flag} {path}: cannot write in {folder} ({error.strerror})") from None
    if not stat.S_ISDIR(folder_mode):
        raise UserError(f"{flag} {path}: {folder} is not a folder")
    try:
        if stat.S_ISDIR(os.stat(path).st_mode):
            raise UserError(f"{flag} {path} is a directory; name a file")
    except FileNotFoundError:
        pass
    except OSError as error:  # a link loop, a name too long
        raise UserError(f"{flag} {path}: cannot write ({error.strerror})") from None
    try:
        name_max = os.pathconf(folder, "PC_NAME_MAX")
    except (OSError, ValueError):
        name_max = 255
    longest = len(os.fsencode(os.path.basename(path)) + os.fsencode(SIDECAR_SUFFIX))
    if 0 < name_max < longest:
        raise UserError(f"{flag} {path}: the name is too long for the files written beside it "
                        f"(they add up to {len(SIDECAR_SUFFIX)} characters to it, and {folder} "
                        f"allows {name_max}); use a shorter name")
    from t2t_lite.model_dir import outputs  # no TensorFlow

    outputs.check_output_file(path, flag)  # never over a model_dir's files or checkpoints


def _descriptor_alias(path):
    """For /dev/stdout, /dev/fd/N, /proc/self/fd/N and links to them: (True, N), N being the
    descriptor when it is this process's own, None when another process's (/proc/PID/fd/N);
    (False, None) for any other path. Reopening what such a path resolves to would replace the
    file behind someone's descriptor, or write it at an offset of its own."""
    current = os.path.abspath(path)
    own = re.compile(rf"/(?:dev/fd|proc/(?:self|thread-self|{os.getpid()})/fd)/(\d+)")
    for _ in range(40):
        match = own.fullmatch(current)
        if match:
            return True, int(match[1])
        if current.startswith(("/proc/", "/dev/fd/")):
            return True, None
        if not os.path.islink(current):
            return False, None
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
    return False, None


def is_stream_path(path):
    """True when `path` names something that is written as a stream, never replaced: a device,
    FIFO or socket, or a descriptor alias."""
    if _descriptor_alias(path)[0]:
        return True
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):  # nothing there, or a name that cannot be looked up, which
        return False  # check_output_path then names
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def check_not_an_input(path, inputs, flag):
    """UserError when the file at `path` is one of `inputs` ((description, os.stat_result or
    None) pairs), compared by device and inode, so no name, link or hard link hides it."""
    try:
        output = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as error:  # a link loop, a name too long, a file that is not a folder
        raise UserError(f"{flag} {path}: cannot write ({error.strerror})") from None
    _refuse_an_input(output, f"{flag} {path}", inputs)


def _refuse_an_input(output, name, inputs):
    for description, status in inputs:
        if (status is not None and stat.S_ISREG(status.st_mode)
                and (status.st_dev, status.st_ino) == (output.st_dev, output.st_ino)):
            raise UserError(f"{name} is the input {description}: writing it would destroy "
                            "what is being read; write the output to another file")


def open_output(path, flag="--decode_to_file", inputs=()):
    """The output for `path` (None: stdout), as the module docstring says; `inputs` as in
    check_not_an_input. Use it as a context manager, so a lock is released on every exit."""
    if path is None:
        if sys.stdout is not None:
            sys.stdout.flush()  # what was printed before goes first
        return _stream(_given_descriptor(1, "stdout", f"; name an output file with {flag}"),
                       "stdout", inputs)
    name = f"{flag} {path}"
    alias, descriptor = _descriptor_alias(path)
    if descriptor is not None:
        return _stream(_given_descriptor(descriptor, name), name, inputs)
    if alias or is_stream_path(path):
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError as error:
            raise UserError(f"{name}: cannot open ({error.strerror})") from None
        return _stream(descriptor, name, inputs)
    target = os.path.realpath(path)
    check_output_path(target, flag)
    check_not_an_input(target, inputs, flag)
    return ResumableOutput(target, flag=flag)


def _given_descriptor(descriptor, name, hint=""):
    """A duplicate of `descriptor` (the same open file, so the shell's offset is shared), or a
    UserError unless whoever started this process gave it open for writing."""
    standard = (sys.__stdin__, sys.__stdout__, sys.__stderr__)
    try:
        # A standard stream closed at start is None; Python opens its own files close-on-exec:
        # a descriptor of either kind here is not one the shell gave, whatever it holds now.
        if ((descriptor < len(standard) and standard[descriptor] is None)
                or not os.get_inheritable(descriptor)):
            raise OSError
        if fcntl.fcntl(descriptor, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
            raise UserError(f"{name}: descriptor {descriptor} is open for reading only{hint}")
        return os.dup(descriptor)
    except OSError:
        what = " is closed" if name == "stdout" else f": descriptor {descriptor} is not open"
        raise UserError(f"{name}{what}{hint}") from None


def _stream(descriptor, name, inputs):
    try:
        _refuse_an_input(os.fstat(descriptor), name, inputs)
    except BaseException:
        os.close(descriptor)
        raise
    return StreamOutput(descriptor, name)


def _write_error(error, name):
    """The one line for an output that could not be written: a WriteFailed (exit status 120)
    when the disk or device refused the bytes, else a UserError."""
    kind = process_end.WriteFailed if process_end.is_write_failure(error) else UserError
    return kind(f"{name}: cannot write ({error.strerror or error})")


class StreamOutput:
    """Finished chunks written to a stream through a descriptor of its own, each to its last
    byte before the next: no resume."""

    lines_done, offset, recorded_run, identity = 0, None, None, None

    def __init__(self, descriptor, name):
        self.descriptor, self.name = descriptor, name

    def begin(self, run_identity=None, start_over=False):
        """Streams do not resume: nothing to check."""

    def append(self, lines, offset=None):
        data = memoryview(_encode(lines))
        try:
            while data:  # a pipe or device may take fewer bytes than given (a signal, a full pipe)
                try:
                    data = data[os.write(self.descriptor, data):]
                except BlockingIOError:  # a non-blocking descriptor: wait until it takes more
                    poller = select.poll()
                    poller.register(self.descriptor, select.POLLOUT)
                    poller.poll()
        except BrokenPipeError:
            raise  # the reader went away: the tool ends quietly (exit_status.PIPE_CLOSED)
        except OSError as error:
            raise _write_error(error, self.name) from None

    def finish(self):
        """Every byte is out already."""

    def close(self):
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class ResumableOutput:
    """OUT written chunk by chunk with a progress record beside it (see the module docstring).

    `path` is the file itself (open_output resolves links). Constructing it takes the lock;
    `recorded_run` is the identity an unfinished earlier run recorded (None: none, or damaged);
    begin(run_identity, start_over) then decides between resuming and starting afresh.
    lines_done / offset: where the input continues (0 / None for a fresh run).
    """

    def __init__(self, path, flag="--decode_to_file"):
        self.path, self.flag = path, flag
        self.progress_path = path + PROGRESS_SUFFIX
        self.lines_done, self.offset, self.out_bytes = 0, None, 0
        self.identity = None
        self._lock = file_lock.FileLock(path + file_lock.LOCK_SUFFIX, f"{flag} {path}").acquire()
        self.recorded_run = None
        if os.path.exists(self.progress_path):
            try:
                self.recorded_run = self._read_record()["run"]
            except UserError:
                pass  # begin() reports it, unless the run starts over

    def begin(self, run_identity, start_over=False):
        """run_identity: a JSON-able dict (input, model, settings) that a resumed run must match;
        its "input" is None for a pipe. start_over: ignore (and replace) an earlier run's
        record instead of resuming from it."""
        self.identity = run_identity
        if start_over or not os.path.exists(self.progress_path):
            return
        record = self._read_record()
        if run_identity.get("input") is None:
            recorded = (record["run"].get("input") or {}).get("path", "a file")
            raise UserError(f"{self.progress_path} records an unfinished run over {recorded}, "
                            "and an input on a pipe cannot be recognised as that one; give it "
                            f"as the input file to resume, or re-run with {START_OVER_FLAG} to "
                            f"replace {self.path} from the start")
        difference = first_difference(record.get("run"), run_identity)
        if difference:
            raise UserError(f"{self.progress_path} is from another run ({difference}); re-run "
                            f"with {START_OVER_FLAG} to translate from the start")
        size = os.path.getsize(self.path) if os.path.isfile(self.path) else None
        if size is None or size < record["out_bytes"]:
            raise UserError(f"{self.path} holds less than {self.progress_path} records "
                            f"({size} < {record['out_bytes']} bytes); re-run with "
                            f"{START_OVER_FLAG} to translate from the start")
        if size > record["out_bytes"]:  # a chunk written after the last record: redone
            os.truncate(self.path, record["out_bytes"])
        self.lines_done, self.offset = record["lines_done"], record["offset"]
        self.out_bytes = record["out_bytes"]

    def _read_record(self):
        try:
            with open(self.progress_path, encoding="utf-8") as f:
                record = json.load(f)
            if not (isinstance(record, dict) and isinstance(record.get("run"), dict)
                    and all(isinstance(record.get(k), int) and record[k] >= 0
                            for k in ("lines_done", "out_bytes"))
                    and (record.get("offset") is None or isinstance(record["offset"], int))):
                raise ValueError("not a decoder progress record")
        except (OSError, ValueError) as error:
            raise UserError(f"{self.progress_path} is damaged ({' '.join(str(error).split())});"
                            f" re-run with {START_OVER_FLAG} to translate from the start") from None
        return record

    def append(self, lines, offset=None):
        """Adds a finished chunk's output lines; `offset` is the input position after them."""
        data = _encode(lines)
        try:
            if self.lines_done == 0 and self.out_bytes == 0:
                # The first chunk replaces OUT whole, so an older OUT stays until it is done.
                with atomic.open_atomic(self.path, "wb", durable=True) as f:
                    f.write(data)
            else:
                with open(self.path, "ab") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
            self.lines_done += len(lines)
            self.out_bytes += len(data)
            self.offset = offset
            atomic.write_json(self.progress_path, {
                "run": self.identity, "lines_done": self.lines_done,
                "out_bytes": self.out_bytes, "offset": offset},
                durable=True, indent=1, sort_keys=True)
        except OSError as error:
            raise _write_error(error, f"{self.flag} {self.path}") from None

    def finish(self):
        """The run is complete: an empty input still leaves an (empty) OUT; the record goes."""
        if self.lines_done == 0 and self.out_bytes == 0:
            atomic.write_text(self.path, "", durable=True)
        if os.path.exists(self.progress_path):
            os.remove(self.progress_path)

    def close(self):
        self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
