"""gettext's msgfmt as the judge of a catalog before t2t-lite-po writes it.

`errors(data)` runs `msgfmt --check --use-fuzzy` and `--check-accelerators` for each mark over
a catalog's bytes (never a file of the user's) and returns msgfmt's fatal errors as (line,
message). t2t-lite-po checks every entry itself first (po/entries.py, with msgfmt's own reading of
formats), so msgfmt finding one of its entries wrong is a bug the tool survives: that entry is left
untranslated and the catalog judged again. Without msgfmt on PATH the judge is skipped, and the
tool says so once.
"""
import os
import re
import shutil
import subprocess

from t2t_lite.po import accelerators

_ERROR = re.compile(r"^<stdin>:(\d+):(?:\d+:)? (.*)$")


def available():
    return shutil.which("msgfmt") is not None


def _run(data, options):
    result = subprocess.run(
        [shutil.which("msgfmt"), *options, "-o", os.devnull, "-"], input=data,
        capture_output=True, env=dict(os.environ, LC_ALL="C", LANGUAGE=""), check=False)
    found = []
    for line in result.stderr.decode("utf-8", "replace").splitlines():
        match = _ERROR.match(line)
        if match and not match.group(2).startswith("warning:"):
            found.append((int(match.group(1)), match.group(2)))
    if result.returncode != 0 and not found:
        found.append((0, result.stderr.decode("utf-8", "replace").strip()[-300:]
                      or f"msgfmt exited with status {result.returncode}"))
    return found


def errors(data, accelerator_marks=accelerators.MARKS):
    """msgfmt's fatal errors for catalog bytes: [(line, message)], [] when it accepts them, None
    without msgfmt. The format and header checks, and the accelerator check per mark."""
    if not available():
        return None
    found = _run(data, ["--check", "--use-fuzzy"])
    for mark in accelerator_marks:
        found += [error for error in _run(data, ["--use-fuzzy", f"--check-accelerators={mark}"])
                  if "accelerator" in error[1]]
    return sorted(set(found))
