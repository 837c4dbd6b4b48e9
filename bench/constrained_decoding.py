"""Lexically constrained decoding on a real model: reference-constraint evaluation and its cost.

    .venv/bin/python bench/constrained_decoding.py --run_dir=runs/ende_gettext \
        [--export_dir=E | --model_dir=M] [--eos_until_met=off|on|both] [--max_lines=N] \
        [--rounds=2] [--cost_rounds=N] [--no_cost] [--seed=43] [--output=R.json]

The model is the demo's (`t2t-lite-demo --run_dir=RUN`): its export RUN/export/<n> (or
--export_dir, which must have been written by a t2t_lite with the constrained search), its test
split RUN/test.src and RUN/test.ref, its trained steps from RUN/results.json (RUN/state.json when
the demo has not written one). Every decode is the real CLI (python -m t2t_lite.bin.decoder,
harness.run_decoder) with the export's beam (4 in the demo) and the decoder's default parallel
searches; lines/s is the decoder's own summary (translation only, without start-up and load).
--model_dir decodes from a model_dir's checkpoint instead (the decoder's --model_dir, its beam
from the model's DecodeConfig), which --eos_until_met needs: an export's search is fixed.

--eos_until_met (the decoder's flag, constrained_search's rule: no EOS before every phrase is
met): `off` (the default) decodes the constrained runs as the decoder does by default, `on` with
the flag, `both` adds a third evaluation run with it beside the two (issue 52, item 6; the cost
table stays with the default). --no_cost skips the cost table.

Phrases, as in the constrained-decoding papers (Post & Vilar 2018, Hu et al. 2019): for each test
line, up to 3 non-overlapping phrases of 1-3 whole words of its reference (whitespace-separated;
a seeded draw per line). A word is usable when it has a letter or digit, holds no protected span
(span_finding.find_spans: format specifiers are the --protect mechanism's, not terms), no `|`
and does not start with `!` (the constraint format's alternative and negation marks). The phrases
of a line cover at most half of its reference's words (so a line is never told its whole
reference): a reference of one word gets none, of 2-3 words one 1-word phrase, and so on.

1. Reference-constraint evaluation: each line takes the first n of its phrases, n drawn from 1-3
   (fewer where fewer fit). The split is decoded with and without that constraints file, under
   each --protect_settings value (default `none`, then `auto`, the gettext problem's default:
   with `auto`, lines with format specifiers are constrained by their spans too in both runs).
   Reported: the share of phrases met (a phrase is met when the output holds it as whole words,
   as often as the line asks for it), lines with all met, the decoder's own summary
   (constrained, constraints_unmet), sacreBLEU and chrF against the references, lines/s.
2. Cost: lines/s with 0, 1, 2 and 3 phrases per line (the first k of each line's phrases), on the
   lines whose reference gives 3 phrases only, so that every line carries exactly k; under the
   first --protect_settings value. Ratio of time per line against 0.

Each configuration is decoded --rounds times (the cost table's --cost_rounds), rounds alternating
between configurations (a shared machine's load moves); the fastest round counts, and every
round's outputs must be identical.
Next to the figures: the machine's float32 matmul FLOP/s (harness.matmul_flops_per_second, one
thread per parallel search, before and after the decodes), the load average, the CPU's AVX-512 /
AMX flags, the date and the commit. Writes a JSON record (default
bench/results/constrained_decoding-<date>.json) and prints markdown tables.
"""
import argparse
import collections
import datetime
import json
import os
import random
import re
import subprocess
import sys
import time

import harness

harness.tensorflow_env()

ROOT = harness.ROOT
MAX_PHRASES = 3
MAX_WORDS = 3
WORD = re.compile(r"\w")


# ------------------------------------------------------------------------------------------------
# phrases
def usable(word):
    from t2t_lite.inference import span_finding

    return (WORD.search(word) is not None and "|" not in word and not word.startswith("!")
            and not span_finding.find_spans(word, frozenset(span_finding.FORMAT_KINDS)))


