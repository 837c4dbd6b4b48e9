"""The decoder on large inputs: peak memory against input size, and chunked against whole-file speed.

    python bench/bench_stream.py                                   # memory part, tiny random model
    python bench/bench_stream.py --part=speed --model_dir=M --inputs=test.src,big.src --rounds=3

Memory: `t2t-lite-decoder` (greedy, a tiny random-weight model with a symbol vocabulary, short
random lines) on a small and a large input; the figure is the large run's peak RSS over the small
run's (1.0: memory does not grow with the input). Speed: the same model and input decoded with the
default --chunk_lines and with one chunk holding the whole file, in alternating rounds (order
reversed each round), best of rounds; the figure is chunked lines/s over whole-file lines/s.
Each run is a fresh decoder process; its rate is the decoder's own summary line.
"""
import argparse
import os
import random
import sys

import harness

def decoder_run(model_dir, source, *flags):
    """Runs the decoder on `source` into a scratch output; returns (lines/s, peak RSS in MiB)."""
    output = source + ".out"
    summary, peak = harness.run_decoder([f"--model_dir={model_dir}", *flags], source, output)
    os.remove(output)
    return summary["lines_per_second"], peak


def write_lines(path, count, symbols, seed=0):
    rng = random.Random(seed)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(count):
            f.write(" ".join(rng.choice(symbols) for _ in range(rng.randint(1, 4))) + "\n")
    return path


def memory(args):
    harness.tensorflow_env()
    with harness.scratch_dir("bench_stream_") as folder:
        model_dir, symbols = harness.random_model_dir(folder, "tiny", 40, [
            "MAX_LENGTH = 16", "DecodeConfig.beam_size = 1", "DecodeConfig.extra_length = 2"])
        rows = []
        for count in (args.small_lines, args.large_lines):
            source = write_lines(os.path.join(folder, f"in.{count}"), count, symbols)
            rate, peak = decoder_run(model_dir, source, f"--chunk_lines={args.chunk_lines}")
            rows.append((count, rate, peak))
            print(f"{count:>10,} lines: {rate:,.0f} lines/s, peak RSS {peak:,.0f} MiB", flush=True)
    print(f"peak RSS, {rows[1][0]:,} lines over {rows[0][0]:,} lines: "
          f"{rows[1][2] / rows[0][2]:.2f}x (--chunk_lines={args.chunk_lines})")


def speed(args):
    if not args.model_dir or not args.inputs:
        sys.exit("--part=speed needs --model_dir and --inputs")
    for source in args.inputs.split(","):
        with open(source, "rb") as f:
            lines = sum(1 for _ in f)
        contenders = {
            "chunked": lambda _, s=source: decoder_run(args.model_dir, s)[0],
            "whole file": lambda _, s=source, n=lines: decoder_run(
                args.model_dir, s, f"--chunk_lines={max(n, 1)}")[0],
        }
        best = harness.best_of(harness.alternate(contenders, args.rounds))
        chunked, whole = best["chunked"], best["whole file"]
        print(f"{source} ({lines:,} lines), best of {args.rounds}: chunked {chunked:.1f} lines/s, "
              f"whole file {whole:.1f} lines/s, ratio {chunked / whole:.3f}", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--part", choices=("memory", "speed"), default="memory")
    parser.add_argument("--small_lines", type=int, default=20_000)
    parser.add_argument("--large_lines", type=int, default=2_000_000)
    parser.add_argument("--chunk_lines", type=int, default=10_000)
    parser.add_argument("--model_dir", help="--part=speed: the model to decode with")
    parser.add_argument("--inputs", help="--part=speed: comma-separated source files")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    memory(args) if args.part == "memory" else speed(args)


if __name__ == "__main__":
    main()
