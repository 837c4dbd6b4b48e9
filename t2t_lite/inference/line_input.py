"""The decoder's input: byte lines from a file or a pipe, read a chunk at a time.

Lines end where t2t_lite.data.lines says: at "\\n" only (a stray "\\r" never makes a line), and
a last line without "\\n" is a line too; the "\\r" of a "\\r\\n" is left to the line's reader
(batch_decode.clean_line). A UTF-8 byte-order mark at the start of the input is dropped (and
counted); a line longer than MAX_LINE_BYTES ends the run with an error naming it rather than
being read into memory whole. A file can be split into `num_shards` contiguous parts of nearly
equal line counts: shard I holds lines [I * L // N, (I + 1) * L // N), so the shards' outputs
put back together in shard order (`cat out.0 out.1 ...`) are the whole file's output in input
order.

A path that names a pipe or a character device (a FIFO, bash's `<(command)` as /dev/fd/N,
/dev/stdin on a pipe or a terminal) is read as a stream, as stdin on a pipe is: its lines are
not known in advance, it cannot be split into shards, and a stopped run cannot resume (said
once on stderr). A file is recognised on resume by its real path (links resolved), so a link to
it, the file itself and stdin redirected from either are the same input.
"""
import hashlib
import os
import stat
import sys

from t2t_lite.data.lines import NEWLINE
from t2t_lite.errors import UserError
from t2t_lite.progress_line import counted

READ_BLOCK = 1 << 20
HEAD_BYTES = 1 << 20  # the part of the input that is hashed to recognise it on resume
MAX_LINE_BYTES = 1 << 20  # far past any model's max_length in tokens; beyond, not a sentence
BOM = b"\xef\xbb\xbf"


def count_lines(path):
    """Lines in a file as the decoder reads them: its "\\n" count, plus a last unterminated one."""
    lines, last = 0, NEWLINE
    with open(path, "rb") as f:
        while block := f.read(READ_BLOCK):
            lines += block.count(NEWLINE)
            last = block[-1:]
    return lines + (last != NEWLINE)


def shard_range(total_lines, num_shards, shard_index):
    """(first line, end line) of shard `shard_index` of `num_shards` contiguous parts."""
    return (shard_index * total_lines // num_shards,
            (shard_index + 1) * total_lines // num_shards)


def open_input(path=None, num_shards=1, shard_index=0, flag="--decode_from_file"):
    """The LineInput of `path`, or of stdin when path is None. Stdin redirected from a regular
    file (`< in.en`, not yet read from) is read as that file, so it is recognised on resume and
    can be sharded like one."""
    if path is None:
        path = _stdin_file()
        if path is None:
            return LineInput(stream=sys.stdin.buffer, num_shards=num_shards,
                             shard_index=shard_index, flag=flag)
        flag = "stdin"
    return LineInput(path=path, num_shards=num_shards, shard_index=shard_index, flag=flag)


def _stdin_file():
    """The path of the regular file stdin reads from at its start, or None (a pipe, a terminal,
    a file already partly read, a file that has no name any more)."""
    try:
        descriptor = sys.stdin.fileno()
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode) or os.lseek(descriptor, 0, os.SEEK_CUR) != 0:
            return None
        path = os.path.realpath(f"/proc/self/fd/{descriptor}")
        named = os.stat(path)
    except (OSError, ValueError, AttributeError):
        return None
    return path if (named.st_dev, named.st_ino) == (status.st_dev, status.st_ino) else None