def line_phrases(reference, rng):
    """Up to MAX_PHRASES non-overlapping phrases of 1-MAX_WORDS usable words of `reference`, in
    the order drawn, covering at most half of its words."""
    words = reference.split()
    budget = len(words) // 2
    taken = [False] * len(words)
    phrases = []
    for _ in range(MAX_PHRASES):
        wanted = rng.randint(1, MAX_WORDS)
        for length in range(min(wanted, budget), 0, -1):
            starts = [s for s in range(len(words) - length + 1)
                      if not any(taken[s:s + length])
                      and all(usable(w) for w in words[s:s + length])]
            if starts:
                start = rng.choice(starts)
                taken[start:start + length] = [True] * length
                budget -= length
                phrases.append(" ".join(words[start:start + length]))
                break
        else:
            break
    return phrases


def draw_phrases(references, seed):
    """[(n drawn for the evaluation, [phrases...]) per line]; each line's own seeded generator,
    so a line's phrases do not depend on --max_lines."""
    draws = []
    for number, reference in enumerate(references):
        rng = random.Random(seed * 1_000_003 + number)
        wanted = rng.randint(1, MAX_PHRASES)
        draws.append((wanted, line_phrases(reference, rng)))
    return draws


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.writelines(line + "\n" for line in lines)


def read_lines(path):
    with open(path, encoding="utf-8", newline="\n") as f:
        return [line.rstrip("\n") for line in f]


def met_counts(outputs, line_phrases_):
    """(phrases met, phrases, lines with all met, lines with phrases): a phrase asked for r times
    is met min(r, its occurrences in the output as whole words) times (constraints.occurrences:
    "Datei" in "Dateiformat" is not met)."""
    from t2t_lite.inference.constraints import occurrences

    met = total = lines_met = lines = 0
    for output, phrases in zip(outputs, line_phrases_):
        if not phrases:
            continue
        asked = collections.Counter(phrases)
        line_met = sum(min(r, occurrences(output, p)) for p, r in asked.items())
        met += line_met
        total += len(phrases)
        lines += 1
        lines_met += line_met == len(phrases)
    return met, total, lines_met, lines


# ------------------------------------------------------------------------------------------------
# decoding
def decode_rounds(configs, rounds, flags, folder):
    """configs: {name: (source path, constraints path or None, extra flags)}; each decoded
    `rounds` times, alternating. {name: {"summary": fastest round's summary, "seconds": [...],
    "outputs": [...], "rss_mib": ...}}; exits if two rounds of one config differ."""
    results = {}
    for round_ in range(rounds):
        for name, (source, constraints, extra) in configs.items():
            output = os.path.join(folder, f"{name}.out")
            run_flags = [*flags, *extra] + ([f"--constraints_file={constraints}"]
                                            if constraints else [])
            summary, rss = harness.run_decoder(run_flags, source, output)
            outputs = read_lines(output)
            print(f"  round {round_ + 1}/{rounds} {name}: {summary['lines']} lines, "
                  f"{summary['seconds']:.1f}s ({summary['lines_per_second']:.1f} lines/s), "
                  f"constrained {summary['constrained']}, unmet {summary['constraints_unmet']}",
                  flush=True)
            entry = results.setdefault(name, {"seconds": [], "outputs": outputs,
                                              "summary": summary, "rss_mib": rss})
            if outputs != entry["outputs"]:
                sys.exit(f"error: {name}: round {round_ + 1}'s outputs differ from round 1's")
            entry["seconds"].append(summary["seconds"])
            if summary["seconds"] < entry["summary"]["seconds"]:
                entry["summary"] = summary
            entry["rss_mib"] = max(entry["rss_mib"], rss)
    return results


def scores(outputs, references):
    from sacrebleu.metrics import BLEU, CHRF

    bleu_metric, chrf_metric = BLEU(), CHRF()
    bleu = bleu_metric.corpus_score(outputs, [references])
    chrf = chrf_metric.corpus_score(outputs, [references])
    return {"bleu": round(bleu.score, 2), "chrf": round(chrf.score, 2), "bp": round(bleu.bp, 3),
            "signature": f"{bleu_metric.get_signature()} {chrf_metric.get_signature()}"}


# ------------------------------------------------------------------------------------------------
# the machine
def cpu_flags():
    with open("/proc/cpuinfo") as f:
        return sorted(set(re.findall(r"\b(avx512[a-z_0-9]*|amx[a-z_0-9]*)\b", f.read())))


def cpu_class(flags):
    if any(f.startswith("amx") for f in flags):
        return "AVX-512/AMX"
    if "avx512_bf16" in flags:
        return "AVX-512/BF16"
    if any(f.startswith("avx512") for f in flags):
        return "AVX-512"
    return "AVX2"


