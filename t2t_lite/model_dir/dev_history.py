"""The dev evaluations a run made (model_dir/dev_evaluations.jsonl), which is better, and which
checkpoints to average when the dev score says the run stopped improving.

The trainer appends one JSON line per dev evaluation ({"step": N, "loss": ..., "bleu": ...});
a resumed run appends to the same file. The averager reads it for `--window=dev`.
"""
import contextlib
import json
import os

from t2t_lite import atomic, process_end

HISTORY = "dev_evaluations.jsonl"
# Metrics where higher is better, checked in this order; without them, lower loss is better.
PRIMARY_METRICS = ("bleu", "f1")
# Checkpoints whose dev score is this close to the best count as "at the best" for averaging:
# a relative share of the loss, or points of BLEU / F1.
NEAR_BEST_LOSS = 0.01
NEAR_BEST_POINTS = 0.5


def is_better(metrics, best):
    """Higher BLEU (translation) or bracket F1 (parsing) wins when both have it; else lower loss."""
    if best is None:
        return True
    for key in PRIMARY_METRICS:
        if key in metrics and key in best:
            return metrics[key] > best[key]
    return metrics["loss"] < best["loss"]


def near_best(metrics, best):
    """Whether `metrics` is within the averaging tolerance of `best`, on the metric is_better
    compares."""
    for key in PRIMARY_METRICS:
        if key in metrics and key in best:
            return metrics[key] >= best[key] - NEAR_BEST_POINTS
    return metrics["loss"] <= best["loss"] * (1.0 + NEAR_BEST_LOSS)


def append(model_dir, step, metrics):
    """Adds one evaluation to the run's history, one whole line: a write that fails (a full disk)
    cuts the file back to the records before it, so the next one starts a line of its own; a
    line cut off by a kill is ended first. process_end.WriteFailed says what failed."""
    record = {"step": int(step), **{k: float(v) for k, v in metrics.items()
                                    if isinstance(v, (int, float)) and k != "step"}}
    path = os.path.join(model_dir, HISTORY)
    # A metric that is no number (a diverged loss) is null: strict JSON has no Infinity or NaN.
    data = (json.dumps(atomic.finite(record), sort_keys=True, allow_nan=False)
            + "\n").encode("utf-8")
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as error:
        if process_end.is_write_failure(error):
            raise process_end.write_failed(error, path) from None
        raise
    try:
        size = os.fstat(descriptor).st_size
        if size and os.pread(descriptor, 1, size - 1) != b"\n":
            data = b"\n" + data  # a record cut off by a kill stays a line of its own
        try:
            while data:
                data = data[os.write(descriptor, data):]
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, size)
            if process_end.is_write_failure(error):
                raise process_end.write_failed(
                    error, path, f"the evaluations before step {int(step)} are kept") from None
            raise
    finally:
        os.close(descriptor)


def read(model_dir):
    """{step: metrics} of every evaluation recorded (a step evaluated twice: the later one).
    Lines cut off by a killed run are skipped."""
    history = {}
    path = os.path.join(model_dir, HISTORY)
    if not os.path.exists(path):
        return history
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                record = json.loads(line)
                step = int(record.pop("step"))
                history[step] = {key: _worst(key) if value is None else value
                                 for key, value in record.items()}
            except (ValueError, KeyError, TypeError):
                continue
    return history


def _worst(key):
    """What a null metric (written for one that was no number) reads as: the worst score."""
    return float("-inf") if key in PRIMARY_METRICS else float("inf")


def reset(model_dir):
    """Forgets the history (a fresh run in a model_dir whose checkpoints were removed)."""
    atomic.write_text(os.path.join(model_dir, HISTORY), "")


def choose_window(checkpoints, history, num_last):
    """The checkpoints to average and why, given (step, path) pairs in step order and the dev
    history.

    The paper averages the last N checkpoints, which is right while the run still improves.
    When the best dev evaluation lies before those N (the run stopped improving: it overfits or
    diverged late), the average is taken where the dev score is best instead: the best evaluated
    checkpoint and the evaluated checkpoints next to it whose score is within the tolerance of
    the best (NEAR_BEST_*), at most N, nearest first.
    """
    last = checkpoints[-num_last:]
    # Whether the run stopped improving is judged on every evaluation, kept checkpoint or not
    # (the trainer writes none for an evaluation inside the planned averaging window).
    overall = _best_step(history, history)
    if overall is not None and overall >= last[0][0]:
        return last, (f"the last {len(last)}: the best dev evaluation (step {overall}) is "
                      "among them")
    evaluated = [(step, path) for step, path in checkpoints if step in history]
    if not evaluated:
        return last, f"the last {len(last)} (no dev evaluation of a kept checkpoint)"
    best_step = _best_step([step for step, _ in evaluated], history)
    best = history[best_step]
    index = [step for step, _ in evaluated].index(best_step)
    chosen = [evaluated[index]]
    below, above = index - 1, index + 1
    while len(chosen) < num_last:
        candidates = [i for i in (below, above) if 0 <= i < len(evaluated)
                      and near_best(history[evaluated[i][0]], best)]
        if not candidates:
            break
        nearest = min(candidates, key=lambda i: abs(evaluated[i][0] - best_step))
        chosen.append(evaluated[nearest])
        if nearest == below:
            below -= 1
        else:
            above += 1
    chosen.sort()
    latest = max(history)
    return chosen, (f"dev stopped improving: best at step {best_step} ({_score(best)}), "
                    f"{_score(history[latest])} at step {latest}; the {len(chosen)} evaluated "
                    f"checkpoints within {_tolerance(best)} of the best")


def _best_step(steps, history):
    """The step among `steps` whose evaluation is best (the earliest of equals); None if none."""
    best_step = None
    for step in sorted(steps):
        if is_better(history[step], history[best_step] if best_step is not None else None):
            best_step = step
    return best_step


def _score(metrics):
    for key in PRIMARY_METRICS:
        if key in metrics:
            return f"{key} {metrics[key]:.2f}"
    return f"loss {metrics['loss']:.4f}"


def _tolerance(metrics):
    for key in PRIMARY_METRICS:
        if key in metrics:
            return f"{NEAR_BEST_POINTS} {key}"
    return f"{NEAR_BEST_LOSS:.0%} loss"
