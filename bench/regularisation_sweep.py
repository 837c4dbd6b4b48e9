"""Dropout and label smoothing against the planned number of passes: the measurements behind the
budget planner's regularisation rule (training/regularisation.py, docs/results.md).

Each point is `t2t-lite-demo --train_steps=N --train_minutes=0` with the set's regularisation
overridden by gin bindings, on the same data (one datagen, shared by every run), run as the
demo's library call in a child process of its own (t2t_lite/isolated.py): its output goes to
RUN/demo.log, its DemoResult to RUN/point.json, which the table is made from (with the run's
dev history). Runs are step-capped, so the figures do not depend on the machine's speed, only
the wall times do. A point whose point.json exists is skipped: re-running the script resumes the
sweep (a point without one resumes its demo run, which adds to its demo.log).

  python bench/regularisation_sweep.py --out_dir=runs/sweep --points=1600:0.1,1600:0.2,400:0.1
  python bench/regularisation_sweep.py --out_dir=runs/sweep --report   # the table only

A point is STEPS:DROPOUT[:LABEL_SMOOTHING][:sSUBWORD_SAMPLING][:rREPEAT]; a repeat uses another
seed. The `auto` dropout leaves the planner's rule in charge; a point without sSAMPLING keeps the
set's subword sampling.
"""
import argparse
import json
import math
import os
import time

from t2t_lite import cli  # noqa: F401  (TensorFlow's environment as the tools set it)
from t2t_lite import atomic, isolated
from t2t_lite.demo import DemoOptions, run_demo

POINT = "point.json"


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


def run_point(point, out_dir, data_dir):
    run_dir = os.path.join(out_dir, point_name(point))
    if os.path.exists(os.path.join(run_dir, POINT)):
        return
    os.makedirs(run_dir, exist_ok=True)
    if not os.path.exists(os.path.join(run_dir, "data")):
        os.symlink(os.path.abspath(data_dir), os.path.join(run_dir, "data"))
    gin_params = []
    if point["dropout"] != "auto":  # the set's rule off, the rate fixed
        gin_params += [f"ModelConfig.dropout={point['dropout']}",
                       "TrainConfig.budget_dropout=()"]
    if point["label_smoothing"] is not None:  # the set's rule off, the value fixed
        gin_params += [f"TrainConfig.label_smoothing={point['label_smoothing']}",
                       "TrainConfig.budget_label_smoothing=()"]
    if point["sampling"] is not None:
        gin_params.append(f"TrainConfig.subword_sampling={point['sampling']}")
    if point["repeat"]:
        gin_params.append(f"TrainConfig.seed={1 + point['repeat']}")
    options = DemoOptions(run_dir=run_dir, train_steps=point["steps"], train_minutes=0,
                          gin_params=gin_params)
    start = time.monotonic()
    with open(os.path.join(run_dir, "demo.log"), "a") as log:  # a resumed run adds to it
        try:
            result = isolated.call(run_demo, options, "",
                                   lambda line, flush=False: print(line, file=log, flush=True))
            atomic.write_json(os.path.join(run_dir, POINT), result, indent=1)
            outcome = "done"
        except isolated.Failed as failure:
            outcome = failure.reason("t2t-lite-demo")
    print(f"{point_name(point)}: {outcome} after {(time.monotonic() - start) / 60:.1f} min",
          flush=True)


def bleu_and_bp(hypotheses, references):
    """sacreBLEU's BLEU and brevity penalty, as t2t-lite-bleu scores."""
    from sacrebleu.metrics import BLEU

    from t2t_lite.metrics import bleu

    score = BLEU(tokenize=bleu.DEFAULT_TOKENIZER).corpus_score(hypotheses, [references])
    return score.score, score.bp


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def dev_scores(run_dir, data_dir, export):
    """BLEU and BP of the run's export on the dev split (decoded once, then read back)."""
    from t2t_lite.file_decoding import DecodeOptions, decode_file

    source, reference = os.path.join(run_dir, "dev.src"), os.path.join(run_dir, "dev.ref")
    translation = os.path.join(run_dir, "dev.translation")
    (tsv,) = [name for name in os.listdir(data_dir) if name.endswith("-dev.tsv")]
    with open(os.path.join(data_dir, tsv), encoding="utf-8") as f:
        pairs = [line.rstrip("\n").split("\t") for line in f]
    if not os.path.exists(translation):
        for path, column in ((source, 0), (reference, 1)):
            with open(path, "w", encoding="utf-8") as f:
                f.writelines(pair[column] + "\n" for pair in pairs)
        with open(os.devnull, "w") as quiet:
            decode_file(DecodeOptions(export_dir=export, decode_from_file=source,
                                      decode_to_file=translation), progress=quiet)
    return bleu_and_bp(read_lines(translation), [pair[1] for pair in pairs])


