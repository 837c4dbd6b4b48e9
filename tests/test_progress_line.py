"""The one progress printer: rate-limited, an ETA over a known total, the final count once."""
import io

from t2t_lite.progress_line import ProgressLine, format_duration


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_progress_line_is_rate_limited_has_an_eta_and_prints_the_end_once():
    clock, stream = Clock(), io.StringIO()
    line = ProgressLine("decoded", "lines", total=100, initial=20, stream=stream, interval=5.0,
                        clock=clock)
    clock.now += 1
    assert not line(30)  # within the interval
    clock.now += 9
    assert line(60)  # 40 lines in 10 s since start, 40 to go: eta 10 s
    assert stream.getvalue() == "decoded 60/100 lines (4.0 lines/s, elapsed 0m10s, eta 0m10s)\n"
    assert line(100) and not line(100)  # the end is printed at once, and once
    assert stream.getvalue().count("100/100") == 1


def test_unknown_total_shows_what_is_known_and_no_eta():
    clock, stream = Clock(), io.StringIO()
    line = ProgressLine("scored", "pairs", stream=stream, clock=clock)
    clock.now += 2
    assert line(10, detail="1,024 bytes read", force=True)
    assert stream.getvalue() == "scored 10 pairs (5.0 pairs/s, elapsed 0m02s, 1,024 bytes read)\n"
    assert format_duration(3725) == "1h02m" and format_duration(-5) == "0m00s"


def test_counts_take_the_singular_for_one():
    from t2t_lite.progress_line import counted

    assert [counted(n, "line") for n in (0, 1, 2)] == ["0 lines", "1 line", "2 lines"]
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"
