"""Datagen throughput and memory on ~1M synthetic sentence pairs.

    python bench/bench_datagen.py [--num_pairs=1000000] [--vocab_type=bpe] [--data_dir=DIR]

Pairs have WMT-like lengths (5-45 words, Zipf-distributed over 20k synthetic words). Prints
pairs/s (vocabulary sampling pass + encoding + writing, i.e. the whole t2t-lite-datagen run) and
the process's peak RSS, which must stay flat as --num_pairs grows (nothing holds the corpus).
"""
import argparse
import itertools
import os
import random
import resource

import harness

harness.tensorflow_env()

from t2t_lite.data.translation import TranslationProblem  # noqa: E402


def synthetic_words(n, seed):
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return ["".join(rng.choices(letters, k=rng.randint(2, 10))) for _ in range(n)]


class SyntheticPairs(TranslationProblem):
    """Random Zipfian 'sentences' of WMT-like length, streamed (never materialized)."""

    vocab_size = 8000

    def __init__(self, num_pairs, vocab_type):
        self.num_pairs = num_pairs
        self.vocab_type = vocab_type
        self.source_words, self.target_words = synthetic_words(20000, 1), synthetic_words(20000, 2)
        cum_weights = list(itertools.accumulate(1.0 / (rank + 1) for rank in range(20000)))
        # One long Zipfian word stream; sentences are slices of it (cheap to produce).
        self.stream = random.Random(0).choices(range(20000), cum_weights=cum_weights, k=1 << 21)

    @property
    def name(self):
        return "synthetic_pairs"

    def generate_samples(self, split, tmp_dir):
        rng = random.Random(split)
        n = self.num_pairs if split == "train" else 1000
        for _ in range(n):
            length = rng.randint(5, 45)
            start = rng.randrange(len(self.stream) - length)
            ranks = self.stream[start:start + length]
            yield (" ".join(self.source_words[r] for r in ranks),
                   " ".join(self.target_words[r] for r in reversed(ranks)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--num_pairs", type=int, default=1_000_000)
    parser.add_argument("--vocab_type", default="bpe", choices=["bpe", "wordpiece"])
    parser.add_argument("--data_dir", default=None, help="keep the output here (default: temp)")
    args = parser.parse_args()
    problem = SyntheticPairs(args.num_pairs, args.vocab_type)
    with harness.scratch_dir("bench_datagen_", args.data_dir) as data_dir:
        seconds, report = harness.timed(problem.generate_data, data_dir)
    written = sum(m["num_examples"] for m in report.values())
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mib = usage.ru_maxrss / 1024
    cpu_seconds = usage.ru_utime + usage.ru_stime  # the machine may be shared: CPU time too
    tokens = sum(int(k) * v for k, v in report["train"]["length_histogram"].items())
    print(f"datagen: {written} pairs ({args.vocab_type}) in {seconds:.1f}s = "
          f"{written / seconds:,.0f} pairs/s on {os.cpu_count()} cores "
          f"({written / cpu_seconds:,.0f} pairs per CPU-second); "
          f"train shards {report['train']['num_shards']}; peak RSS {peak_mib:,.0f} MiB; "
          f"~{tokens / report['train']['num_examples']:.1f} tokens per longer side")


if __name__ == "__main__":
    main()
