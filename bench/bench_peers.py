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
large-matmul ceiling (fp32 and bf16, 2048^3) between windows. One worker is idle while the other
is timed.

Reported: target tokens/s each (non-pad target tokens, the figure the trainers log, over all
windows), the t2t_lite / Model Garden ratio (geometric mean over rounds of each round's ratio,
so a load that drifts during the run cancels out), and the achieved useful model FLOP/s
(analytic, t2t_lite.training.flops, every sentence at its real length: work on pads is not
counted) over the fp32 matmul ceiling.

Decoding (--part=decode): rows from bench/peers_decode.py (`measure(args) -> list[dict]`), when
that module is there.

Machines are shared: the load average is printed with the table; compare ratios, not absolutes.
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

from ceiling import matmul_flops_per_second  # bench/ is the script's folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PROTOCOL = "@@"  # prefix of the workers' answer lines (TensorFlow may print on stdout too)


# ------------------------------------------------------------------------------------------------
# shared by both workers (no t2t_lite import: the Model Garden worker runs in the peer venv)
def load_batches(path):
    import numpy as np

    data = np.load(path)
    count = len([k for k in data.files if k.startswith("inputs_")])
    return [(data[f"inputs_{i}"], data[f"targets_{i}"]) for i in range(count)]


def serve(step_fn, batches, warmup):
    """Worker loop: stdin commands {"steps": n, "start": i} -> timed window over batches[i:i+n]."""
    import numpy as np

    for i in range(warmup):  # trace / compile, first-touch of the weights
        step_fn(*batches[i % len(batches)])
    print(PROTOCOL + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        if command.get("quit"):
            break
        if "ceiling" in command:
            print(PROTOCOL + json.dumps({"ceiling": matmul_flops_per_second(command["ceiling"])}),
                  flush=True)
            continue
        chosen = [batches[(command["start"] + i) % len(batches)] for i in range(command["steps"])]
        tokens = float(sum(int(np.count_nonzero(t)) for _, t in chosen))
        start = time.perf_counter()
        for inputs, targets in chosen:
            step_fn(inputs, targets)  # returns after the step's values are fetched
        seconds = time.perf_counter() - start
        print(PROTOCOL + json.dumps({"seconds": seconds, "target_tokens": tokens}), flush=True)


def t2t_worker(config):
    import keras
    import tensorflow as tf

    from t2t_lite import hparams
    from t2t_lite.models.transformer import Transformer
    from t2t_lite.training.schedule import make_optimizer
    from t2t_lite.training.steps import TrainSteps

    model_config, train_config, _ = hparams.load(config["hparams_set"], config["gin_params"])
    keras.mixed_precision.set_global_policy(config["precision"])
    keras.utils.set_random_seed(0)
    model = Transformer(model_config, config["vocab"])
    optimizer = make_optimizer(model_config, train_config)
    optimizer.build(model.trainable_variables)
    spec = {key: tf.TensorSpec([None, None], tf.int32) for key in ("inputs", "targets")}
    steps = TrainSteps(tf.distribute.get_strategy(), model, optimizer,
                       train_config.label_smoothing, 1, element_spec=spec,
                       jit_compile=train_config.jit_compile)

    def step(inputs, targets):
        float(steps.final_step({"inputs": tf.constant(inputs),
                                "targets": tf.constant(targets)})["loss"])

    serve(step, load_batches(config["batches"]), config["warmup"])


def model_garden_worker(config):
    """Model Garden's Seq2SeqTransformer set up as shared/peers/mg_seq2seq_train.py does."""
    import numpy as np
    import tensorflow as tf
    import tf_keras
    from official.nlp.modeling.models import seq2seq_transformer as s2s

    if config["precision"] != "float32":
        tf_keras.mixed_precision.set_global_policy(config["precision"])
    tf.random.set_seed(0)

    def stack(n):
        return dict(num_layers=n, num_attention_heads=config["heads"],
                    intermediate_size=config["d_ff"], activation="relu",
                    dropout_rate=config["dropout"],
                    attention_dropout_rate=config["attention_dropout"],
                    use_bias=config["attention_bias"], norm_first=config["norm_first"],
                    norm_epsilon=config["layer_norm_epsilon"],
                    intermediate_dropout=config["relu_dropout"])

    vocab = config["vocab"]
    model = s2s.Seq2SeqTransformer(
        vocab_size=vocab, embedding_width=config["d_model"], dropout_rate=config["dropout"],
        padded_decode=False, decode_max_length=None, extra_decode_length=50, beam_size=4,
        alpha=0.6, encoder_layer=s2s.TransformerEncoder(**stack(config["layers"])),
        decoder_layer=s2s.TransformerDecoder(**stack(config["layers"])), eos_id=1)
    dummy = tf.constant([[5, 6, 1]], tf.int32)
    model(dict(inputs=dummy, targets=dummy), training=False)

    class Noam(tf_keras.optimizers.schedules.LearningRateSchedule):
        def __init__(self, d, warmup):
            self.d, self.warmup = float(d), float(warmup)

        def __call__(self, step):
            step = tf.cast(step, tf.float32) + 1.0
            return self.d ** -0.5 * tf.minimum(tf.math.rsqrt(step), step * self.warmup ** -1.5)

    optimizer = tf_keras.optimizers.Adam(learning_rate=Noam(config["d_model"], config["warmup_steps"]),
                                         beta_1=0.9, beta_2=0.98, epsilon=1e-9)
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

    serve(step, load_batches(config["batches"]), config["warmup"])


# ------------------------------------------------------------------------------------------------
# the parent
class Worker:
    def __init__(self, name, python, role, config, env):
        self.name = name
        self.process = subprocess.Popen(
            [python, os.path.abspath(__file__), f"--worker={role}", "--worker_config",
             json.dumps(config)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sys.stderr,
            text=True, env=env, cwd=ROOT)

    def read(self):
        for line in self.process.stdout:
            if line.startswith(PROTOCOL):
                return json.loads(line[len(PROTOCOL):])
        raise RuntimeError(f"the {self.name} worker ended (exit {self.process.wait()}); "
                           "its stderr is above")

    def ask(self, **command):
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return self.read()

    def close(self):
        try:
            self.process.stdin.write(json.dumps({"quit": True}) + "\n")
            self.process.stdin.close()
            self.process.wait(timeout=60)
        except Exception:  # already gone
            self.process.kill()


def write_batches(args, path):
    """Length-bucketed training batches from t2t_lite's pipeline (bench_train.real_batches),
    saved to `path` for the workers; returns (vocab, [(inputs, targets)] arrays)."""
    import numpy as np

    from bench_train import real_batches  # bench/ is the script's folder
    from t2t_lite import hparams

    _, train_config, _ = hparams.load(args.hparams_set, args.gin_param)
    vocab, batches = real_batches(args.problem, args.data_dir, args.batch_tokens,
                                  train_config.max_length, count=args.batches)
    pairs = [(batch["inputs"].numpy(), batch["targets"].numpy()) for batch in batches]
    np.savez(path, **{f"{key}_{i}": array for i, pair in enumerate(pairs)
                      for key, array in zip(("inputs", "targets"), pair)})
    return vocab, pairs


def _bf16_matmul_available():
    """bfloat16 units on this CPU, and oneDNN not capped below them (ONEDNN_MAX_CPU_ISA=AVX2
    imitates an AVX2-only machine; oneDNN then aborts on a bfloat16 matmul)."""
    from t2t_lite.training import precision

    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    uncapped = cap == "ALL" or "BF16" in cap or "AMX" in cap
    return uncapped and bool(set(precision.BF16_CPU_FLAGS) & precision.cpu_flags())


def peer_available(python):
    if not os.path.exists(python):
        return f"{python} does not exist"
    check = subprocess.run([python, "-c", "import official.nlp.modeling.models, tf_keras"],
                           capture_output=True, text=True,
                           env=dict(os.environ, TF_USE_LEGACY_KERAS="1"))
    if check.returncode:
        return (check.stderr.strip().splitlines() or ["import failed"])[-1]
    return None


def measure_training(args):
    from t2t_lite import hparams
    from bench_train import useful_flops  # bench/ is the script's folder

    model_config, train_config, _ = hparams.load(args.hparams_set, args.gin_param)
    workdir = tempfile.mkdtemp(prefix="bench_peers_")
    batches_path = os.path.join(workdir, "batches.npz")
    vocab, pairs = write_batches(args, batches_path)
    # Useful FLOPs: every sentence at its own length. Work on pad positions is not counted
    # (Model Garden does it; t2t_lite skips most of it, layers/packing.py).
    flops = [useful_flops(model_config, vocab, inputs, targets) for inputs, targets in pairs]
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1"),
               TF_CPP_MIN_LOG_LEVEL="2")
    gin_params = list(args.gin_param) + [f"TrainConfig.mixed_precision = '{args.precision}'"]
    common = {"batches": batches_path, "warmup": args.warmup, "precision": args.precision,
              "vocab": vocab}
    workers = {"t2t_lite": Worker("t2t_lite", sys.executable, "t2t", dict(
        common, hparams_set=args.hparams_set, gin_params=gin_params), env)}
    if args.baseline_tree:  # another t2t_lite source tree, raced in its own worker
        workers["t2t_lite@baseline"] = Worker("t2t_lite@baseline", sys.executable, "t2t", dict(
            common, hparams_set=args.hparams_set, gin_params=gin_params),
            dict(env, PYTHONPATH=os.path.abspath(args.baseline_tree)))
    for setting in args.contender_env:  # this tree again under other environment variables
        key, _, value = setting.partition("=")
        workers[f"t2t_lite[{setting}]"] = Worker(f"t2t_lite[{setting}]", sys.executable, "t2t",
                                                 dict(common, hparams_set=args.hparams_set,
                                                      gin_params=gin_params),
                                                 dict(env, **{key: value}))
    missing = peer_available(args.peer_python)
    if missing:
        print(f"Model Garden skipped: {args.peer_python} cannot import "
              f"official.nlp.modeling ({missing}). Set it up as shared/peers/mg_seq2seq_train.py "
              "describes and pass --peer_python.", file=sys.stderr)
    else:
        workers["model_garden"] = Worker("model_garden", args.peer_python, "mg", dict(
            common, layers=model_config.num_layers, d_model=model_config.d_model,
            d_ff=model_config.d_ff, heads=model_config.num_heads, dropout=model_config.dropout,
            attention_dropout=model_config.attention_dropout,
            relu_dropout=model_config.relu_dropout,
            norm_first=model_config.norm_position == "pre",
            layer_norm_epsilon=model_config.layer_norm_epsilon,
            attention_bias=model_config.attention_bias,
            label_smoothing=train_config.label_smoothing,
            warmup_steps=train_config.warmup_steps, jit=bool(args.peer_jit)),
            dict(env, TF_USE_LEGACY_KERAS="1"))
        if model_config.key_dim * model_config.num_heads != model_config.d_model:
            print("note: Model Garden ties d_k to d_model / heads; the sets differ here",
                  file=sys.stderr)
    try:
        for worker in workers.values():
            worker.read()  # ready: built, traced and warmed up
        totals = {name: {"seconds": 0.0, "target_tokens": 0.0, "flops": 0.0, "rates": []}
                  for name in workers}
        ceilings = {"float32": [], **({"bfloat16": []} if _bf16_matmul_available() else {})}
        order = list(workers)
        start = args.warmup
        for round_index in range(args.rounds):
            for dtype in ceilings:
                ceilings[dtype].append(workers["t2t_lite"].ask(ceiling=dtype)["ceiling"])
            for name in order if round_index % 2 == 0 else order[::-1]:
                result = workers[name].ask(steps=args.steps, start=start)
                totals[name]["rates"].append(result["target_tokens"] / result["seconds"])
                totals[name]["seconds"] += result["seconds"]
                totals[name]["target_tokens"] += result["target_tokens"]
                totals[name]["flops"] += sum(flops[(start + i) % len(flops)]
                                             for i in range(args.steps))
                print(f"round {round_index + 1}: {name:13} "
                      f"{result['target_tokens'] / result['seconds']:8.0f} target tok/s",
                      file=sys.stderr, flush=True)
            start += args.steps
        for dtype in ceilings:
            ceilings[dtype].append(workers["t2t_lite"].ask(ceiling=dtype)["ceiling"])
    finally:
        for worker in workers.values():
            worker.close()
    # The best of the measurements: a ceiling measured low under a passing load would flatter
    # the utilisation.
    fp32, bf16 = max(ceilings["float32"]), max(ceilings.get("bfloat16") or [0.0])
    peer = totals.get("model_garden")
    rows = []
    for name, total in totals.items():
        rate = total["target_tokens"] / total["seconds"]
        ratio = None
        if peer:
            # Per round, each contender against Model Garden's window next to it (same batches,
            # nearly the same load), then the geometric mean: a drifting load cancels out.
            ratios = [a / b for a, b in zip(total["rates"], peer["rates"])]
            ratio = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        rows.append({"part": "train", "name": name, "sentences_per_s": None,
                     "target_tokens_per_s": rate, "ratio_vs_model_garden": ratio,
                     "fp32_peak": total["flops"] / total["seconds"] / fp32,
                     "note": f"{args.hparams_set} {args.precision}"})
    bf16_note = f"bf16 {bf16 / 1e9:.0f} GFLOP/s" if bf16 else "bf16 not measured (no bf16 units)"
    extra = (f"matmul ceiling (best of {len(ceilings['float32'])}): fp32 {fp32 / 1e9:.0f} "
             f"GFLOP/s, {bf16_note}; {args.rounds} rounds x {args.steps} "
             f"steps each, alternating; vs Model Garden = geometric mean of per-round ratios")
    return rows, extra


def print_table(rows, notes):
    def fmt(value, spec):
        return "-" if value is None else format(value, spec)

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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["train", "decode", "all"], default="all")
    parser.add_argument("--worker", choices=["t2t", "mg"], help=argparse.SUPPRESS)
    parser.add_argument("--worker_config", help=argparse.SUPPRESS)
    known, _ = parser.parse_known_args()
    if known.worker:
        config = json.loads(known.worker_config)
        return t2t_worker(config) if known.worker == "t2t" else model_garden_worker(config)
    parser.add_argument("--data_dir", default=os.path.join(ROOT, "runs", "wsd_300", "data"),
                        help="t2t-lite-datagen --problem=translate_ende_gettext output")
    parser.add_argument("--problem", default="translate_ende_gettext")
    parser.add_argument("--hparams_set", default="small_cpu")
    parser.add_argument("--gin_param", action="append", default=[])
    parser.add_argument("--precision", default="float32",
                        help="keras policy for both (float32: the issue's AVX2 target)")
    parser.add_argument("--peer_python", default=os.path.join(ROOT, "runs", "peer_venv", "bin",
                                                              "python"))
    parser.add_argument("--peer_jit", type=int, default=0, help="Model Garden step under XLA")
    parser.add_argument("--baseline_tree", default="",
                        help="a directory holding another t2t_lite package (e.g. a checkout "
                             "from before a change): raced as a third contender")
    parser.add_argument("--contender_env", action="append", default=[],
                        help="KEY=VALUE: also race this tree with that environment variable set "
                             "(e.g. TF_NUM_INTEROP_THREADS=1); repeatable")
    parser.add_argument("--batch_tokens", type=int, default=4096)
    parser.add_argument("--batches", type=int, default=64, help="distinct batches, cycled")
    parser.add_argument("--warmup", type=int, default=4, help="untimed steps per worker")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--steps", type=int, default=3, help="steps per timed window")
    decode_module = None
    if known.part in ("decode", "all"):
        sys.path.insert(0, HERE)
        try:
            import peers_decode as decode_module
        except ImportError as error:
            if getattr(error, "name", None) != "peers_decode":
                raise
            print("decode part skipped: bench/peers_decode.py is not there yet", file=sys.stderr)
        if decode_module is not None and hasattr(decode_module, "add_arguments"):
            decode_module.add_arguments(parser)
    args = parser.parse_args()
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, ROOT)
    from t2t_lite import cli

    cli.filter_stderr()  # the workers inherit it: no TensorFlow start-up lines in the table
    rows, notes = [], []
    if args.part in ("train", "all"):
        train_rows, note = measure_training(args)
        rows += train_rows
        notes.append(note)
    if decode_module is not None:
        for row in decode_module.measure(args):
            rows.append(dict(row, part="decode"))
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    if load:
        notes.append(f"load average at the end: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
                     f"on {os.cpu_count()} CPUs")
    print_table(rows, notes)


if __name__ == "__main__":
    main()