class LineInput:
    """Byte lines of a file (optionally one shard of it) or of a binary stream such as stdin.

    total_lines: the lines this input will yield (None for a stream: unknown in advance).
    A `path` that names a pipe or a device is opened and read as a stream (path is then None,
    `name` says what it is); `note` says once on stderr that such a run cannot resume.
    """

    def __init__(self, path=None, stream=None, num_shards=1, shard_index=0,
                 flag="--decode_from_file", note=True):
        if (path is None) == (stream is None):
            raise ValueError("give exactly one of path and stream")
        if num_shards < 1 or not 0 <= shard_index < num_shards:
            raise UserError(f"--shard_index must be in [0, --num_shards={num_shards}), "
                            f"got {shard_index}")
        if stream is not None and num_shards > 1:
            raise UserError(f"--num_shards needs {flag} (a pipe cannot be split)")
        self.path, self.stream, self.flag = path, stream, flag
        self.name = "stdin" if path is None else f"{flag} {path}"
        self.bytes_read = 0
        self.bom_stripped = 0
        self._owned_stream = None
        if path is not None and _is_stream(path, flag):
            if num_shards > 1:
                raise UserError(f"--num_shards needs a file: {flag} {path} is a pipe or a "
                                "device, which cannot be split")
            try:
                self.stream = self._owned_stream = open(path, "rb")
            except OSError as error:
                raise UserError(f"{flag} {path}: cannot read ({error.strerror})") from None
            self.path = None
            if note:
                _say_streamed([self.name])
        if self.path is None:
            self.total_lines, self.first_line, self.file_lines = None, 0, None
            return
        try:
            self.file_lines = count_lines(path)  # the whole file's, whatever the shard
        except OSError as error:
            raise UserError(f"{flag} {path}: cannot read ({error.strerror})") from None
        self.first_line, end = shard_range(self.file_lines, num_shards, shard_index)
        self.total_lines = end - self.first_line

    def described_statuses(self):
        """[(what this input is, in words; its os.stat_result)], to tell it from an output."""
        if self.path is None:
            try:
                return [(self._stream_words(), os.fstat(self.stream.fileno()))]
            except (OSError, ValueError, AttributeError):
                return [(self._stream_words(), None)]
        return [(f"{self.flag} {self.path}", os.stat(self.path))]

    def _stream_words(self):
        return "on stdin" if self._owned_stream is None else self.name

    def identity(self):
        """What recognises this input on a resumed run: its real path (links resolved, as stdin
        redirected from it is named), size, mtime and a hash of its start (None for a stream,
        which cannot be recognised)."""
        if self.path is None:
            return None
        status = os.stat(self.path)
        with open(self.path, "rb") as f:
            head = hashlib.sha256(f.read(HEAD_BYTES)).hexdigest()
        return {"path": os.path.realpath(self.path), "size": status.st_size,
                "mtime_ns": status.st_mtime_ns, "head_sha256": head}

    def chunks(self, chunk_lines, lines_done=0, offset=None):
        """Yields (lines, offset after them): lists of at most chunk_lines byte lines without
        their "\\n", in input order, starting `lines_done` lines into this input. For a file,
        `offset` (as a previous chunk reported it for those lines) spares reading up to there."""
        if self.stream is not None:
            try:
                yield from self._chunks(self.stream, chunk_lines, lines_done, None,
                                        line_index=lines_done)
            except OSError as error:
                raise UserError(f"{self.name}: cannot read ({error.strerror})") from None
            finally:
                if self._owned_stream is not None:
                    self._owned_stream.close()
            return
        remaining = self.total_lines - lines_done
        try:
            with open(self.path, "rb") as f:
                skip = self.first_line + lines_done
                if offset is not None:
                    f.seek(offset)
                    skip = 0
                yield from self._chunks(f, chunk_lines, skip, remaining, seekable=f,
                                        line_index=self.first_line + lines_done)
        except OSError as error:
            raise UserError(f"{self.flag} {self.path}: cannot read "
                            f"({error.strerror})") from None

    def _chunks(self, f, chunk_lines, skip_lines, remaining, seekable=None, line_index=0):
        """`line_index`: the 0-based number, in the whole input, of the first line yielded."""
        at_start = skip_lines == 0 and (seekable is None or seekable.tell() == 0)
        for _ in range(skip_lines):
            if not _skip_line(f):
                return
        chunk = []
        while remaining is None or remaining > 0:
            # readline returns as soon as a line has arrived, so a pipe is served line by line.
            raw = f.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(NEWLINE):
                raise UserError(f"{self.name}: line {line_index + 1:,} is longer than "
                                f"{MAX_LINE_BYTES:,} bytes; split or remove it")
            line_index += 1
            self.bytes_read += len(raw)
            if at_start:
                at_start = False
                if raw.startswith(BOM):
                    raw = raw[len(BOM):]
                    self.bom_stripped += 1
            chunk.append(raw[:-1] if raw.endswith(NEWLINE) else raw)
            if remaining is not None:
                remaining -= 1
            if len(chunk) >= chunk_lines:
                yield chunk, seekable.tell() if seekable else None
                chunk = []
        if chunk:
            yield chunk, seekable.tell() if seekable else None