def commit():
    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout
    dirty = git("status", "--porcelain", "--", "t2t_lite").split("\n")
    return {"commit": git("rev-parse", "HEAD").strip(),
            "t2t_lite_uncommitted": [line[3:] for line in dirty if line.strip()]}


def ceiling(threads):
    return harness.matmul_flops_per_second("float32", threads=threads)


# ------------------------------------------------------------------------------------------------
def model_steps(run_dir):
    """(steps, where from) of the demo's model."""
    for name in ("results.json", "state.json"):
        path = os.path.join(run_dir, name)
        if os.path.isfile(path):
            with open(path) as f:
                record = json.load(f)
            for keys in (("train_summary", "step"), ("steps",), ("step",), ("train", "step")):
                value = record
                for key in keys:
                    value = value.get(key) if isinstance(value, dict) else None
                if isinstance(value, int):
                    return value, name
    return None, None


def default_export(run_dir):
    folder = os.path.join(run_dir, "export")
    versions = sorted((int(v) for v in os.listdir(folder) if v.isdigit()), reverse=True)
    if not versions:
        sys.exit(f"error: no export in {folder}")
    return os.path.join(folder, str(versions[0]))


def cost_table(sources, draws, full, protect, rounds, flags, eos_flags, folder):
    """The cost record: lines/s with the first k phrases of the lines allowing 3, k = 0..3."""
    cost_sources = [s for s, (_, p) in zip(sources, draws) if len(p) == MAX_PHRASES]
    cost_source_path = os.path.join(folder, "cost.src")
    write_lines(cost_source_path, cost_sources)
    configs = {}
    for k in range(MAX_PHRASES + 1):
        path = None
        if k:
            path = os.path.join(folder, f"cost_{k}.txt")
            write_lines(path, ["\t".join(p[:k]) for p in full])
        configs[f"k{k}"] = (cost_source_path, path,
                            [f"--protect={protect}", *(eos_flags if k else [])])
    print(f"cost, {len(cost_sources)} lines allowing 3 phrases, --protect={protect}:",
          flush=True)
    runs = decode_rounds(configs, rounds, flags, folder)
    base = runs["k0"]["summary"]["lines_per_second"]
    return {"protect": protect, "lines": len(cost_sources), "rows": [
        {"constraints_per_line": k,
         "lines_per_second": runs[f"k{k}"]["summary"]["lines_per_second"],
         "time_ratio": round(base / runs[f"k{k}"]["summary"]["lines_per_second"], 3),
         "seconds_rounds": runs[f"k{k}"]["seconds"],
         "constrained": runs[f"k{k}"]["summary"]["constrained"],
         "constraints_unmet": runs[f"k{k}"]["summary"]["constraints_unmet"],
         "phrases_met_share": (lambda m: m[0] / m[1] if m[1] else None)(
             met_counts(runs[f"k{k}"]["outputs"], [p[:k] for p in full]))}
        for k in range(MAX_PHRASES + 1)]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run_dir", required=True, help="the demo's run folder")
    parser.add_argument("--export_dir", help="a SavedModel version folder (default: the run's "
                        "newest export)")
    parser.add_argument("--model_dir", help="decode from this model_dir's checkpoint instead of "
                        "an export")
    parser.add_argument("--eos_until_met", choices=("off", "on", "both"), default="off",
                        help="the decoder's --eos_until_met for the constrained runs; both: "
                        "one evaluation run each way")
    parser.add_argument("--no_cost", action="store_true", help="skip the cost table")
    parser.add_argument("--max_lines", type=int, default=0, help="the first N test lines (0: all)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--cost_rounds", type=int, default=0,
                        help="rounds of the cost table (0: --rounds)")
    parser.add_argument("--seed", type=int, default=43)
    parser.add_argument("--protect_settings", default="none,auto",
                        help="--protect values for the evaluation (the first: also the cost "
                        "table's)")
    parser.add_argument("--work_dir", help="keep the files here (default: a temporary folder)")
    parser.add_argument("--output", help="the JSON record (default: "
                        "bench/results/constrained_decoding-<date>.json)")
    args = parser.parse_args()
    if args.model_dir and args.export_dir:
        sys.exit("error: give --export_dir or --model_dir, not both")
    if args.eos_until_met != "off" and not args.model_dir:
        sys.exit("error: --eos_until_met needs --model_dir (an export's search is fixed)")

    from t2t_lite.inference import parallel_search

    started = time.time()
    date = datetime.date.today().isoformat()
    model_dir = args.model_dir and os.path.abspath(args.model_dir)
    export_dir = None if model_dir else os.path.abspath(args.export_dir
                                                        or default_export(args.run_dir))
    model_flag = f"--model_dir={model_dir}" if model_dir else f"--export_dir={export_dir}"
    eos_flags = ["--eos_until_met"] if args.eos_until_met == "on" else []
    sources = read_lines(os.path.join(args.run_dir, "test.src"))
    references = read_lines(os.path.join(args.run_dir, "test.ref"))
    if len(sources) != len(references):
        sys.exit("error: test.src and test.ref differ in length")
    if args.max_lines:
        sources, references = sources[:args.max_lines], references[:args.max_lines]
    steps, steps_from = model_steps(args.run_dir)
    searches = parallel_search.resolve(0)
    flags = cpu_flags()
    record = {
        "date": date, **commit(), "cpu_flags": flags, "cpu_class": cpu_class(flags),
        "cpus": os.cpu_count(), "load_before": harness.load_note(),
        "run_dir": os.path.abspath(args.run_dir), "export_dir": export_dir,
        "model_dir": model_dir, "eos_until_met": args.eos_until_met,
        "model_steps": steps, "model_steps_from": steps_from, "lines": len(sources),
        "seed": args.seed, "rounds": args.rounds, "cost_rounds": args.cost_rounds or args.rounds,
        "parallel_searches": searches,
    }
    if model_dir:
        with open(os.path.join(model_dir, "configs.json")) as f:
            decode = json.load(f).get("decode") or {}
        record.update(beam_size=decode.get("beam_size"), alpha=decode.get("alpha"),
                      checkpoint=model_dir)
    else:
        with open(os.path.join(export_dir, "assets.extra", "t2t_lite.json")) as f:
            export_info = json.load(f)
        record.update(beam_size=export_info.get("beam_size"), alpha=export_info.get("alpha"),
                      checkpoint=export_info.get("checkpoint"))
    print(f"{model_flag} (beam {record['beam_size']}, {steps} steps from {steps_from}); "
          f"{len(sources)} test lines; {searches} parallel searches; {record['load_before']}",
          flush=True)

    record["matmul_flops_before"] = ceiling(searches)
    print(f"float32 matmul ceiling ({searches} threads): "
          f"{record['matmul_flops_before'] / 1e9:.1f} GFLOP/s", flush=True)

    draws = draw_phrases(references, args.seed)
    evaluation = [phrases[:wanted] for wanted, phrases in draws]
    full = [phrases for _, phrases in draws if len(phrases) == MAX_PHRASES]
    record["phrases"] = {
        "lines_with_phrases": sum(1 for p in evaluation if p),
        "lines_by_phrase_count": dict(sorted(collections.Counter(
            len(p) for p in evaluation).items())),
        "phrases": sum(len(p) for p in evaluation),
        "phrases_by_words": dict(sorted(collections.Counter(
            len(x.split()) for p in evaluation for x in p).items())),
        "lines_allowing_3": len(full),
    }
    print("phrases:", json.dumps(record["phrases"]), flush=True)

    protect_settings = [s.strip() for s in args.protect_settings.split(",") if s.strip()]
    with harness.scratch_dir("constrained_bench_", args.work_dir) as folder:
        os.makedirs(folder, exist_ok=True)
        source_path = os.path.join(folder, "test.src")
        write_lines(source_path, sources)
        eval_path = os.path.join(folder, "reference_phrases.txt")
        write_lines(eval_path, ["\t".join(p) for p in evaluation])
        # 1. reference-constraint evaluation
        record["evaluation"] = {}
        for protect in protect_settings:
            print(f"evaluation, --protect={protect}:", flush=True)
            configs = {"without": (source_path, None, [f"--protect={protect}"]),
                       "with": (source_path, eval_path, [f"--protect={protect}", *eos_flags])}
            if args.eos_until_met == "both":
                configs["with_eos_until_met"] = (source_path, eval_path,
                                                 [f"--protect={protect}", "--eos_until_met"])
            runs = decode_rounds(configs, args.rounds, [model_flag], folder)
            entry = {}
            for name, result in runs.items():
                met, total, lines_met, lines = met_counts(result["outputs"], evaluation)
                entry[name] = {
                    **scores(result["outputs"], references),
                    "phrases_met": met, "phrases": total, "met_share": met / total,
                    "lines_all_met": lines_met, "lines_constrained_by_file": lines,
                    "lines_per_second": result["summary"]["lines_per_second"],
                    "seconds_rounds": result["seconds"], "rss_mib": round(result["rss_mib"]),
                    "decoder_summary": result["summary"],
                }
            changed = sum(a != b for a, b in zip(runs["without"]["outputs"],
                                                 runs["with"]["outputs"]))
            entry["lines_changed"] = changed
            if "with_eos_until_met" in runs:
                entry["lines_changed_by_eos_until_met"] = sum(
                    a != b for a, b in zip(runs["with"]["outputs"],
                                           runs["with_eos_until_met"]["outputs"]))
            record["evaluation"][protect] = entry
        # 2. cost: the lines allowing 3 phrases, with the first k
        record["cost"] = None if args.no_cost else cost_table(
            sources, draws, full, protect_settings[0], args.cost_rounds or args.rounds,
            [model_flag], eos_flags, folder)

    record["matmul_flops_after"] = ceiling(searches)
    record["load_after"] = harness.load_note()
    record["wall_seconds"] = round(time.time() - started, 1)

    output = args.output or os.path.join(ROOT, "bench", "results",
                                         f"constrained_decoding-{date}.json")
    os.makedirs(os.path.dirname(os.path.abspath(output)), exist_ok=True)
    with open(output, "w") as f:
        json.dump(record, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"\nrecord: {output}\n")
    print(tables(record))


def tables(record):
    flops = (record["matmul_flops_before"] / 1e9, record["matmul_flops_after"] / 1e9)
    lines = [f"{record['date']}, {record['cpu_class']} ({' '.join(record['cpu_flags'])}), "
             f"{record['cpus']} CPUs, commit {record['commit'][:10]}"
             + (" (+ uncommitted t2t_lite files)" if record["t2t_lite_uncommitted"] else ""),
             f"float32 matmul ceiling ({record['parallel_searches']} threads): "
             f"{flops[0]:.1f} GFLOP/s before, {flops[1]:.1f} after; {record['load_before']} "
             f"before, {record['load_after']} after",
             f"model: {record['model_dir'] or record['export_dir']} ({record['model_steps']} "
             f"steps), eos_until_met {record['eos_until_met']}, beam "
             f"{record['beam_size']}, {record['parallel_searches']} parallel searches, "
             f"{record['lines']} test lines; {record['phrases']['lines_with_phrases']} lines got "
             f"{record['phrases']['phrases']} reference phrases "
             f"(lines by count {record['phrases']['lines_by_phrase_count']})", ""]
    lines += ["| --protect | constraints | phrases met | lines all met | decoder: constrained / "
              "unmet | BLEU | chrF | lines/s |", "|---|---|---|---|---|---|---|---|"]
    for protect, entry in record["evaluation"].items():
        for name in ("without", "with", "with_eos_until_met"):
            if name not in entry:
                continue
            e = entry[name]
            s = e["decoder_summary"]
            lines.append(
                f"| {protect} | {name} | {e['phrases_met']}/{e['phrases']} "
                f"({e['met_share']:.1%}) | {e['lines_all_met']}/{e['lines_constrained_by_file']} "
                f"| {s['constrained']} / {s['constraints_unmet']} | {e['bleu']:.2f} | "
                f"{e['chrf']:.2f} | {e['lines_per_second']:.1f} |")
    cost = record["cost"]
    if cost is None:
        return "\n".join(lines)
    lines += ["", f"cost: {cost['lines']} lines whose reference allows 3 phrases, "
              f"--protect={cost['protect']}", "",
              "| constraints per line | lines/s | time vs 0 | phrases met | decoder unmet |",
              "|---|---|---|---|---|"]
    for row in cost["rows"]:
        met = row["phrases_met_share"]
        lines.append(f"| {row['constraints_per_line']} | {row['lines_per_second']:.1f} | "
                     f"{row['time_ratio']:.2f}x | {'-' if met is None else format(met, '.1%')} | "
                     f"{row['constraints_unmet']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
