"""Where a line ends, in every file t2t_lite reads line by line (the decoder's and the scorer's
inputs, the translation and reference files BLEU reads, training text through data/text_io.py):
at "\\n" only, so a stray "\\r" inside a line never makes one; the "\\r" of a Windows "\\r\\n"
belongs to the line end; a last line without "\\n" is a line too."""

NEWLINE = b"\n"


def without_line_end(line):
    """A line (bytes or str; its "\\n" already cut off or not) without its end: the "\\n", then
    the "\\r" of a "\\r\\n"."""
    newline, carriage_return = ("\n", "\r") if isinstance(line, str) else (b"\n", b"\r")
    if line.endswith(newline):
        line = line[:-1]
    return line[:-1] if line.endswith(carriage_return) else line


def split_lines(text):
    """A whole text's lines (str or bytes), each without its end."""
    lines = text.split("\n" if isinstance(text, str) else NEWLINE)
    if not lines[-1]:
        lines.pop()  # the final newline ends the last line; it does not start a new one
    return [without_line_end(line) for line in lines]
