"""The one exception type that means "the user asked for something wrong".

CLIs catch UserError and print a single `error: ...` line with a non-zero exit; anything else is a
bug and keeps its traceback.
"""


class UserError(ValueError):
    """A mistake in flags, names, files or data that the user can fix."""
