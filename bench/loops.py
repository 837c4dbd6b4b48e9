"""Loops in translations: how many lines loop under each setting of the rule against them, and
what the rule costs in BLEU, chrF and lines/s.

    .venv/bin/python bench/loops.py --model_dir=M --data=demo:RUN --data=heldout:R \
        [--settings=0,2,3,4] [--repetition_penalties=1.2] [--rounds=2] [--max_lines=N] \
        [--work_dir=W] [--output=R.json]
    .venv/bin/python bench/loops.py --lines=FILE      # the loop measure alone: its share of FILE

A line loops (`loop_kinds`) when it holds
  word   a word twice in a row (whitespace-separated words compared ignoring case, punctuation
         kept: "die die" loops, "die, die" does not; a word needs a letter or digit);
  piece  a piece of a word, 2 characters or more, three times in a row inside one word
         ("Zwischenspeichernnnnnn", "orgorgorg", "161616"; "Schifffahrt", "48000" and
         "1000000" do not: a piece of one repeated digit is a number's);
  ngram  a sequence of two words or more three times in the line ("in der Datei ... in der
         Datei ... in der Datei").
The share of lines that loop is reported for the references too: what the measure finds in
human translations.

Each --data NAME:FOLDER is a folder with test.src and test.ref: the demo's run folder
(`t2t-lite-demo --run_dir=RUN`), or bench/heldout_pairs.py's. Each --settings value n is decoded
by the real CLI, `t2t-lite-decoder --model_dir=M --no_repeat_ngram_size=n` (the model's beam and
alpha, the decoder's default --protect and parallel searches; harness.run_decoder), and scored with
sacreBLEU's BLEU and chrF against test.ref. lines/s is the decoder's own summary (translation
only), the fastest of --rounds rounds; rounds alternate between the settings (a shared machine's
load moves) and must give identical outputs. time is seconds per line against n = 0's.

--repetition_penalties: CTranslate2's repetition_penalty (Hugging Face's: the logit of a token
the hypothesis already holds is divided by the penalty when positive, multiplied when negative),
which t2t_lite's own searches do not offer: decoded by the same CLI with --engine=ctranslate2
(the model_dir converted on the fly), with the penalty added to CTranslate2's translate_batch,
beside a CTranslate2 run without it (time against that run).

Writes a JSON record (default bench/results/loops-<date>.json) and prints a markdown table per
data set, with the machine's CPU class, load and the date.
"""
import argparse
import collections
import datetime
import json
import os
import re
import sys
import time

import harness

harness.tensorflow_env()

from constrained_decoding import (commit, cpu_class, cpu_flags, model_steps,  # noqa: E402
                                  read_lines, scores, write_lines)

WORD_CHARACTER = re.compile(r"\w")
# A piece of 2 characters or more, three times in a row, inside one word.
PIECE_LOOP = re.compile(r"(\w{2,}?)\1\1")
KINDS = ("word", "piece", "ngram")


def loop_kinds(line):
    """The kinds of loop (KINDS) a line holds (see the module docstring); empty for none."""
    words = line.split()
    folded = [w.casefold() for w in words]
    kinds = set()
    if any(a == b and WORD_CHARACTER.search(a) for a, b in zip(folded, folded[1:])):
        kinds.add("word")
    if any(not (len(set(m.group(1))) == 1 and m.group(1).isdigit())
           for w in words for m in PIECE_LOOP.finditer(w)):
        kinds.add("piece")
    # Two words three times: every longer n-gram three times holds one.
    bigrams = collections.Counter(zip(folded, folded[1:]))
    if any(count >= 3 and any(WORD_CHARACTER.search(w) for w in bigram)
           for bigram, count in bigrams.items()):
        kinds.add("ngram")
    return kinds


def loop_counts(lines):
    """{"lines", "looping", "share", by kind}: how many of `lines` loop."""
    found = [loop_kinds(line) for line in lines]
    looping = sum(1 for kinds in found if kinds)
    return {"lines": len(lines), "looping": looping,
            "share": round(looping / len(lines), 4) if lines else None,
            **{kind: sum(1 for kinds in found if kind in kinds) for kind in KINDS}}


