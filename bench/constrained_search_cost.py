"""What constraints cost the search itself, and what a glossary costs a line, without a model.

    .venv/bin/python bench/constrained_search_cost.py [--lines=8] [--beam=4] [--steps=40]
        [--rounds=3] [--output=R.json]

1. Search: constrained_beam_search over a stand-in decoder (an embedding and one [64, 8000]
   projection: the vocabulary of the demo's model, a step far cheaper than a Transformer's, so
   the search's own bookkeeping shows) for `--lines` lines of `--beam` beams, a fixed number of
   steps (early stopping off, EOS unlikely), with 1, 8 and 16 phrases per line of 1, 4 and 16
   alternatives, each alternative 2 tokens and a word end (a word of the demo's vocabulary is
   1-3 tokens). Reported: lines/s (fastest of --rounds, after a warm-up call that traces),
   milliseconds per step, the ratio of the step time to the search without phrases, and the
   constraint tokens per line (cells over constraints.MAX_LINE_TOKENS are refused at the edge;
   they are measured to show the growth). The record keeps the search's FORCED_PER_BEAM, the
   bound on each beam's forced candidates a step.
2. Glossary: Glossary.phrases_for on the 1,000 first lines of a synthetic English text (12-word
   lines), with 10 and 5,000 entries of 1-2 words: microseconds per line.

Prints markdown tables and writes a JSON record (default
bench/results/constrained_search_cost-<date>.json) with the date, the commit, the CPU class and
the load average.
"""
import argparse
import datetime
import json
import os
import random
import sys
import time

import harness

harness.tensorflow_env()

sys.path.insert(0, harness.ROOT)

VOCAB = 8000
HIDDEN = 64
PHRASES = (1, 8, 16)
ALTERNATIVES = (1, 4, 16)


def stand_in_decoder(seed=0):
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(seed)
    embed = tf.constant(rng.normal(0, 1, (VOCAB, HIDDEN)).astype(np.float32))
    out = rng.normal(0, 0.3, (HIDDEN, VOCAB)).astype(np.float32)
    out[:, 1] -= 5.0  # EOS unlikely: every step is searched
    out = tf.constant(out)

    def tokens_to_logits(ids, index, cache, static):
        del index, static
        return tf.matmul(tf.gather(embed, ids), out), cache

    starts = rng.random(VOCAB) < 0.7
    starts[:3] = True
    return tokens_to_logits, starts


def constraint_arrays(lines, phrases, alternatives, seed=0):
    import numpy as np

    from t2t_lite.decoding.phrase_matching import WORD_END

    rng = np.random.default_rng(seed)
    positive = np.zeros([lines, phrases, alternatives, 3], np.int32)
    positive[..., :2] = rng.integers(3, VOCAB, size=[lines, phrases, alternatives, 2])
    positive[..., 2] = WORD_END
    return positive


def search_seconds(tokens_to_logits, starts, positive, lines, beam, steps, rounds):
    import tensorflow as tf

    from t2t_lite.decoding.constrained_search import constrained_beam_search

    negative = tf.zeros([lines, 0, 1], tf.int32)

    @tf.function(autograph=False)
    def search(positive):
        return constrained_beam_search(tokens_to_logits, {}, {}, lines, VOCAB, positive,
                                       negative, beam_size=beam, alpha=0.6,
                                       max_decode_length=steps, early_stopping=False,
                                       word_starts=tf.constant(starts))

    positive = tf.constant(positive)
    search(positive)[0].numpy()  # trace
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        search(positive)[0].numpy()
        best = min(best, time.perf_counter() - start)
    return best


