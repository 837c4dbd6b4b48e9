"""Beam-search decoding throughput of a Transformer, against this machine's matmul.

    TF_ENABLE_ONEDNN_OPTS=1 TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python bench/bench_decode.py \
        [--hparams_set=small --vocab_size=8000 --batch_size=32 --source_length=20 --beam_size=4]

The model has random weights, so it rarely emits EOS: every sentence decodes to its limit
(input length + extra_length), the worst case for a trained model of this size. Reported:
sentences/s, target tokens/s (best hypotheses, EOS included), and the decoder's matmul
FLOP/s as a fraction of one large float32 (2048^3) matmul's FLOP/s measured in between; decoding
is a chain of small [B*K, d] x [d, *] products plus cache reads and beam gathers, so it reaches
only a small part of that. The decode is `translate` in its own tf.function without autograph
(its loops are tf.while_loop already); the fastest of --repeats timed decodes counts.

--precision=bfloat16 decodes with the opt-in bfloat16 twin (t2t_lite/decoding/precision.py);
--profile=DIR traces one decode with the TensorFlow profiler and prints op time per
step by part of the beam step (bench/PROFILE.md, "Where a beam-4 decode step spends its time").
"""
import argparse

import harness

harness.tensorflow_env()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from t2t_lite import hparams  # noqa: E402
from t2t_lite.decoding import precision  # noqa: E402
from t2t_lite.decoding.translate import translate  # noqa: E402


def decode_step_flops(config, vocab_size, rows, cache_width, source_length):
    """Matmul FLOPs of one decode_step for `rows` beams (multiply-add = 2 FLOPs) whose
    self-attention cache holds `cache_width` positions.

    The cross-attention keys/values come precomputed, so only queries and outputs are projected.
    """
    d, h, k, v, f = (config.d_model, config.num_heads, config.key_dim, config.value_dim,
                     config.d_ff)
    self_attention = 2 * d * h * (2 * k + v) + 2 * h * v * d + 2 * cache_width * h * (k + v)
    cross_attention = 2 * d * h * k + 2 * h * v * d + 2 * source_length * h * (k + v)
    feed_forward = 2 * 2 * d * f
    per_row = (config.num_layers * (self_attention + cross_attention + feed_forward)
               + 2 * d * vocab_size)
    return rows * per_row


def random_inputs(batch_size, source_length, vocab_size, seed=0):
    """Sentences of varied length (half to full width), each ending with EOS, 0-padded."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocab_size, size=(batch_size, source_length)).astype("int32")
    lengths = rng.integers(source_length // 2, source_length + 1, size=batch_size)
    for row, length in enumerate(lengths):
        ids[row, length - 1], ids[row, length:] = 1, 0
    return tf.constant(ids)


def hypothesis_lengths(sequences):
    """Tokens of every hypothesis [B, K] up to and including its EOS (every one has an EOS)."""
    return (sequences == 1).argmax(axis=-1) + 1


def _step_part(path, op_type):
    """A profiler op event (name scope path, op type) -> the part of a decode it belongs to."""
    if "while/body" not in path:
        return "encoder and decode setup (once per batch)"
    if op_type in ("_MklMatMul", "_MklNativeFusedMatMul", "MatMul"):
        return "matmuls: projections, feed-forward, logits"
    if "BatchMatMul" in op_type:
        return "attention score/context batched matmuls"
    if "Transpose" in op_type:
        return "transposes"
    if op_type == "ConcatV2":
        return "concats (cache append, finished merge)"
    if op_type == "GatherV2":
        return "gathers (cache reorder, beams, embedding)"
    if "layer_norm" in path:
        return "layer norms"
    if op_type in ("TopKV2", "LogSoftmax", "Exp", "Max", "Sum", "Log", "Sub", "SelectV2",
                   "FloorMod", "FloorDiv", "LogicalAnd"):
        return "candidate selection (top-k, log-softmax / log-sum-exp)"
    if "Softmax" in op_type:
        return "attention softmax"
    return "other elementwise and small ops"


def run(args):
    config = hparams.load(args.hparams_set)[0]
    model = precision.twin(harness.random_transformer(config, args.vocab_size), args.precision)
    inputs = random_inputs(args.batch_size, args.source_length, args.vocab_size)
    print(f"model {args.hparams_set}: layers={config.num_layers} d_model={config.d_model} "
          f"d_ff={config.d_ff} heads={config.num_heads} vocab={args.vocab_size}; "
          f"batch={args.batch_size} x source<={args.source_length}, beam={args.beam_size}, "
          f"alpha={args.alpha}, extra_length={args.extra_length}")
    decode = tf.function(
        lambda x: translate(model, x, beam_size=args.beam_size, alpha=args.alpha,
                            extra_length=args.extra_length), autograph=False)

    def decode_once():
        return decode(inputs)[0].numpy()

    first_call, _ = harness.timed(decode_once)
    # Measured next to the decode: on a shared machine the ceiling moves with the load.
    peak = harness.matmul_flops_per_second()
    seconds, sequences = harness.fastest(decode_once, args.repeats)
    lengths = hypothesis_lengths(sequences)[:, 0]
    # Steps the loop ran: up to the longest hypothesis kept (random weights never stop early).
    steps = int(hypothesis_lengths(sequences).max())
    # The self-attention cache grows by one position a step: (steps + 1) / 2 on average.
    flops = steps * decode_step_flops(config, args.vocab_size, args.batch_size * args.beam_size,
                                      (steps + 1) / 2, args.source_length)
    print(f"{'trace s':>8} {'batch s':>9} {'sent/s':>8} {'tok/s':>9} {'steps':>6} "
          f"{'GFLOP/s':>8} {'matmul GFLOP/s':>15} {'ratio':>6}")
    print(f"{first_call - seconds:>8.1f} {seconds:>9.2f} {args.batch_size / seconds:>8.1f} "
          f"{lengths.sum() / seconds:>9.0f} {steps:>6d} {flops / seconds / 1e9:>8.1f} "
          f"{peak / 1e9:>15.1f} {flops / seconds / peak:>6.1%}")
    if args.profile:
        print(harness.op_time_table(decode_once, steps, args.profile, _step_part))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hparams_set", default="small")
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--source_length", type=int, default=20)
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--alpha", type=float, default=0.6)
    parser.add_argument("--extra_length", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=2, help="timed decodes; the fastest counts")
    parser.add_argument("--precision", default="float32", choices=["float32", "bfloat16"],
                        help="bfloat16: the opt-in bfloat16 decoding twin")
    parser.add_argument("--profile", default="",
                        help="a directory: trace one decode and print op time per step by part")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
