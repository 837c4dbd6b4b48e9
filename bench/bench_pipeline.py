"""Input pipeline throughput and padding, against what training consumes on this machine.

    python bench/bench_pipeline.py [--problem=translate_ende_gettext] [--data_dir=D]
        [--batch_tokens=4096] [--max_length=256] [--seconds=20] [--hparams_set=base]
        [--train_steps=3]

Prints the real (non-pad) tokens/s the tf.data pipeline delivers, its padding fraction, and the
tokens/s one training step of --hparams_set consumes on the same batches (forward + backward +
Adam, on this machine); their ratio says how far the pipeline is from being a bottleneck.
Without --data_dir the problem's data is generated into a temporary directory first.
"""
import argparse
import os
import shutil
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import tensorflow as tf  # noqa: E402

from t2t_lite import registry  # noqa: E402


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
    """Real target tokens/s that training steps consume (None if the model is unavailable)."""
    try:
        import keras
        from t2t_lite import hparams
        from t2t_lite.models.transformer import Transformer
        from t2t_lite.training.loss import token_statistics
    except ImportError as e:
        print(f"training comparison skipped: {e}")
        return None
    model_config, train_config = hparams.load(hparams_set)[:2]
    model = Transformer(model_config, vocab_size)
    optimizer = keras.optimizers.Adam(1e-4, beta_1=0.9, beta_2=0.98, epsilon=1e-9)

    @tf.function(reduce_retracing=True)
    def step(batch):
        with tf.GradientTape() as tape:
            logits = model(batch, training=True)
            stats = token_statistics(logits, batch["targets"], 0.1)
            loss = stats["loss"] / tf.maximum(stats["tokens"], 1.0)
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return stats["tokens"]

    iterator = iter(dataset)
    step(next(iterator))  # build + trace
    tokens, elapsed = 0.0, 0.0
    for _ in range(steps):
        batch = next(iterator)
        start = time.time()
        tokens += float(step(batch))  # retraces per new shape are part of real training too
        elapsed += time.time() - start
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

    problem = registry.problem(args.problem)
    data_dir = args.data_dir or tempfile.mkdtemp(prefix="bench_pipeline_")
    problem.generate_data(data_dir)
    dataset = problem.dataset("train", data_dir, batch_tokens=args.batch_tokens,
                              max_length=args.max_length)
    real, padded, batches, elapsed = measure_pipeline(dataset, args.seconds)
    delivered = real["targets"] / elapsed
    print(f"pipeline: {batches} batches in {elapsed:.1f}s, {delivered:,.0f} real target tokens/s "
          f"({real['inputs'] / elapsed:,.0f} source), budget {args.batch_tokens} tokens/batch")
    for key in real:
        print(f"  {key}: padding fraction {1 - real[key] / padded[key]:.3f}, "
              f"{padded[key] / batches:,.0f} padded tokens per batch")
    if args.train_steps:
        try:
            consumed = measure_training(dataset, problem.tokenizer(data_dir).vocab_size,
                                        args.hparams_set, args.train_steps)
        except (tf.errors.OpError, ValueError) as e:
            print(f"training comparison failed: {' '.join(str(e).split())[:300]}")
            consumed = None
        if consumed:
            print(f"training ({args.hparams_set}, {os.cpu_count()} CPU cores): {consumed:,.0f} "
                  f"target tokens/s consumed; pipeline/training ratio {delivered / consumed:,.1f}x")
    if args.data_dir is None:
        shutil.rmtree(data_dir)


if __name__ == "__main__":
    main()
