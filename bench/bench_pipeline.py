"""Input pipeline throughput and padding, against what training consumes on this machine.

    python bench/bench_pipeline.py [--problem=translate_ende_gettext] [--data_dir=D]
        [--batch_tokens=4096] [--max_length=256] [--seconds=20] [--hparams_set=base]
        [--train_steps=3]

Prints the real (non-pad) tokens/s the tf.data pipeline delivers, its padding fraction, and the
tokens/s the trainer's own step of --hparams_set (forward, label-smoothed loss, backward, Adam; on
this machine, float32) consumes on the same batches; their ratio says how far the pipeline is
from being a bottleneck.
Without --data_dir the problem's data is generated into a temporary directory first.
"""
import argparse
import os
import time

import harness

harness.tensorflow_env()

import tensorflow as tf  # noqa: E402

from t2t_lite import problems  # noqa: E402


def measure_pipeline(dataset, seconds):
    real = {"inputs": 0, "targets": 0}
    padded = {"inputs": 0, "targets": 0}
    batches = 0
    iterator = iter(dataset)
    next(iterator)  # start-up (file opening, first shuffle buffer fill) is not throughput
    start = time.time()
    while time.time() - start < seconds:
        batch = next(iterator)
        for key in real:
            ids = batch[key]
            real[key] += int(tf.math.count_nonzero(ids))
            padded[key] += int(tf.size(ids))
        batches += 1
    elapsed = time.time() - start
    return real, padded, batches, elapsed


def measure_training(dataset, vocab_size, hparams_set, steps):
    """Real target tokens/s that the trainer's steps consume."""
    _, _, train_steps = harness.train_steps(hparams_set, [], "float32", vocab_size)

    def step(batch):
        batch = {key: tf.cast(batch[key], tf.int32) for key in ("inputs", "targets")}
        return float(train_steps.final_step(batch)["tokens"])

    iterator = iter(dataset)
    step(next(iterator))  # build + trace
    tokens, elapsed = 0.0, 0.0
    for _ in range(steps):
        # Retraces per new shape are part of real training too.
        seconds, consumed = harness.timed(step, next(iterator))
        tokens += consumed
        elapsed += seconds
    return tokens / elapsed


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--problem", default="translate_ende_gettext")
    parser.add_argument("--data_dir", default=None)
    parser.add_argument("--batch_tokens", type=int, default=4096)
    parser.add_argument("--max_length", type=int, default=256)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--hparams_set", default="base")
    parser.add_argument("--train_steps", type=int, default=3)
    args = parser.parse_args()

    problem = problems.build(args.problem)
    with harness.scratch_dir("bench_pipeline_", args.data_dir) as data_dir:
        problem.generate_data(data_dir)
        dataset = problem.dataset("train", data_dir, batch_tokens=args.batch_tokens,
                                  max_length=args.max_length)
        real, padded, batches, elapsed = measure_pipeline(dataset, args.seconds)
        delivered = real["targets"] / elapsed
        print(f"pipeline: {batches} batches in {elapsed:.1f}s, {delivered:,.0f} real target "
              f"tokens/s ({real['inputs'] / elapsed:,.0f} source), budget {args.batch_tokens} "
              "tokens/batch")
        for key in real:
            print(f"  {key}: padding fraction {1 - real[key] / padded[key]:.3f}, "
                  f"{padded[key] / batches:,.0f} padded tokens per batch")
        if args.train_steps:
            try:
                consumed = measure_training(dataset, problem.tokenizer(data_dir).vocab_size,
                                            args.hparams_set, args.train_steps)
            except (tf.errors.OpError, ValueError) as e:
                print(f"training comparison failed: {' '.join(str(e).split())[:300]}")
            else:
                print(f"training ({args.hparams_set}, {os.cpu_count()} CPU cores): "
                      f"{consumed:,.0f} target tokens/s consumed; pipeline/training ratio "
                      f"{delivered / consumed:,.1f}x")

if __name__ == "__main__":
    main()
