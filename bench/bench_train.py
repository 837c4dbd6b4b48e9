"""Training throughput: target tokens/s and model-FLOPs utilisation on this machine.

For each hparams set and setting, times real training steps (the trainer's own TrainSteps:
forward, label-smoothed loss, backward, Adam) on synthetic batches shaped like bucketed WMT-style
batches (no pads), or with --data_dir on the first real length-bucketed batches of a data dir
(pads included: t2t_lite trains on the real tokens only, layers/packing.py), and reports
    MFU = model FLOP/s (analytic, t2t_lite.training.flops, at each sentence's real length) /
          large-matmul FLOP/s,
with the matmul ceiling measured in the same process and precision, right before and after each
setting's timed steps (the higher one counts).

    python bench/bench_train.py                       # tiny, small, base; fp32/bf16; XLA off/on
    python bench/bench_train.py --sets=small --steps=20
    python bench/bench_train.py --sets=small_cpu --precisions=float32 --xla=off --onednn=1 \
        --data_dir=D --profile=DIR                   # real gettext batches, op-time breakdown
oneDNN is read at process start: the script re-runs itself with TF_ENABLE_ONEDNN_OPTS=0 and =1
(--onednn=both, the default) and prints one table.
"""
import argparse
import os
import re
import sys

import harness


def _op_group(path, op_type):
    """A profiler op event (name scope path, op type) -> the part of the training step it belongs
    to."""
    backward = path.startswith("gradient_tape/")
    path = path.replace("gradient_tape/", "")
    if "MatMul" in op_type or "Einsum" in op_type:
        if "feed_forward" in path:
            group = "feed-forward matmuls"
        elif "attention" in path or re.search(r"decoder_layer_\d+(_\d+)?/MatMul", path):
            # (encoder-decoder attention projects under the decoder layer's name scope)
            group = ("attention scores/context matmuls" if "BatchMatMul" in op_type
                     else "attention projection matmuls")
        elif "_layer_" in path:
            group = "other matmuls"
        else:
            # The model's own MatMul, or the packed training loss's (it computes the logits
            # itself, outside the model's scope).
            group = "logits matmul (shared embedding)"
        return group
    if "layer_norm" in path or "final_norm" in path:
        group = "layer norms"
    elif "adam" in path.lower() or "Assign" in op_type:
        group = "optimizer (Adam)"
    elif "attention" in path:
        group = "attention other (softmax, masks, transposes)"
    elif "feed_forward" in path:
        group = "feed-forward other (bias, ReLU)"
    elif "embedding" in path or "positions" in path:
        group = "embedding lookups + positions"
    elif re.match(r"transformer(_\d+)?/", path):
        group = "model other"
    else:
        group = "loss, gradient norm, other"
    return group + (" (backward)" if backward else "")


