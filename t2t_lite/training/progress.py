"""Training feedback: a progress line on stderr and TensorBoard summaries, each a loop hook."""
import math
import sys
import time

import tensorflow as tf

from t2t_lite.progress_line import format_duration
from t2t_lite.training.hooks import Hook


class Progress(Hook):
    """Accumulates step statistics; prints one line every `every` steps and at the last step.

    The line's values go to state.train_metrics (for the summaries) when it is printed; at the
    end, the run's last values go to state.last_train_metrics.
    """

    def __init__(self, every=50, stream=None):
        # None: whatever sys.stderr is when a line is printed (a default bound at import would
        # keep a stream someone has since replaced and closed).
        self.every, self._stream = every, stream
        self.total_steps, self.deadline = None, None
        self.last_values = None  # the most recent report's values
        self.total_target_tokens = 0.0
        self.total_source_tokens = 0.0
        self.start = time.monotonic()
        self._reset(self.start)

    def _reset(self, now):
        self._since = now
        self._sums = {}
        self._steps = 0

    def begin(self, state):
        self.total_steps, self.deadline = state.total_steps, state.deadline
        self.start = time.monotonic()
        self._reset(self.start)

    def after_step(self, state):
        self.total_steps = state.total_steps  # the budget plan may have moved it
        for key, value in state.stats.items():
            self._sums[key] = self._sums.get(key, 0.0) + float(value)
        self._steps += 1
        self.total_target_tokens += float(state.stats["tokens"])
        self.total_source_tokens += float(state.stats["source_tokens"])
        if state.step % self.every == 0 or state.step == self.total_steps:
            state.train_metrics = self.report(state.step, state.learning_rate)

    def end(self, state):
        state.train_metrics = self.report(state.step, state.learning_rate)
        state.last_train_metrics = state.train_metrics or self.last_values

    def report(self, step, learning_rate):
        """Prints the line for the steps since the last one; returns its values (None when no
        step was taken since)."""
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
        eta = (self.total_steps - step) / max(values["steps_per_second"], 1e-9)
        if self.deadline is not None:
            eta = min(eta, self.deadline - now)
        print(f"step {step}/{self.total_steps}  loss {loss:.4f}  ppl {values['perplexity']:.2f}  "
              f"acc {values['token_accuracy']:.3f}  lr {values['learning_rate']:.2e}  "
              f"{values['target_tokens_per_second']:.0f} tok/s  "
              f"elapsed {format_duration(now - self.start)}  eta {format_duration(eta)}",
              file=self._stream or sys.stderr, flush=True)
        self._reset(now)
        self.last_values = values
        return values


class Summaries(Hook):
    """TensorBoard scalars: the progress line's values under train/, dev metrics under dev/. The
    events file is created at the first write, not when the hook is made: a run that trains no
    step (a finished command re-run) leaves no new file in the model_dir."""

    def __init__(self, summary_dir):
        self._summary_dir, self._writer = summary_dir, None

    @property
    def writer(self):
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self._summary_dir)
        return self._writer

    def after_step(self, state):
        self._write(state)

    def end(self, state):
        self._write(state)

    def _write(self, state):
        for prefix, values in (("train", state.train_metrics), ("dev", state.dev_metrics)):
            if not values:
                continue
            with self.writer.as_default(step=state.step):
                for key, value in values.items():
                    tf.summary.scalar(f"{prefix}/{key}", value)
            self.writer.flush()
