"""Progress lines on stderr: one rate-limited printer with a rate and an ETA, for every tool, and
the counts a tool's summary prints ("1 line", "2 lines")."""
import sys
import time


def format_duration(seconds):
    """Seconds -> "1h02m" or "3m07s" (negative counts as 0)."""
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


def counted(count, noun, plural=None):
    """"1 line", "0 lines", "3 entries", "1,200 lines" (plural: the noun's plural when not
    noun + "s")."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


class ProgressLine:
    """Prints "<verb> done/total <unit> (rate <unit>/s, elapsed, eta)" at most every `interval`
    seconds, and always for the last item. `total` may be None (unknown, e.g. a pipe): then no
    ETA is shown, and `detail` (a string) may say what is known instead. `initial`: items done
    before this process started (a resumed run), counted in `done` but not in the rate."""

    def __init__(self, verb, unit, total=None, initial=0, stream=sys.stderr, interval=5.0,
                 clock=time.monotonic):
        self.verb, self.unit, self.total, self.initial = verb, unit, total, initial
        self.stream, self.interval, self.clock = stream, interval, clock
        self.start = self.last = clock()
        self.finished_printed = False

    def __call__(self, done, total=None, detail=None, force=False):
        total = self.total if total is None else total
        now = self.clock()
        finished = total is not None and done >= total
        if finished and self.finished_printed:
            return False
        if not (force or finished) and now - self.last < self.interval:
            return False
        self.last, self.finished_printed = now, finished
        elapsed = max(now - self.start, 1e-9)
        rate = (done - self.initial) / elapsed
        count = f"{done}/{total}" if total is not None else f"{done}"
        parts = [f"{rate:.1f} {self.unit}/s", f"elapsed {format_duration(elapsed)}"]
        if total is not None and not finished and rate > 0:
            parts.append(f"eta {format_duration((total - done) / rate)}")
        if detail:
            parts.append(detail)
        print(f"{self.verb} {count} {self.unit} ({', '.join(parts)})", file=self.stream, flush=True)
        return True
