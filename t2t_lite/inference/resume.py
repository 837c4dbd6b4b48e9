"""Where the decoder's finished chunks go: a resumable output file, or a stream.

`ResumableOutput` appends each finished chunk to OUT and then records, in OUT.progress.json beside
it, how many input lines and output bytes are done, together with what identifies the run (the
input, the model, the settings that change outputs). A killed run re-run with the same command
continues after the last recorded chunk; anything OUT holds past the record (a chunk whose record
was not written yet) is cut off first, so the finished OUT is byte-identical to an uninterrupted
run's. OUT does not exist until the first chunk is done: that chunk replaces any older OUT whole.
A finished run removes the progress file and leaves only OUT.
"""
import json
import os

from t2t_lite import atomic
from t2t_lite.errors import UserError

PROGRESS_SUFFIX = ".progress.json"
START_OVER_FLAG = "--start_over"


def _encode(lines):
    return "".join(line + "\n" for line in lines).encode("utf-8")


def _first_difference(recorded, current, prefix=""):
    """The first key path where two JSON-like values differ, with both values, or None."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        for key in sorted(set(recorded) | set(current)):
            found = _first_difference(recorded.get(key), current.get(key), f"{prefix}{key}.")
            if found:
                return found
        return None
    if recorded != current:
        return f"{prefix.rstrip('.')} was {recorded!r}, now {current!r}"
    return None


def model_identity(model_dir=None, checkpoint_path=None, export_dir=None, engine="tensorflow"):
    """What identifies the model a resumed run must use: the file that holds it (a checkpoint's
    index, an export's saved_model.pb, a CTranslate2 model.bin) with its size and mtime."""
    if model_dir:
        from t2t_lite.model_dir import checkpoints

        path = checkpoints.resolve_checkpoint(model_dir, checkpoint_path) + ".index"
    elif engine == "ctranslate2":
        path = os.path.join(export_dir, "model.bin")
    else:
        from t2t_lite.inference import saved_model

        path = os.path.join(saved_model.latest_version_dir(export_dir), "saved_model.pb")
    try:
        status = os.stat(path)
    except OSError as error:
        raise UserError(f"cannot read the model at {path} ({error.strerror})") from None
    return {"path": os.path.abspath(path), "size": status.st_size, "mtime_ns": status.st_mtime_ns}


def check_output_path(path, flag="--decode_to_file"):
    """UserError unless `path` can become an output file: its folder exists, it is no folder."""
    if os.path.isdir(path):
        raise UserError(f"{flag} {path} is a directory; name a file")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UserError(f"{flag}: folder {folder} does not exist")


class StreamOutput:
    """Finished chunks written to a binary stream (stdout) and flushed at once: no resume."""

    lines_done, offset = 0, None

    def __init__(self, stream):
        self.stream = stream

    def append(self, lines, offset=None):
        self.stream.write(_encode(lines))
        self.stream.flush()

    def finish(self):
        self.stream.flush()


class ResumableOutput:
    """OUT written chunk by chunk with a progress record beside it (see the module docstring).

    run_identity: a JSON-able dict (input, model, settings) that a resumed run must match.
    start_over: ignore (and replace) a progress record instead of resuming from it.
    lines_done / offset: where the input continues (0 / None for a fresh run).
    """

    def __init__(self, path, run_identity, start_over=False, flag="--decode_to_file"):
        self.path, self.identity = path, run_identity
        self.progress_path = path + PROGRESS_SUFFIX
        self.lines_done, self.offset, self.out_bytes = 0, None, 0
        check_output_path(path, flag)
        if run_identity.get("input") is None:
            start_over = True  # a pipe cannot be recognised, so never resumed
        if os.path.exists(self.progress_path) and not start_over:
            self._resume()

    def _resume(self):
        record = self._read_record()
        difference = _first_difference(record.get("run"), self.identity)
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
                with atomic.open_atomic(self.path, "wb") as f:
                    f.write(data)
            else:
                with open(self.path, "ab") as f:
                    f.write(data)
                    f.flush()
                    os.fsync(f.fileno())
        except OSError as error:
            raise UserError(f"--decode_to_file {self.path}: cannot write "
                            f"({error.strerror})") from None
        self.lines_done += len(lines)
        self.out_bytes += len(data)
        self.offset = offset
        atomic.write_json(self.progress_path, {
            "run": self.identity, "lines_done": self.lines_done, "out_bytes": self.out_bytes,
            "offset": offset}, indent=1, sort_keys=True)

    def finish(self):
        """The run is complete: an empty input still leaves an (empty) OUT; the record goes."""
        if self.lines_done == 0 and self.out_bytes == 0:
            atomic.write_text(self.path, "")
        if os.path.exists(self.progress_path):
            os.remove(self.progress_path)
