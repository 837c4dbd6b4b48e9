"""The format version of each file t2t_lite writes for a later t2t_lite to read, in one place.

A model_dir's configs.json, a SavedModel export's assets.extra/t2t_lite.json and a CTranslate2
folder's t2t_lite.json each hold `"format_version": N`. Each format has its own number, which goes
up when a change to its file (a field added, removed, or given another meaning) would make an
earlier t2t_lite misread it; a reader takes every format from `oldest` to `written`. A file
without the field is format 1. A file of a format this t2t_lite does not read is refused in one
line that names the file's format and the formats this t2t_lite reads, before any other value of
the file is looked at (so a newer layout never reaches the "bad configuration" checks).

docs/reference.md's Compatibility section is rendered from this module (`reference_section`).
"""
import dataclasses

from t2t_lite import __version__
from t2t_lite.errors import UserError

FIELD = "format_version"


@dataclasses.dataclass(frozen=True)
class Format:
    """One file format: the version this t2t_lite writes and the oldest it still reads."""

    name: str  # what the file belongs to, for people
    file: str  # where it is, for people
    written: int
    oldest: int
    older: str  # what to do with a file older than `oldest`

    def reads(self):
        """The formats read, as the messages and the reference page say them."""
        return (str(self.written) if self.oldest == self.written
                else f"{self.oldest} to {self.written}")


MODEL_DIR = Format("model_dir", "`M/configs.json`", written=2, oldest=1,
                   older="read it with an older t2t_lite")
SAVED_MODEL = Format("SavedModel export", "`E/<n>/assets.extra/t2t_lite.json`", written=1,
                     oldest=1, older="export its model_dir again")
CTRANSLATE2 = Format("CTranslate2 folder", "`F/t2t_lite.json`", written=1, oldest=1,
                     older="export its model_dir again")
FORMATS = (MODEL_DIR, SAVED_MODEL, CTRANSLATE2)


def stamped(values, fmt):
    """`values` (a dict to be written as JSON) with `fmt`'s version as its first key."""
    return {FIELD: fmt.written, **{k: v for k, v in values.items() if k != FIELD}}


def check_version(values, fmt, where):
    """The format version of `values` (a file's JSON object, read from `where`): absent is 1.
    UserError in one line unless this t2t_lite reads it."""
    found = values.get(FIELD, 1) if isinstance(values, dict) else 1
    if not isinstance(found, int) or isinstance(found, bool) or found < 1:
        raise UserError(f"{where} has {FIELD} {found!r:.40}, not a positive integer; the file is "
                        "damaged or was edited")
    if not fmt.oldest <= found <= fmt.written:
        remedy = "upgrade t2t_lite" if found > fmt.written else fmt.older
        raise UserError(f"{where} has format {found}; this t2t_lite ({__version__}) reads format "
                        f"{fmt.reads()}: {remedy}")
    return found


def reference_section():
    """docs/reference.md's Compatibility section, as lines."""
    lines = [
        "## Compatibility",
        "",
        "Each file a t2t_lite tool writes for a later tool to read holds its format version as "
        f'`"{FIELD}": N`. This t2t_lite ({__version__}) writes and reads these formats:',
        "",
        "| what | file | format written | formats read |",
        "|---|---|---|---|",
    ]
    lines += [f"| {fmt.name} | {fmt.file} | {fmt.written} | {fmt.reads()} |" for fmt in FORMATS]
    lines += [
        "",
        f"- A file without `{FIELD}` is read as format 1.",
        "- A format's number goes up when a change to its file (a field added, removed or given "
        "another meaning) would make an earlier t2t_lite misread it. Each number counts on its "
        "own: a new export format leaves model_dirs as they are.",
        "- A file of a newer format than this t2t_lite reads is refused in one line that names "
        "both, before anything loads: `error: runs/ende/configs.json has format 2; this t2t_lite "
        f"({__version__}) reads format 1: upgrade t2t_lite`. A format older than the oldest one "
        "read is refused the same way, saying what to do instead.",
        "- The trainer writes configs.json in the format it writes: training on a model_dir with "
        "a newer t2t_lite can make the model_dir unreadable to an older one. Exports are never "
        "rewritten; export again to get the newer format.",
        "- The checkpoints and SavedModels themselves are TensorFlow's formats; the format "
        "versions cover t2t_lite's own files beside them.",
    ]
    return lines
