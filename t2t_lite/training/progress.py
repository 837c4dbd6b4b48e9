"""Training feedback: a progress line on stderr and TensorBoard summaries."""
import math
import sys
import time

import tensorflow as tf


def _duration(seconds):
    seconds = int(max(seconds, 0))
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Progress:
    """Accumulates step statistics; prints one line and writes summaries every `every` steps."""

    def __init__(self, summary_dir, total_steps, deadline=None, every=50, stream=sys.stderr,
                 write_summaries=True):
        self.total_steps, self.deadline, self.every, self.stream = total_steps, deadline, every, stream
        self.writer = tf.summary.create_file_writer(summary_dir) if write_summaries else None
        self._reset(time.monotonic())
        self.start = time.monotonic()
        self.last_values = None  # the most recent report's values
        self.total_target_tokens = 0.0
        self.total_source_tokens = 0.0

    def _reset(self, now):
        self._since = now
        self._sums = {}
        self._steps = 0

    def update(self, step, stats, learning_rate):
        for key, value in stats.items():
            self._sums[key] = self._sums.get(key, 0.0) + float(value)
        self._steps += 1
        self.total_target_tokens += float(stats["tokens"])
        self.total_source_tokens += float(stats["source_tokens"])
        if step % self.every == 0 or step == self.total_steps:
            self.report(step, learning_rate)

    def report(self, step, learning_rate):
        if not self._steps:
            return None
        now = time.monotonic()
        elapsed = max(now - self._since, 1e-9)
        tokens = max(self._sums["tokens"], 1.0)
        loss = self._sums["loss"] / tokens
        nll = self._sums["nll"] / tokens
        values = {
            "loss": loss, "perplexity": math.exp(min(nll, 50.0)),
            "token_accuracy": self._sums["correct"] / tokens,
            "learning_rate": float(learning_rate),
            "target_tokens_per_second": self._sums["tokens"] / elapsed,
            "grad_norm": self._sums.get("grad_norm", 0.0) / self._steps,
            "steps_per_second": self._steps / elapsed,
        }
        remaining_steps = (self.total_steps - step) / max(values["steps_per_second"], 1e-9)
        eta = remaining_steps
        if self.deadline is not None:
            eta = min(eta, self.deadline - now)
        print(f"step {step}/{self.total_steps}  loss {loss:.4f}  ppl {values['perplexity']:.2f}  "
              f"acc {values['token_accuracy']:.3f}  lr {values['learning_rate']:.2e}  "
              f"{values['target_tokens_per_second']:.0f} tok/s  "
              f"elapsed {_duration(now - self.start)}  eta {_duration(eta)}",
              file=self.stream, flush=True)
        self.scalars("train", step, values)
        self._reset(now)
        self.last_values = values
        return values

    def scalars(self, prefix, step, values):
        if self.writer is None:
            return
        with self.writer.as_default(step=step):
            for key, value in values.items():
                tf.summary.scalar(f"{prefix}/{key}", value)
        self.writer.flush()