def glossary_microseconds(entries, lines):
    from t2t_lite.inference import constraints

    rng = random.Random(0)
    words = [f"word{i}" for i in range(3000)]
    glossary = constraints.Glossary(
        [constraints.GlossaryEntry(" ".join(rng.sample(words, rng.randint(1, 2))), False,
                                   (f"T{i}",), i) for i in range(entries)])
    text = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(lines)]
    for line in text[:50]:
        glossary.phrases_for(line)
    start = time.perf_counter()
    applied = sum(len(glossary.phrases_for(line)) for line in text)
    return (time.perf_counter() - start) / lines * 1e6, applied


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lines", type=int, default=8)
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--output")
    args = parser.parse_args()

    import numpy as np

    from t2t_lite.inference import constraints

    tokens_to_logits, starts = stand_in_decoder()
    base = search_seconds(tokens_to_logits, starts, np.zeros([args.lines, 0, 1, 1], np.int32),
                          args.lines, args.beam, args.steps, args.rounds)
    rows = [{"phrases": 0, "alternatives": 0, "tokens": 0, "seconds": base}]
    for phrases in PHRASES:
        for alternatives in ALTERNATIVES:
            positive = constraint_arrays(args.lines, phrases, alternatives)
            seconds = search_seconds(tokens_to_logits, starts, positive, args.lines, args.beam,
                                     args.steps, args.rounds)
            rows.append({"phrases": phrases, "alternatives": alternatives,
                         "tokens": phrases * alternatives * 2, "seconds": seconds})
            print(f"{phrases} phrases x {alternatives} alternatives: {seconds:.3f} s",
                  file=sys.stderr)
    for row in rows:
        row["lines_per_second"] = args.lines / row["seconds"]
        row["ms_per_step"] = row["seconds"] / args.steps * 1e3
        row["ratio"] = row["seconds"] / base
        row["over_cap"] = row["tokens"] > constraints.MAX_LINE_TOKENS
    glossary = []
    for entries in (10, 5000):
        micro, applied = glossary_microseconds(entries, 1000)
        glossary.append({"entries": entries, "microseconds_per_line": micro,
                         "terms_applied": applied})
    from t2t_lite.decoding.constrained_search import FORCED_PER_BEAM

    flags = open("/proc/cpuinfo").read()
    record = {
        "date": datetime.date.today().isoformat(),
        # docs/records/README.md's classes: AMX first (an AMX machine has AVX512_BF16 too).
        "machine": "AVX-512/AMX" if "amx_tile" in flags else (
            "AVX-512/BF16" if "avx512_bf16" in flags else (
                "AVX-512" if "avx512f" in flags else "AVX2")),
        "load_average": os.getloadavg(), "args": vars(args), "search": rows,
        "forced_per_beam": FORCED_PER_BEAM,
        "glossary": glossary, "caps": {
            "phrases": constraints.MAX_PHRASES, "alternatives": constraints.MAX_ALTERNATIVES,
            "tokens_per_phrase": constraints.MAX_PHRASE_TOKENS,
            "tokens_per_line": constraints.MAX_LINE_TOKENS}}
    output = args.output or os.path.join(
        harness.ROOT, "bench", "results", f"constrained_search_cost-{record['date']}.json")
    os.makedirs(os.path.dirname(output), exist_ok=True)
    with open(output, "w") as f:
        json.dump(record, f, indent=1)
    print(f"search: {args.lines} lines, beam {args.beam}, {args.steps} steps, vocabulary {VOCAB}"
          f" ({record['machine']}, load {record['load_average'][0]:.1f})\n")
    print("| phrases | alternatives | tokens/line | lines/s | ms/step | x no phrases |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        cap = " (over the cap)" if row["over_cap"] else ""
        print(f"| {row['phrases']} | {row['alternatives']} | {row['tokens']}{cap} | "
              f"{row['lines_per_second']:.1f} | {row['ms_per_step']:.2f} | {row['ratio']:.2f} |")
    print("\n| glossary entries | µs per line | terms applied |\n|---|---|---|")
    for row in glossary:
        print(f"| {row['entries']:,} | {row['microseconds_per_line']:.1f} | "
              f"{row['terms_applied']} |")
    print(f"\nrecord: {output}")


if __name__ == "__main__":
    main()