# ------------------------------------------------------------------------------------------------
# decoding
DECODER = "t2t_lite.bin.decoder"


def with_repetition_penalty(penalty, argv):
    """Runs t2t-lite-decoder (argv: its flags) with CTranslate2's translate_batch given
    repetition_penalty=penalty (the --repetition_penalties runs; this script started again)."""
    import ctranslate2

    class Penalised(ctranslate2.Translator):
        def translate_batch(self, *args, **kwargs):
            return super().translate_batch(*args, repetition_penalty=penalty, **kwargs)

    ctranslate2.Translator = Penalised
    sys.argv = ["t2t-lite-decoder", *argv]
    from t2t_lite.bin import decoder

    decoder.run()


def configurations(model_dir, settings, penalties):
    """{name: (decoder flags, command prefix or None, what)} of every run a data set gets."""
    model = f"--model_dir={model_dir}"
    runs = {f"n={n}": ([model, f"--no_repeat_ngram_size={n}"], None,
                       {"engine": "tensorflow", "no_repeat_ngram_size": n,
                        "repetition_penalty": None, "baseline": "n=0"})
            for n in settings}
    if penalties:
        ct2 = [model, "--engine=ctranslate2", "--no_repeat_ngram_size=0"]
        runs["ct2 n=0"] = (ct2, None, {"engine": "ctranslate2", "no_repeat_ngram_size": 0,
                                       "repetition_penalty": None, "baseline": "ct2 n=0"})
        for penalty in penalties:
            runs[f"ct2 rp={penalty}"] = (
                ct2, [sys.executable, os.path.abspath(__file__),
                      f"--decoder_repetition_penalty={penalty}", "--"],
                {"engine": "ctranslate2", "no_repeat_ngram_size": 0,
                 "repetition_penalty": penalty, "baseline": "ct2 n=0"})
    return runs


def decode_rounds(runs, source, rounds, folder):
    """Each run `rounds` times, alternating: {name: {"outputs", "seconds" [...], "summary" (the
    fastest round's)}}; exits when two rounds of a run differ."""
    results = {}
    names = list(runs)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else names[::-1]:
            flags, command, _ = runs[name]
            output = os.path.join(folder, re.sub(r"\W", "_", name) + ".out")
            summary, _ = harness.run_decoder(flags, source, output, command=command)
            outputs = read_lines(output)
            print(f"  round {round_ + 1}/{rounds} {name}: {summary['lines']} lines, "
                  f"{summary['seconds']:.1f}s ({summary['lines_per_second']:.1f} lines/s)",
                  flush=True)
            entry = results.setdefault(name, {"outputs": outputs, "seconds": [],
                                              "summary": summary})
            if outputs != entry["outputs"]:
                sys.exit(f"error: {name}: round {round_ + 1}'s outputs differ from round 1's")
            entry["seconds"].append(summary["seconds"])
            if summary["seconds"] < entry["summary"]["seconds"]:
                entry["summary"] = summary
    return results


def measure(name, folder, runs, args, work):
    """The record of one data set."""
    sources = read_lines(os.path.join(folder, "test.src"))
    references = read_lines(os.path.join(folder, "test.ref"))
    if len(sources) != len(references):
        sys.exit(f"error: {folder}: test.src and test.ref differ in length")
    if args.max_lines:
        sources, references = sources[:args.max_lines], references[:args.max_lines]
    source_path = os.path.join(work, f"{name}.src")
    write_lines(source_path, sources)
    print(f"{name}: {len(sources)} lines from {folder}", flush=True)
    results = decode_rounds(runs, source_path, args.rounds, work)
    rows = []
    for run, result in results.items():
        what = runs[run][2]
        baseline = results[what["baseline"]]
        seconds = result["summary"]["seconds"]
        rows.append({
            "setting": run, **{k: v for k, v in what.items() if k != "baseline"},
            "loops": loop_counts(result["outputs"]),
            **scores(result["outputs"], references),
            "lines_per_second": result["summary"]["lines_per_second"],
            "seconds_rounds": result["seconds"],
            "time_ratio": round(seconds / baseline["summary"]["seconds"], 3),
            "lines_changed": sum(a != b for a, b in zip(result["outputs"],
                                                        baseline["outputs"])),
        })
    return {"folder": os.path.abspath(folder), "lines": len(sources),
            "references": loop_counts(references), "rows": rows}


