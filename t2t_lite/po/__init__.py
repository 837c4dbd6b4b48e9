"""The gettext catalog tool's pieces.

- formats: msgfmt's reading of c-format, objc-format, python-format and python-brace-format
  strings, and msgfmt -c's verdict on a translation (format directives, newlines,
  accelerators).
- plural: a Plural-Forms header value parsed and evaluated as msgfmt does (never eval).
"""
