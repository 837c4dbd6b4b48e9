"""Shared plumbing for the thin CLIs in bin/: quiet TF logs, one-line user errors."""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from absl import app  # noqa: E402

from t2t_lite.errors import UserError  # noqa: E402


def run(main):
    """absl.app.run(main), with UserError turned into `error: ...` on stderr and exit status 1."""

    def guarded(argv):
        try:
            return main(argv)
        except UserError as error:
            print(f"error: {error}", file=sys.stderr)
            sys.exit(1)

    try:
        app.run(guarded)
    except app.UsageError as error:  # raised by absl for unknown / malformed flags
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