def table(name, entry):
    lines = [f"{name}: {entry['lines']} lines; the references loop on "
             f"{100 * entry['references']['share']:.1f}%",
             "", "| setting | lines that loop | BLEU | chrF | lines/s | time |",
             "|---|---|---|---|---|---|"]
    for row in entry["rows"]:
        lines.append(f"| {row['setting']} | {100 * row['loops']['share']:.1f}% "
                     f"({row['loops']['looping']}) | {row['bleu']:.2f} | {row['chrf']:.2f} | "
                     f"{row['lines_per_second']:.1f} | {row['time_ratio']:.2f}x |")
    return "\n".join(lines)


def main():
    if len(sys.argv) > 1 and sys.argv[1].startswith("--decoder_repetition_penalty="):
        separator = sys.argv.index("--")
        return with_repetition_penalty(float(sys.argv[1].split("=", 1)[1]),
                                       sys.argv[separator + 1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model_dir", help="the model_dir to decode with")
    parser.add_argument("--data", action="append", default=[],
                        help="NAME:FOLDER, a folder with test.src and test.ref (repeatable)")
    parser.add_argument("--settings", default="0,2,3,4", help="--no_repeat_ngram_size values")
    parser.add_argument("--repetition_penalties", default="",
                        help="CTranslate2 repetition_penalty values (comma list; none by default)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--max_lines", type=int, default=0, help="the first N lines (0: all)")
    parser.add_argument("--work_dir", help="keep the outputs here (default: a temporary folder)")
    parser.add_argument("--output", help="the JSON record (default bench/results/loops-<date>"
                        ".json)")
    parser.add_argument("--lines", help="only measure the loops of this file's lines")
    args = parser.parse_args()
    if args.lines:
        counts = loop_counts(read_lines(args.lines))
        print(json.dumps(counts))
        return None
    if not args.model_dir or not args.data:
        parser.error("--model_dir and --data are required (or --lines)")
    settings = [int(v) for v in args.settings.split(",") if v.strip()]
    if 0 not in settings:
        settings.insert(0, 0)  # every time ratio is against the search without the rule
    penalties = [float(v) for v in args.repetition_penalties.split(",") if v.strip()]
    started, date = time.time(), datetime.date.today().isoformat()
    model_dir = os.path.abspath(args.model_dir)
    with open(os.path.join(model_dir, "configs.json")) as f:
        decode = json.load(f).get("decode") or {}
    flags = cpu_flags()
    steps, steps_from = model_steps(os.path.dirname(model_dir))
    record = {"date": date, **commit(), "cpu_flags": flags, "cpu_class": cpu_class(flags),
              "cpus": os.cpu_count(), "load_before": harness.load_note(),
              "model_dir": model_dir, "model_steps": steps, "model_steps_from": steps_from,
              "beam_size": decode.get("beam_size"), "alpha": decode.get("alpha"),
              "rounds": args.rounds, "data": {}}
    print(f"{model_dir} ({steps} steps), beam {record['beam_size']}; {record['load_before']}",
          flush=True)
    runs = configurations(model_dir, settings, penalties)
    with harness.scratch_dir("loops_bench_", args.work_dir) as work:
        os.makedirs(work, exist_ok=True)
        for item in args.data:
            name, _, folder = item.partition(":")
            record["data"][name] = measure(name, folder, runs, args, work)
            print(table(name, record["data"][name]), flush=True)
    # Read again at the end: a demo still writing its results when the run began has them now.
    record["model_steps"], record["model_steps_from"] = model_steps(os.path.dirname(model_dir))
    record["load_after"] = harness.load_note()
    record["wall_seconds"] = round(time.time() - started, 1)
    output = args.output or os.path.join(harness.ROOT, "bench", "results", f"loops-{date}.json")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    print(f"{record['cpu_class']}, {date}, {record['load_after']}; record: {output}")
    return None


if __name__ == "__main__":
    main()