def read_point(run_dir, data_dir):
    """The point's figures: passes planned, the rule's dropout, train and dev perplexity at the
    end, the best dev perplexity, the averaged window, dev and test scores."""
    from t2t_lite.model_dir import dev_history

    with open(os.path.join(run_dir, POINT)) as f:
        point = json.load(f)
    results, trained = point["results"], point["trained"]
    devs = sorted((step, metrics.get("perplexity", math.exp(min(metrics["loss"], 50.0))))
                  for step, metrics in dev_history.read(os.path.join(run_dir, "model")).items())
    # The trainer's regularisation plan (training/regularisation.py), if its rules chose.
    plan = trained.get("regularisation") or {"passes": None, "rates": {}}
    best = min(devs, key=lambda d: d[1]) if devs else (None, None)
    dev_bleu, dev_bp = dev_scores(run_dir, data_dir, results["export"])
    test_bleu, test_bp = bleu_and_bp(read_lines(results["translation"]),
                                     read_lines(os.path.join(run_dir, "test.ref")))
    return {"passes": plan["passes"], "chosen_dropout": plan["rates"].get("dropout"),
            "chosen_label_smoothing": plan["rates"].get("label smoothing"),
            "final_train_ppl": (trained["last_train_metrics"] or {}).get("perplexity"),
            "final_dev_ppl": devs[-1][1] if devs else None,
            "best_dev_ppl": best[1], "best_dev_step": best[0],
            "averaged": ", ".join(path.rsplit("/", 1)[-1]
                                  for path in point["averaged"]["checkpoints"]),
            "dev_bleu": dev_bleu, "dev_bp": dev_bp,
            "test_bleu": results["bleu"], "test_chrf": results["chrf"], "test_bp": test_bp,
            "train_minutes": results["seconds"]["train"] / 60}


def report(out_dir, data_dir):
    rows = []
    for name in sorted(os.listdir(out_dir), key=lambda n: (len(n), n)):
        run_dir = os.path.join(out_dir, name)
        if not os.path.exists(os.path.join(run_dir, POINT)):
            continue
        rows.append((name, read_point(run_dir, data_dir)))
    print("| run | steps | P_drop | label smoothing | subword sampling | train ppl | "
          "dev ppl (best, step) | dev BLEU (BP) | test BLEU | chrF | BP | train min | averaged |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, r in rows:
        point = parse_name(name)

        def f(value, spec):
            return "" if value is None else format(value, spec)
        dropout = (point["dropout"] if point["dropout"] != "auto"
                   else f"{f(r['chosen_dropout'], 'g')} (rule)")
        smoothing = point["label_smoothing"] or (
            f"{r['chosen_label_smoothing']:g} (rule)"
            if r["chosen_label_smoothing"] is not None else "set")
        print(f"| {name} | {point['steps']} | {dropout} | {smoothing} | "
              f"{point['sampling'] or 'set'} | "
              f"{f(r['final_train_ppl'], '.2f')} | {f(r['final_dev_ppl'], '.2f')} "
              f"({f(r['best_dev_ppl'], '.2f')}, {f(r['best_dev_step'], 'd')}) | "
              f"{r['dev_bleu']:.2f} ({r['dev_bp']:.3f}) | {r['test_bleu']:.2f} | "
              f"{r['test_chrf']:.2f} | {r['test_bp']:.3f} | {r['train_minutes']:.1f} | "
              f"{r['averaged']} |")


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
        if not os.path.exists(data_dir):
            from t2t_lite import problems
            from t2t_lite.data import datagen

            print(datagen.run(problems.build("translate_ende_gettext", []), data_dir), flush=True)
        for text in filter(None, args.points.split(",")):
            run_point(parse_point(text), args.out_dir, data_dir)
    report(args.out_dir, data_dir)


if __name__ == "__main__":
    main()