def _is_stream(path, flag):
    """True for a pipe or a character device, False for a regular file; a UserError for
    anything else (nothing there, a folder, a socket, a name that cannot be looked up)."""
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError, ValueError):
        mode = None
    except OSError as error:  # a link loop, a name too long, a folder that may not be read
        raise UserError(f"{flag} {path}: cannot read ({error.strerror})") from None
    if mode is not None and stat.S_ISREG(mode):
        return False
    if mode is not None and (stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)):
        return True
    raise UserError(f"{flag} {path} does not exist or is not a file")


def _say_streamed(names):
    """The one line saying that these inputs are read as streams, so nothing resumes."""
    what = "a pipe or a device" if len(names) == 1 else "pipes or devices"
    print(f"{' and '.join(names)}: {what}, read as a stream; a stopped run cannot resume",
          file=sys.stderr, flush=True)


def _skip_line(f):
    """Reads past one line without holding it whole; False at the end of the input."""
    part = f.readline(READ_BLOCK)
    while part and not part.endswith(NEWLINE):
        part = f.readline(READ_BLOCK)
        if not part:
            return True
    return bool(part)


class ParallelInput:
    """Two line-aligned files read together, in the LineInput interface: chunks of (source line,
    target line) pairs. Files of different line counts are refused unless `pad_shorter`, which
    gives the shorter file's side as None past its end. A side that is a pipe (`<(cut -f1 x)`)
    has no line count in advance: the two are compared as they are read, and the first to end
    before the other ends the run (unless `pad_shorter`)."""

    def __init__(self, source_path, target_path, pad_shorter=False,
                 flags=("--source_file", "--target_file"), pad_flag="--pad_shorter"):
        self.inputs = [LineInput(path=source_path, flag=flags[0], note=False),
                       LineInput(path=target_path, flag=flags[1], note=False)]
        self.pad_shorter, self.pad_flag = pad_shorter, pad_flag
        streamed = [i.name for i in self.inputs if i.path is None]
        if streamed:
            _say_streamed(streamed)
        counts = [i.total_lines for i in self.inputs]
        if None not in counts and counts[0] != counts[1] and not pad_shorter:
            raise UserError(f"{flags[0]} {source_path} has {counted(counts[0], 'line')} but "
                            f"{flags[1]} {target_path} has {counts[1]:,}: the files are not "
                            "parallel; "
                            f"{pad_flag} scores the missing side as empty")
        self.total_lines = None if None in counts else max(counts)

    def described_statuses(self):
        return [status for i in self.inputs for status in i.described_statuses()]

    @property
    def bom_stripped(self):
        return sum(i.bom_stripped for i in self.inputs)

    @property
    def bytes_read(self):
        return sum(i.bytes_read for i in self.inputs)

    def identity(self):
        """None when a side is a stream: the pair cannot be recognised on a resumed run."""
        identities = [i.identity() for i in self.inputs]
        if None in identities:
            return None
        return {"source": identities[0], "target": identities[1]}

    def chunks(self, chunk_lines, lines_done=0, offset=None):
        """As LineInput.chunks; `offset` is ignored (two files have two), lines are skipped."""
        both = [i.chunks(chunk_lines, lines_done=lines_done if i.total_lines is None
                         else min(lines_done, i.total_lines))
                for i in self.inputs]
        read = lines_done
        while True:
            parts = [next(chunks, (None, None))[0] for chunks in both]
            if parts == [None, None]:
                return
            sizes = [len(part or []) for part in parts]
            if sizes[0] != sizes[1] and not self.pad_shorter:
                # Each side comes in whole chunks until its end: the shorter one has ended.
                shorter = sizes.index(min(sizes))
                ended, longer = self.inputs[shorter], self.inputs[1 - shorter]
                raise UserError(f"{ended.name} ended after "
                                f"{counted(read + min(sizes), 'line')} but "
                                f"{longer.name} has more: the inputs are not parallel; "
                                f"{self.pad_flag} scores the missing side as empty")
            read += max(sizes)
            sources, targets = (part or [] for part in parts)
            width = max(len(sources), len(targets))
            yield list(zip(sources + [None] * (width - len(sources)),
                           targets + [None] * (width - len(targets)))), None
