"""OUTPUT.t2t-po-work: the folder where t2t-lite-po keeps an unfinished run's work.

It holds a marker (what identifies the run: the catalog's digest, the model, the settings) and
the engine's journal of finished chunks (po/engine.py). A killed run re-run with the same command
continues from the journal; another catalog, model or setting is refused unless --start_over.
The folder goes, file by file, when the output is written; a folder holding files the tool did
not write is never removed.
"""
import json
import os
import sys

from t2t_lite import atomic
from t2t_lite.errors import UserError
from t2t_lite.inference import resume

SUFFIX = ".t2t-po-work"
JOURNAL = "journal.jsonl"
_MARKER = "t2t-po-work.json"
_KIND = "t2t-lite-po work folder"


class WorkFolder:
    """OUTPUT.t2t-po-work: made and owned by this tool (a marker file says so, with what
    identifies the run), kept by a killed run, removed, file by file, when the output is done."""

    def __init__(self, path, identity, start_over):
        self.path, self.identity = path, identity
        marker = os.path.join(path, _MARKER)
        if os.path.lexists(path):
            recorded = _read_marker(marker)
            if recorded is None:
                raise UserError(f"{path} exists and is not a t2t-lite-po work folder; move it "
                                "away to write the output")
            if start_over:
                self.remove()
            elif recorded.get("run") != identity:
                difference = resume.first_difference(recorded.get("run"), identity)
                raise UserError(f"{path} holds an unfinished run of another catalog, model or "
                                f"setting ({difference}); re-run with --start_over to translate "
                                "from the start")
        made = not os.path.lexists(path)
        os.makedirs(path, exist_ok=True)
        try:
            atomic.write_json(marker, {"kind": _KIND, "run": identity}, indent=1,
                              sort_keys=True)
        except BaseException:
            if made:  # a full disk: the folder would stop the re-run that finishes
                os.rmdir(path)
            raise

    @property
    def journal(self):
        return os.path.join(self.path, JOURNAL)

    def remove(self):
        """Removes what this tool writes here; a folder holding anything else
        stays (it is not ours to delete)."""
        if not os.path.isdir(self.path) or os.path.islink(self.path):
            return
        for name in os.listdir(self.path):
            if name in (_MARKER, JOURNAL):
                os.remove(os.path.join(self.path, name))
        try:
            os.rmdir(self.path)
        except OSError:
            print(f"kept {self.path}: it holds files t2t-lite-po did not write", file=sys.stderr)


def _read_marker(path):
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("kind") == _KIND else None
