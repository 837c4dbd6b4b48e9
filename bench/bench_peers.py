"""t2t_lite against TF Model Garden, side by side in one run, as ratios on this machine.

    .venv/bin/python bench/bench_peers.py [--part=train|decode|all] [--data_dir=D]
        [--peer_python=runs/peer_venv/bin/python] [--rounds=3 --steps=10]

Training (--part=train): t2t_lite (`--hparams_set`, default small_cpu) and Model Garden's
Seq2SeqTransformer at equal configuration (layers, d_model, d_ff, heads, norm position, dropout,
layer-norm epsilon, attention without biases, the shared vocabulary of the data dir) train on the
very same length-bucketed batches (t2t_lite's own tf.data pipeline over the gettext EN-DE training
pairs, written once to a file both read). Each runs in its own long-lived worker process (Model
Garden's with TF_USE_LEGACY_KERAS=1 in the peer venv, as shared/peers/mg_seq2seq_train.py sets it
up: its model, label-smoothed loss, tf_keras Adam + Noam schedule); the parent alternates timed
windows between them (A B B A ... so drift in the machine's load favours neither), and measures the
large-matmul ceiling (fp32 and bf16, 2048^3) between rounds. One worker is idle while the other
is timed.

Reported: target tokens/s each (non-pad target tokens, the figure the trainers log, over all
windows), the t2t_lite / Model Garden ratio (geometric mean over rounds of each round's ratio,
so a load that drifts during the run cancels out), and the achieved useful model FLOP/s
(analytic, t2t_lite.training.flops, every sentence at its real length: work on pads is not
counted) over the fp32 matmul ceiling.

Decoding (--part=decode): rows from bench/peers_decode.py (`measure(args) -> list[dict]`).

Machines are shared: the load average is printed with the table; compare ratios, not absolutes.
"""
import argparse
import math
import os
import sys

import harness


# ------------------------------------------------------------------------------------------------
# the workers (no t2t_lite import at the top: the Model Garden worker runs in the peer venv)
def load_batches(path):
    import numpy as np

    data = np.load(path)
    count = len([k for k in data.files if k.startswith("inputs_")])
    return [(data[f"inputs_{i}"], data[f"targets_{i}"]) for i in range(count)]


def serve_windows(step_fn, batches, warmup):
    """Warms up, then answers "window" (timed steps over batches[start:start + steps], cycled) and
    "ceiling" (the matmul ceiling in this process) commands."""
    import numpy as np

    for i in range(warmup):  # trace / compile, first-touch of the weights
        step_fn(*batches[i % len(batches)])

    def window(steps, start):
        chosen = [batches[(start + i) % len(batches)] for i in range(steps)]
        tokens = float(sum(int(np.count_nonzero(t)) for _, t in chosen))
        seconds, _ = harness.timed(lambda: [step_fn(*pair) for pair in chosen])
        return {"seconds": seconds, "target_tokens": tokens}

    harness.serve(window=window,
                  ceiling=lambda dtype: {"ceiling": harness.matmul_flops_per_second(dtype)})


def t2t_worker(config):
    import tensorflow as tf

    spec = {key: tf.TensorSpec([None, None], tf.int32) for key in ("inputs", "targets")}
    _, _, steps = harness.train_steps(config["hparams_set"], config["gin_params"],
                                      config["precision"], config["vocab"], element_spec=spec)

    def step(inputs, targets):  # returns after the step's values are fetched
        float(steps.final_step({"inputs": tf.constant(inputs),
                                "targets": tf.constant(targets)})["loss"])

    serve_windows(step, load_batches(config["batches"]), config["warmup"])


def model_garden_worker(config):
    """Model Garden's Seq2SeqTransformer trained as harness.PEER_SCRIPT trains it."""
    import numpy as np
    import tensorflow as tf
    import tf_keras

    if config["precision"] != "float32":
        tf_keras.mixed_precision.set_global_policy(config["precision"])
    model = harness.model_garden_transformer(**config["model"])
    vocab = config["model"]["vocab_size"]

    class Noam(tf_keras.optimizers.schedules.LearningRateSchedule):
        def __init__(self, d, warmup):
            self.d, self.warmup = float(d), float(warmup)

        def __call__(self, step):
            step = tf.cast(step, tf.float32) + 1.0
            return self.d ** -0.5 * tf.minimum(tf.math.rsqrt(step), step * self.warmup ** -1.5)

    optimizer = tf_keras.optimizers.Adam(
        learning_rate=Noam(config["model"]["d_model"], config["warmup_steps"]), beta_1=0.9,
        beta_2=0.98, epsilon=1e-9)
    eps = config["label_smoothing"]
    confidence, low = 1.0 - eps, eps / (vocab - 1)
    norm_const = (-(confidence * np.log(confidence) + (vocab - 1) * low * np.log(low + 1e-20))
                  if eps > 0 else 0.0)
    variables = model.trainable_variables

    def train_step(inputs, targets):  # the peer recipe's loss and update
        with tf.GradientTape() as tape:
            logits = tf.cast(model(dict(inputs=inputs, targets=targets), training=True),
                             tf.float32)
            log_probs = tf.nn.log_softmax(logits, axis=-1)
            weights = tf.cast(tf.not_equal(targets, 0), tf.float32)
            nll = -tf.gather(log_probs, targets, axis=-1, batch_dims=2)
            smooth = -tf.reduce_sum(log_probs, axis=-1)
            xent = (confidence - low) * nll + low * smooth - norm_const
            tokens = tf.reduce_sum(weights)
            loss = tf.reduce_sum(xent * weights) / tokens
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables))
        return loss

    signature = [tf.TensorSpec([None, None], tf.int32)] * 2
    compiled = tf.function(train_step, input_signature=signature, jit_compile=config["jit"],
                           reduce_retracing=True)

    def step(inputs, targets):
        float(compiled(tf.constant(inputs), tf.constant(targets)))

    serve_windows(step, load_batches(config["batches"]), config["warmup"])


