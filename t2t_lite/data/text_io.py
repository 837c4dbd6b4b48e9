"""Streaming readers for parallel text that never crash on bad input.

Readers yield (source, target) pairs as raw bytes (Problem decodes and validates them) or a
`Skipped(reason)` marker for input they cannot pair up, so every bad line is counted and
reported instead of silently dropped. Lines are read with a byte bound: an absurdly long line
(a corrupt file without newlines) never lands in memory whole.
"""
import bz2
import collections
import gzip
import lzma

from t2t_lite.data.lines import without_line_end

# Longest line (bytes) a reader keeps; longer lines are skipped as "too_long". Far above any
# sentence, far below what would hurt memory.
MAX_LINE_BYTES = 1 << 16

Skipped = collections.namedtuple("Skipped", ["reason"])
Skipped.__doc__ = "A sample the reader saw but could not use; `reason` is a short snake_case tag."


def open_binary(path):
    """Opens plain, .gz, .bz2 or .xz files for binary reading."""
    if path.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.endswith(".bz2"):
        return bz2.open(path, "rb")
    if path.endswith(".xz"):
        return lzma.open(path, "rb")
    return open(path, "rb")


def bounded_lines(f, max_bytes=MAX_LINE_BYTES):
    """Yields lines without their end (data/lines.py's one rule: "\n", and the "\r" of a
    "\r\n"); a line over max_bytes becomes `Skipped("too_long")`."""
    while True:
        line = f.readline(max_bytes + 1)
        if not line:
            return
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):  # drain the rest of the oversized line
                line = f.readline(max_bytes + 1)
            yield Skipped("too_long")
            continue
        yield without_line_end(line)


def read_parallel_files(source_path, target_path, max_bytes=MAX_LINE_BYTES):
    """Pairs line i of source_path with line i of target_path; extra lines are "unpaired_line"."""
    with open_binary(source_path) as fs, open_binary(target_path) as ft:
        sources, targets = bounded_lines(fs, max_bytes), bounded_lines(ft, max_bytes)
        sentinel = object()
        while True:
            s, t = next(sources, sentinel), next(targets, sentinel)
            if s is sentinel and t is sentinel:
                return
            if s is sentinel or t is sentinel:
                yield Skipped("unpaired_line")
            elif isinstance(s, Skipped):
                yield s
            elif isinstance(t, Skipped):
                yield t
            else:
                yield s, t


def read_tsv(path, source_column=0, target_column=1, num_columns=2, max_bytes=MAX_LINE_BYTES):
    """Yields (source, target) from a tab-separated file; rows with another column count are
    "wrong_column_count" (num_columns=None accepts any count that has both columns)."""
    needed = max(source_column, target_column) + 1
    with open_binary(path) as f:
        for line in bounded_lines(f, max_bytes):
            if isinstance(line, Skipped):
                yield line
                continue
            columns = line.split(b"\t")
            if (num_columns is not None and len(columns) != num_columns) or len(columns) < needed:
                yield Skipped("wrong_column_count")
                continue
            yield columns[source_column], columns[target_column]
