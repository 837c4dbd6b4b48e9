"""BLEU versus training steps (or minutes), from the checkpoints of one run (README "Results").

Every checkpoint is numbered by its step and records the training seconds spent to reach it
(`trained_seconds`); this script translates a split with each checkpoint (beam search, the model's
decode settings) and plots sacreBLEU against steps (machine-independent) or minutes.

    python bench/bleu_curve.py --model_dir=runs/ende_gettext/model \
        --data_dir=runs/ende_gettext/data --split=dev --output=docs/bleu_curve.png [--x=minutes]
"""
import argparse
import json
import os

import harness

harness.tensorflow_env()

import tensorflow as tf  # noqa: E402


def checkpoint_minutes(path):
    reader = tf.train.load_checkpoint(path)
    key = "trained_seconds/.ATTRIBUTES/VARIABLE_VALUE"
    return float(reader.get_tensor(key)) / 60 if reader.has_tensor(key) else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model_dir", required=True)
    parser.add_argument("--data_dir", required=True)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--sentences", type=int, default=0, help="0: the whole split")
    parser.add_argument("--output", default="bleu_curve.png")
    parser.add_argument("--x", choices=("steps", "minutes"), default="steps")
    parser.add_argument("--title", default="small_cpu on translate_ende_gettext: beam 4, alpha 0.6")
    parser.add_argument("--reuse", default=None,
                        help="JSON lines printed by an earlier run: checkpoints found there are "
                             "not translated again (for extending a curve after more training)")
    args = parser.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from t2t_lite.inference.translation_module import from_model_dir
    from t2t_lite.metrics.bleu import corpus_scores
    from t2t_lite.model_dir.checkpoint_reader import checkpoint_paths

    tsv = [os.path.join(args.data_dir, n) for n in os.listdir(args.data_dir)
           if n.endswith(f"-{args.split}.tsv")][0]
    pairs = [line.rstrip("\n").split("\t") for line in open(tsv, encoding="utf-8")]
    if args.sentences:
        pairs = pairs[:args.sentences]
    sources = [s for s, _ in pairs]
    references = [t for _, t in pairs]
    known = {}
    if args.reuse:
        for line in open(args.reuse, encoding="utf-8"):
            if line.startswith("{"):
                point = json.loads(line)
                known[point["checkpoint"]] = point
    points = []
    for path in checkpoint_paths(args.model_dir):
        if os.path.basename(path) in known:
            points.append(known[os.path.basename(path)])
            print(json.dumps(points[-1]), flush=True)
            continue
        minutes = checkpoint_minutes(path)
        module = from_model_dir(args.model_dir, checkpoint_path=path)
        hypotheses = []
        for start in range(0, len(sources), 64):
            out = module.serve(tf.constant(sources[start:start + 64]))
            hypotheses += [t.decode("utf-8") for t in out["outputs"].numpy()]
        scores = corpus_scores(hypotheses, references)
        points.append({"checkpoint": os.path.basename(path), "minutes": minutes,
                       "steps": int(path.rsplit("-", 1)[1]),
                       "bleu": round(scores["bleu"], 2), "chrf": round(scores["chrf"], 2)})
        print(json.dumps(points[-1]), flush=True)
    points = [p for p in points if p.get(args.x) is not None]
    xs = [p[args.x] for p in points]
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot(xs, [p["bleu"] for p in points], "o-", label="BLEU")
    axis.plot(xs, [p["chrf"] for p in points], "s--", label="chrF")
    axis.set_xlabel(f"training {args.x}")
    axis.set_ylabel(f"sacreBLEU / chrF on {args.split} ({len(pairs)} sentences)")
    axis.set_title(args.title)
    axis.grid(alpha=0.3)
    axis.legend()
    figure.tight_layout()
    figure.savefig(args.output, dpi=110)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