# ------------------------------------------------------------------------------------------------
# the parent
def write_batches(args, path):
    """Length-bucketed training batches from t2t_lite's pipeline, saved to `path` for the workers;
    returns (vocab, [(inputs, targets)] arrays)."""
    import numpy as np

    from t2t_lite import hparams

    _, train_config, _ = hparams.load(args.hparams_set, args.gin_param)
    vocab, batches = harness.real_batches(args.problem, args.data_dir, args.batch_tokens,
                                          train_config.max_length, count=args.batches)
    pairs = [(batch["inputs"].numpy(), batch["targets"].numpy()) for batch in batches]
    np.savez(path, **{f"{key}_{i}": array for i, pair in enumerate(pairs)
                      for key, array in zip(("inputs", "targets"), pair)})
    return vocab, pairs


def start_workers(args, model_config, train_config, common):
    """{name: harness.Worker}: t2t_lite, the optional t2t_lite variants, and Model Garden when the
    peer venv can run it."""
    t2t = dict(common, hparams_set=args.hparams_set, gin_params=args.gin_param)

    def t2t_lite(name, **env):
        return harness.Worker(name, sys.executable, __file__, "t2t", t2t, harness.worker_env(**env))

    workers = {"t2t_lite": t2t_lite("t2t_lite")}
    if args.baseline_tree:  # another t2t_lite source tree, raced in its own worker
        workers["t2t_lite@baseline"] = t2t_lite("t2t_lite@baseline",
                                                PYTHONPATH=os.path.abspath(args.baseline_tree))
    for setting in args.contender_env:  # this tree again under other environment variables
        key, _, value = setting.partition("=")
        workers[f"t2t_lite[{setting}]"] = t2t_lite(f"t2t_lite[{setting}]", **{key: value})
    missing = harness.peer_missing(args.peer_python)
    if missing:
        print(f"Model Garden skipped: {args.peer_python} cannot import "
              f"official.nlp.modeling ({missing}). Set it up as shared/peers/mg_seq2seq_train.py "
              "describes and pass --peer_python.", file=sys.stderr)
        return workers
    workers["model_garden"] = harness.Worker("model_garden", args.peer_python, __file__, "mg", dict(
        common, model=harness.model_garden_config(model_config, common["vocab"]),
        label_smoothing=train_config.label_smoothing, warmup_steps=train_config.warmup_steps,
        jit=bool(args.peer_jit)), harness.model_garden_env())
    if model_config.key_dim * model_config.num_heads != model_config.d_model:
        print("note: Model Garden ties d_k to d_model / heads; the sets differ here",
              file=sys.stderr)
    return workers


def race(args, workers):
    """Alternating timed windows of the workers (closed afterwards), the matmul ceiling measured
    between rounds: ({name: [window of each round]}, {dtype: [ceilings]})."""
    ceilings = {"float32": [], **({"bfloat16": []} if harness.bf16_units() else {})}

    def measure_ceilings(_):
        for dtype in ceilings:
            ceilings[dtype].append(workers["t2t_lite"].ask("ceiling", dtype=dtype)["ceiling"])

    def window(worker):  # round r times the same batches for every contender
        return lambda r: worker.ask("window", steps=args.steps,
                                    start=args.warmup + r * args.steps)

    def report(round_index, name, result):
        print(f"round {round_index + 1}: {name:13} "
              f"{result['target_tokens'] / result['seconds']:8.0f} target tok/s",
              file=sys.stderr, flush=True)

    try:
        for worker in workers.values():
            worker.wait_ready()  # built, traced and warmed up before anything is timed
        results = harness.alternate({name: window(w) for name, w in workers.items()},
                                    args.rounds, between=measure_ceilings, report=report)
    finally:
        for worker in workers.values():
            worker.close()
    return results, ceilings


