"""Where a line ends: "\\n" only, with the "\\r" of a "\\r\\n"; a last line without "\\n" counts."""
from t2t_lite.data import lines


def test_only_a_newline_ends_a_line():
    assert lines.split_lines("a\r\nb\rc\n\nd") == ["a", "b\rc", "", "d"]
    assert lines.split_lines(b"a\r\nb\rc\n\nd\n") == [b"a", b"b\rc", b"", b"d"]
    assert lines.split_lines("") == [] and lines.split_lines("\n") == [""]


def test_a_line_loses_its_end_once():
    assert lines.without_line_end(b"a\r\n") == b"a"
    assert lines.without_line_end(b"a\r") == b"a"  # its "\n" cut off by the reader
    assert lines.without_line_end("a\r\r\n") == "a\r"
    assert lines.without_line_end("a\rb") == "a\rb"


def test_training_text_ends_its_lines_by_the_same_rule():
    import io

    from t2t_lite.data import text_io

    raw = b"a\r\nb\r\r\nc\rd\ne\n\nf"
    assert list(text_io.bounded_lines(io.BytesIO(raw))) == lines.split_lines(raw) == [
        b"a", b"b\r", b"c\rd", b"e", b"", b"f"]
