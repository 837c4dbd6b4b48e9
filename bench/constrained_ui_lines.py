"""What constraints cost on short UI lines: two required terms, or a `*` prefix ban, against none.

    .venv/bin/python bench/constrained_ui_lines.py --run_dir=runs/ende_gettext \
        [--model_dir=M] [--max_words=6] [--max_lines=200] [--rounds=3] [--seed=43] [--output=R.json]

The lines are the demo's test split (RUN/test.src, RUN/test.ref) whose source has at most
--max_words words and whose reference gives two usable words (constrained_decoding.usable): the
short messages of a UI ("Open file", "Cannot open file %s"). Each is decoded by the real decoder
(python -m t2t_lite.bin.decoder --model_dir, RUN/model by default, its default --protect and
parallel searches) four ways:

    none      no constraints;
    terms     two required words of the line's reference (seeded draw), as a glossary gives them;
    prefix    `!stem*` barring the first word of 4+ letters of the unconstrained output by its
              first 4 letters (the word it wanted), a "do not use" entry as a prefix form;
    both      the two terms and the prefix ban (where they do not contradict; else the terms).

Each configuration is decoded --rounds times, alternating (a shared machine's load moves); the
fastest round counts and every round's outputs must be identical. Reported: lines/s (the
decoder's own summary: translation only), time per line against `none`, lines constrained and
unmet, the load average before and after, the CPU's class (AVX-512 / AMX flags), date and commit.
Writes a JSON record (default bench/results/constrained_ui_lines-<date>.json) and a markdown table.
"""
import argparse
import datetime
import json
import os
import random
import re
import sys
import tempfile

import harness
from constrained_decoding import (commit, cpu_class, cpu_flags, decode_rounds, read_lines,
                                  usable, write_lines)

harness.tensorflow_env()

PREFIX_LETTERS = 4


def terms_of(reference, rng):
    """Two distinct usable words of a reference, in a seeded draw, or None."""
    words = sorted({w for w in reference.split() if usable(w) and re.search(r"\w\w", w)})
    return rng.sample(words, 2) if len(words) >= 2 else None


def prefix_ban(output):
    """`!stem*` for the first word of the output with PREFIX_LETTERS+ letters, or None."""
    for word in output.split():
        if re.fullmatch(r"[^\W\d_]{%d,}" % PREFIX_LETTERS, word):
            return f"!{word[:PREFIX_LETTERS]}*"
    return None


def constraint_files(outputs, line_terms, folder):
    """{config: constraints path} for terms, prefix and both."""
    from t2t_lite.inference import constraints

    rows = {"terms": [], "prefix": [], "both": []}
    for output, terms in zip(outputs, line_terms):
        ban = prefix_ban(output) or ""
        rows["terms"].append("\t".join(terms))
        rows["prefix"].append(ban)
        both = "\t".join(terms + ([ban] if ban else []))
        try:
            constraints.split_line(both)
        except ValueError:  # the ban bars a term: the terms alone
            both = "\t".join(terms)
        rows["both"].append(both)
    paths = {}
    for name, lines in rows.items():
        paths[name] = os.path.join(folder, f"{name}.txt")
        write_lines(paths[name], lines)
    return paths


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run_dir", required=True, help="the demo's run folder")
    parser.add_argument("--model_dir", help="default: RUN/model")
    parser.add_argument("--max_words", type=int, default=6)
    parser.add_argument("--max_lines", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--output")
    args = parser.parse_args()
    sources = read_lines(os.path.join(args.run_dir, "test.src"))
    references = read_lines(os.path.join(args.run_dir, "test.ref"))
    chosen, line_terms = [], []
    for number, (source, reference) in enumerate(zip(sources, references)):
        terms = terms_of(reference, random.Random(args.seed * 1_000_003 + number))
        if len(source.split()) <= args.max_words and terms:
            chosen.append(source)
            line_terms.append(terms)
    chosen, line_terms = chosen[:args.max_lines], line_terms[:args.max_lines]
    if not chosen:
        sys.exit("error: no test line is short enough")
    model_dir = args.model_dir or os.path.join(args.run_dir, "model")
    flags = cpu_flags()
    record = {"bench": "constrained_ui_lines", "date": datetime.date.today().isoformat(),
              **commit(), "cpu_flags": flags, "cpu_class": cpu_class(flags),
              "cpus": os.cpu_count(), "load_before": harness.load_note(),
              "model_dir": model_dir, "lines": len(chosen), "max_words": args.max_words,
              "rounds": args.rounds, "seed": args.seed}
    print(f"{len(chosen)} lines of at most {args.max_words} words; {record['load_before']}",
          flush=True)
    with tempfile.TemporaryDirectory() as folder:
        source_path = os.path.join(folder, "ui.src")
        write_lines(source_path, chosen)
        model_flag = [f"--model_dir={model_dir}"]
        plain = decode_rounds({"none": (source_path, None, [])}, 1, model_flag, folder)
        paths = constraint_files(plain["none"]["outputs"], line_terms, folder)
        configs = {"none": (source_path, None, [])}
        configs.update({name: (source_path, path, []) for name, path in paths.items()})
        runs = decode_rounds(configs, args.rounds, model_flag, folder)
    base = runs["none"]["summary"]["lines_per_second"]
    record["rows"] = [
        {"config": name, "lines_per_second": run["summary"]["lines_per_second"],
         "time_ratio": round(base / run["summary"]["lines_per_second"], 3),
         "seconds_rounds": run["seconds"], "constrained": run["summary"]["constrained"],
         "constraints_unmet": run["summary"]["constraints_unmet"], "rss_mib": round(run["rss_mib"])}
        for name, run in runs.items()]
    record["load_after"] = harness.load_note()
    output = args.output or os.path.join(harness.ROOT, "bench", "results",
                                         f"constrained_ui_lines-{record['date']}.json")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as f:
        json.dump(record, f, indent=1)
    print(f"\n{record['date']}, {record['cpu_class']}, {record['cpus']} CPUs, commit "
          f"{record['commit'][:10]}; {record['load_before']} before, {record['load_after']} after\n")
    print("| constraints | lines/s | × none | constrained | could not |\n|---|---|---|---|---|")
    for row in record["rows"]:
        print(f"| {row['config']} | {row['lines_per_second']:.1f} | {row['time_ratio']:.2f} | "
              f"{row['constrained']} | {row['constraints_unmet']} |")
    print(f"\nrecord: {output}")


if __name__ == "__main__":
    main()