def measure_training(args):
    from t2t_lite import hparams

    model_config, train_config, _ = hparams.load(args.hparams_set, args.gin_param)
    with harness.scratch_dir("bench_peers_") as workdir:
        batches_path = os.path.join(workdir, "batches.npz")
        vocab, pairs = write_batches(args, batches_path)
        common = {"batches": batches_path, "warmup": args.warmup, "precision": args.precision,
                  "vocab": vocab}
        results, ceilings = race(args, start_workers(args, model_config, train_config, common))
    # Useful FLOPs: every sentence at its own length. Work on pad positions is not counted
    # (Model Garden does it; t2t_lite skips most of it, layers/packing.py).
    flops = [harness.useful_flops(model_config, vocab, inputs, targets)
             for inputs, targets in pairs]
    window_flops = [sum(flops[(args.warmup + r * args.steps + i) % len(flops)]
                        for i in range(args.steps)) for r in range(args.rounds)]
    # The best of the measurements: a ceiling measured low under a passing load would flatter
    # the utilisation.
    fp32, bf16 = max(ceilings["float32"]), max(ceilings.get("bfloat16") or [0.0])
    rates = {name: [w["target_tokens"] / w["seconds"] for w in windows]
             for name, windows in results.items()}
    peer = rates.get("model_garden")
    rows = []
    for name, windows in results.items():
        seconds = sum(w["seconds"] for w in windows)
        ratio = None
        if peer:
            # Per round, each contender against Model Garden's window next to it (same batches,
            # nearly the same load), then the geometric mean: a drifting load cancels out.
            ratios = [a / b for a, b in zip(rates[name], peer)]
            ratio = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        rows.append({"part": "train", "name": name, "sentences_per_s": None,
                     "target_tokens_per_s": sum(w["target_tokens"] for w in windows) / seconds,
                     "ratio_vs_model_garden": ratio,
                     "fp32_peak": sum(window_flops) / seconds / fp32,
                     "note": f"{args.hparams_set} {args.precision}"})
    bf16_note = f"bf16 {bf16 / 1e9:.0f} GFLOP/s" if bf16 else "bf16 not measured (no bf16 units)"
    extra = (f"matmul ceiling (best of {len(ceilings['float32'])}): fp32 {fp32 / 1e9:.0f} "
             f"GFLOP/s, {bf16_note}; {args.rounds} rounds x {args.steps} "
             f"steps each, alternating; vs Model Garden = geometric mean of per-round ratios")
    return rows, extra


def print_table(rows, notes):
    fmt = harness.fmt
    print("\n| part | engine | sentences/s | target tok/s | vs Model Garden | FLOP/s / fp32 peak "
          "| note |\n|---|---|---:|---:|---:|---:|---|")
    for r in rows:
        print(f"| {r.get('part', 'decode')} | {r['name']} | {fmt(r.get('sentences_per_s'), '.2f')} "
              f"| {fmt(r.get('target_tokens_per_s'), '.0f')} "
              f"| {fmt(r.get('ratio_vs_model_garden'), '.2f')}"
              f"{'' if r.get('ratio_vs_model_garden') is None else 'x'} "
              f"| {fmt(r.get('fp32_peak'), '.1%')} | {r.get('note', '')} |")
    for note in notes:
        print(f"\n{note}")


def main():
    if harness.worker_main({"t2t": t2t_worker, "mg": model_garden_worker}):
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["train", "decode", "all"], default="all")
    parser.add_argument("--data_dir", default=os.path.join(harness.ROOT, "runs", "wsd_300", "data"),
                        help="t2t-lite-datagen --problem=translate_ende_gettext output")
    parser.add_argument("--problem", default="translate_ende_gettext")
    parser.add_argument("--hparams_set", default="small_cpu")
    parser.add_argument("--gin_param", action="append", default=[])
    parser.add_argument("--precision", default="float32",
                        help="keras policy for both (float32: what a CPU without bfloat16 units "
                             "runs)")
    harness.add_peer_python(parser)
    parser.add_argument("--peer_jit", type=int, default=0, help="Model Garden step under XLA")
    parser.add_argument("--baseline_tree", default="",
                        help="a directory holding another t2t_lite package (e.g. another "
                             "checkout): raced as a third contender")
    parser.add_argument("--contender_env", action="append", default=[],
                        help="KEY=VALUE: also race this tree with that environment variable set "
                             "(e.g. TF_NUM_INTEROP_THREADS=1); repeatable")
    parser.add_argument("--batch_tokens", type=int, default=4096)
    parser.add_argument("--batches", type=int, default=64, help="distinct batches, cycled")
    parser.add_argument("--warmup", type=int, default=4, help="untimed steps per worker")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=3, help="steps per timed window")
    import peers_decode  # bench/ is this script's folder: on sys.path

    peers_decode.add_arguments(parser)
    args = parser.parse_args()
    harness.tensorflow_env()
    from t2t_lite import cli

    cli.filter_stderr()  # the workers inherit it: no TensorFlow start-up lines in the table
    rows, notes = [], []
    if args.part in ("train", "all"):
        train_rows, note = measure_training(args)
        rows += train_rows
        notes.append(note)
    if args.part in ("decode", "all"):
        rows += [dict(row, part="decode") for row in peers_decode.measure(args)]
    load = harness.load_note()
    if load:
        notes.append(f"at the end: {load}")
    print_table(rows, notes)


if __name__ == "__main__":
    main()