def measure(set_name, precision, jit, steps, batch_tokens, length, vocab, profile_dir="",
            data_dir="", problem="translate_ende_gettext"):
    import keras
    import numpy as np
    import tensorflow as tf

    from t2t_lite import hparams

    gin_params = [f"TrainConfig.jit_compile = {jit}"]
    if data_dir:
        max_length = hparams.load(set_name, gin_params)[1].max_length
        vocab, batches = harness.real_batches(problem, data_dir, batch_tokens, max_length)
    else:
        rows = max(1, batch_tokens // length)
        rng = np.random.default_rng(0)
        batches = [{key: tf.constant(rng.integers(3, vocab, size=(rows, length)).astype("int32"))
                    for key in ("inputs", "targets")}]
    model_config, _, train_steps = harness.train_steps(set_name, gin_params, precision, vocab)
    batch_flops = [harness.useful_flops(model_config, vocab, b["inputs"].numpy(),
                                        b["targets"].numpy()) for b in batches]
    batch_tokens_real = [int(np.sum(b["targets"].numpy() != 0)) for b in batches]
    for batch in batches[:2] + batches[:1]:  # trace / compile
        train_steps.final_step(batch)["loss"].numpy()
    ceiling_dtype = "bfloat16" if precision == "mixed_bfloat16" else "float32"

    def run_steps():
        for i in range(steps):
            stats = train_steps.final_step(batches[i % len(batches)])
        float(stats["loss"])

    # The ceiling before and after the timed steps, the higher one: on a shared machine the load
    # drifts, and a ceiling measured low would flatter the utilisation.
    ceiling = harness.matmul_flops_per_second(ceiling_dtype)
    seconds = harness.timed(run_steps)[0] / steps
    tokens_per_step = sum(batch_tokens_real[i % len(batches)] for i in range(steps)) / steps
    flops_per_step = sum(batch_flops[i % len(batches)] for i in range(steps)) / steps
    ceiling = max(ceiling, harness.matmul_flops_per_second(ceiling_dtype))
    if profile_dir:
        print(harness.op_time_table(
            lambda: [float(train_steps.final_step(batches[i % len(batches)])["loss"])
                     for i in range(3)], 3,
            os.path.join(profile_dir, f"{set_name}_{precision}_xla{int(jit)}"), _op_group),
            flush=True)
    keras.mixed_precision.set_global_policy("float32")
    return {"set": set_name, "precision": precision, "xla": jit,
            "target_tokens_per_s": tokens_per_step / seconds, "step_s": seconds,
            "model_tflops_per_s": flops_per_step / seconds / 1e12,
            "matmul_tflops_per_s": ceiling / 1e12, "mfu": flops_per_step / seconds / ceiling}


def run_here(args):
    results = []
    for set_name in args.sets.split(","):
        for precision in args.precisions.split(","):
            for jit in (False, True) if args.xla == "both" else (args.xla == "on",):
                try:
                    results.append(measure(set_name, precision, jit, args.steps,
                                           args.batch_tokens, args.length, args.vocab,
                                           args.profile, args.data_dir, args.problem))
                except Exception as error:  # report and go on: one failing setting is data too
                    results.append({"set": set_name, "precision": precision, "xla": jit,
                                    "error": " ".join(str(error).split())[:200]})
                harness.answer(dict(results[-1], onednn=os.environ.get(
                    "TF_ENABLE_ONEDNN_OPTS", "default")))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="tiny,small,base")
    parser.add_argument("--precisions", default="float32,mixed_bfloat16")
    parser.add_argument("--xla", choices=["off", "on", "both"], default="both")
    parser.add_argument("--onednn", choices=["0", "1", "both", "inherit"], default="both")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--batch_tokens", type=int, default=4096)
    parser.add_argument("--length", type=int, default=24, help="tokens per sentence (both sides)")
    parser.add_argument("--vocab", type=int, default=8000)
    parser.add_argument("--data_dir", default="",
                        help="train on the first 12 real length-bucketed batches of this data "
                             "dir (pads included, as training sees them) instead of synthetic "
                             "pad-free ones; --length and --vocab are then unused")
    parser.add_argument("--problem", default="translate_ende_gettext",
                        help="the problem of --data_dir")
    parser.add_argument("--profile", default="",
                        help="a directory: also trace 3 steps per setting with the TensorFlow "
                             "profiler and print the op-time breakdown by part of the model")
    args = parser.parse_args()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if args.onednn == "inherit":
        return run_here(args)
    lines = []
    for value in ("0", "1") if args.onednn == "both" else (args.onednn,):
        command = [sys.executable, __file__, "--onednn=inherit"] + [
            f"--{k}={v}" for k, v in vars(args).items() if k != "onednn"]
        # Rows come back as answers; the rest of stdout (--profile's tables) is printed.
        lines += harness.run_for_answers(command, dict(os.environ, TF_ENABLE_ONEDNN_OPTS=value))
    print(f"\n{'set':8} {'oneDNN':6} {'precision':15} {'XLA':4} {'tok/s':>9} {'model TF/s':>10} "
          f"{'matmul TF/s':>11} {'MFU':>6}")
    for r in lines:
        if "error" in r:
            print(f"{r['set']:8} {r['onednn']:6} {r['precision']:15} {str(r['xla']):4} "
                  f"error: {r['error']}")
            continue
        print(f"{r['set']:8} {r['onednn']:6} {r['precision']:15} {str(r['xla']):4} "
              f"{r['target_tokens_per_s']:9.0f} {r['model_tflops_per_s']:10.3f} "
              f"{r['matmul_tflops_per_s']:11.3f} {r['mfu']:6.1%}")


if __name__ == "__main__":
    main()
