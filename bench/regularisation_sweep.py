"""Dropout and label smoothing against the planned number of passes: the measurements behind the
budget planner's regularisation rule (training/regularisation.py, docs/results.md).

Each point is `t2t-lite-demo --train_steps=N --train_minutes=0` with the set's regularisation
overridden by gin bindings, on the same data (one datagen, shared by every run). Runs are
step-capped, so the figures do not depend on the machine's speed, only the wall times do. A point
whose results.json exists is skipped: re-running the script resumes the sweep.

  python bench/regularisation_sweep.py --out_dir=runs/sweep --points=1600:0.1,1600:0.2,400:0.1
  python bench/regularisation_sweep.py --out_dir=runs/sweep --report   # the table only

A point is STEPS:DROPOUT[:LABEL_SMOOTHING][:sSUBWORD_SAMPLING][:rREPEAT]; a repeat uses another
seed. The `auto` dropout leaves the planner's rule in charge; a point without sSAMPLING keeps the
set's subword sampling.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time

DEV_LINE = re.compile(r"dev at step (\d+): loss \S+\s+perplexity (\S+)")
PASSES = re.compile(r"plan: ([\d.]+) passes over")
CHOSEN = re.compile(r"dropout (\S+) \(TrainConfig.budget_dropout\)")
CHOSEN_SMOOTHING = re.compile(r"label smoothing (\S+) \(TrainConfig.budget_label_smoothing\)")
AVERAGED = re.compile(r"averaged \d+ checkpoints \((.*)\) into")
TRAIN_LINE = re.compile(r"step (\d+)/\d+\s+loss \S+\s+ppl (\S+)")
BREVITY = re.compile(r"BP = ([\d.]+)")


def parse_point(text):
    fields = text.split(":")
    point = {"steps": int(fields[0]), "dropout": fields[1], "label_smoothing": None,
             "sampling": None, "repeat": 0}
    for field in fields[2:]:
        if field.startswith("r"):
            point["repeat"] = int(field[1:])
        elif field.startswith("s"):
            point["sampling"] = field[1:]
        else:
            point["label_smoothing"] = field
    return point


def parse_name(name):
    """The point a run folder was made for (point_name's inverse)."""
    steps, dropout, *rest = name.split("_")
    point = {"steps": int(steps[1:]), "dropout": dropout[1:], "label_smoothing": None,
             "sampling": None, "repeat": 0}
    for field in rest:
        if field.startswith("ls"):
            point["label_smoothing"] = field[2:]
        elif field.startswith("sw"):
            point["sampling"] = field[2:]
        else:
            point["repeat"] = int(field[1:])
    return point


def point_name(point):
    name = f"s{point['steps']}_d{point['dropout']}"
    if point["label_smoothing"] is not None:
        name += f"_ls{point['label_smoothing']}"
    if point["sampling"] is not None:
        name += f"_sw{point['sampling']}"
    if point["repeat"]:
        name += f"_r{point['repeat']}"
    return name


def run_point(point, out_dir, data_dir, demo):
    run_dir = os.path.join(out_dir, point_name(point))
    if os.path.exists(os.path.join(run_dir, "results.json")):
        return
    os.makedirs(run_dir, exist_ok=True)
    if not os.path.exists(os.path.join(run_dir, "data")):
        os.symlink(os.path.abspath(data_dir), os.path.join(run_dir, "data"))
    args = [demo, f"--run_dir={run_dir}", f"--train_steps={point['steps']}", "--train_minutes=0"]
    if point["dropout"] != "auto":  # the set's rule off, the rate fixed
        args += [f"--gin_param=ModelConfig.dropout={point['dropout']}",
                 "--gin_param=TrainConfig.budget_dropout=()"]
    if point["label_smoothing"] is not None:  # the set's rule off, the value fixed
        args += [f"--gin_param=TrainConfig.label_smoothing={point['label_smoothing']}",
                 "--gin_param=TrainConfig.budget_label_smoothing=()"]
    if point["sampling"] is not None:
        args.append(f"--gin_param=TrainConfig.subword_sampling={point['sampling']}")
    if point["repeat"]:
        args.append(f"--gin_param=TrainConfig.seed={1 + point['repeat']}")
    start = time.monotonic()
    with open(os.path.join(run_dir, "demo.log"), "w") as log:
        code = subprocess.call(args, stdout=log, stderr=subprocess.STDOUT)
    print(f"{point_name(point)}: exit {code} after {(time.monotonic() - start) / 60:.1f} min",
          flush=True)


def dev_scores(run_dir, data_dir):
    """BLEU, chrF and BP of the run's export on the dev split (decoded once, then read back)."""
    from t2t_lite.metrics import bleu

    source, reference = os.path.join(run_dir, "dev.src"), os.path.join(run_dir, "dev.ref")
    translation = os.path.join(run_dir, "dev.translation")
    (tsv,) = [name for name in os.listdir(data_dir) if name.endswith("-dev.tsv")]
    with open(os.path.join(data_dir, tsv), encoding="utf-8") as f:
        pairs = [line.rstrip("\n").split("\t") for line in f]
    if not os.path.exists(translation):
        for path, column in ((source, 0), (reference, 1)):
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(pair[column] + "\n" for pair in pairs)
        with open(os.path.join(run_dir, "results.json")) as f:
            export = json.load(f)["export"]
        decoder = os.path.join(os.path.dirname(sys.executable), "t2t-lite-decoder")
        subprocess.check_call([decoder, f"--export_dir={export}", f"--decode_from_file={source}",
                               f"--decode_to_file={translation}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(translation, encoding="utf-8") as f:
        hypotheses = f.read().split("\n")[:len(pairs)]
    scores = bleu.corpus_scores(hypotheses, [pair[1] for pair in pairs])
    return scores["bleu"], float(BREVITY.search(scores["bleu_text"]).group(1))


def read_point(run_dir, data_dir):
    """The point's figures: passes planned, the rule's dropout, train and dev perplexity at the
    end, the best dev perplexity, the averaged window, dev and test scores."""
    with open(os.path.join(run_dir, "demo.log")) as f:
        log = f.read()
    devs = [(int(s), float(p)) for s, p in DEV_LINE.findall(log)]
    trains = TRAIN_LINE.findall(log)
    passes, chosen, averaged = PASSES.findall(log), CHOSEN.findall(log), AVERAGED.findall(log)
    smoothing = CHOSEN_SMOOTHING.findall(log)
    with open(os.path.join(run_dir, "results.json")) as f:
        results = json.load(f)
    best = min(devs, key=lambda d: d[1]) if devs else (None, None)
    dev_bleu, dev_bp = dev_scores(run_dir, data_dir)
    return {"passes": float(passes[-1]) if passes else None,
            "chosen_dropout": chosen[-1] if chosen else None,
            "chosen_label_smoothing": smoothing[-1] if smoothing else None,
            "final_train_ppl": float(trains[-1][1]) if trains else None,
            "final_dev_ppl": devs[-1][1] if devs else None,
            "best_dev_ppl": best[1], "best_dev_step": best[0],
            "averaged": averaged[-1] if averaged else None,
            "dev_bleu": dev_bleu, "dev_bp": dev_bp,
            "test_bleu": results["bleu"], "test_chrf": results["chrf"],
            "test_bp": float(BREVITY.search(results["report"]).group(1)),
            "train_minutes": results["seconds"]["train"] / 60}


def report(out_dir, data_dir):
    rows = []
    for name in sorted(os.listdir(out_dir), key=lambda n: (len(n), n)):
        run_dir = os.path.join(out_dir, name)
        if not os.path.exists(os.path.join(run_dir, "results.json")):
            continue
        rows.append((name, read_point(run_dir, data_dir)))
    print("| run | steps | P_drop | label smoothing | subword sampling | train ppl | "
          "dev ppl (best, step) | dev BLEU (BP) | test BLEU | chrF | BP | train min | averaged |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in rows:
        point = parse_name(name)

        def f(value, spec):
            return "" if value is None else format(value, spec)
        dropout = point["dropout"] if point["dropout"] != "auto" else f"{r['chosen_dropout']} (rule)"
        smoothing = point["label_smoothing"] or (
            f"{r['chosen_label_smoothing']} (rule)" if r["chosen_label_smoothing"] else "set")
        print(f"| {name} | {point['steps']} | {dropout} | {smoothing} | "
              f"{point['sampling'] or 'set'} | "
              f"{f(r['final_train_ppl'], '.2f')} | {f(r['final_dev_ppl'], '.2f')} "
              f"({f(r['best_dev_ppl'], '.2f')}, {f(r['best_dev_step'], 'd')}) | "
              f"{r['dev_bleu']:.2f} ({r['dev_bp']:.3f}) | {r['test_bleu']:.2f} | "
              f"{r['test_chrf']:.2f} | {r['test_bp']:.3f} | {r['train_minutes']:.1f} | "
              f"{(r['averaged'] or '').split(';')[0]} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out_dir", required=True)
    parser.add_argument("--data_dir", help="the problem's data (default: OUT_DIR/data, made once)")
    parser.add_argument("--points", default="", help="STEPS:DROPOUT[:LS][:sRATE][:rN],...")
    parser.add_argument("--report", action="store_true", help="print the table and exit")
    args = parser.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    data_dir = args.data_dir or os.path.join(args.out_dir, "data")
    if not args.report:
        demo = os.path.join(os.path.dirname(sys.executable), "t2t-lite-demo")
        if not os.path.exists(data_dir):
            subprocess.check_call([os.path.join(os.path.dirname(sys.executable), "t2t-lite-datagen"),
                                   "--problem=translate_ende_gettext", f"--data_dir={data_dir}"])
        for text in filter(None, args.points.split(",")):
            run_point(parse_point(text), args.out_dir, data_dir, demo)
    report(args.out_dir, data_dir)


if __name__ == "__main__":
    main()
