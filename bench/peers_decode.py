"""Beam-4 decoding, side by side: t2t_lite (checkpoint module and SavedModel, float32; the opt-in
bfloat16 beam search as its own row), TF Model Garden's Seq2SeqTransformer beam search, and
CTranslate2 (from t2t_lite's export), at equal model size.

    .venv/bin/python bench/peers_decode.py [--decode_sentences=128 --decode_source_length=20 \
        --decode_extra_length=10 --decode_batch=64 --decode_rounds=2 \
        --decode_parallel_searches=0 --peer_python=runs/peer_venv/bin/python]

bench/bench_peers.py imports `add_arguments(parser)` and `measure(args) -> list[dict]` from here.

Equal work: every model is `small` (3+3 layers, d_model 256, d_ff 1024, 4 heads, 8k shared
vocabulary) with RANDOM weights, and every source has the same length, so every engine decodes
every sentence to its length limit (source + EOS + extra_length; random weights practically never
choose EOS): the same number of beam steps per sentence. The mean output length of each engine is
printed in its note, which shows it. t2t_lite and CTranslate2 run the very same weights;
Model Garden (pre-norm, no attention biases: its defaults) has its own random weights.

Model Garden runs in a long-lived subprocess of the peer venv (TF_USE_LEGACY_KERAS=1, as
shared/peers/mg_seq2seq_train.py builds it); the parent alternates the contenders round by round
(t2t_lite, Model Garden, CTranslate2, ..., reversed in the next round) and times a 2048^3 fp32
matmul between them, so machine load drifts favour none. Each contender's best round counts.

t2t_lite and CTranslate2 decode as t2t-lite-decoder does (--decode_parallel_searches, default
one per core: each batch split into interleaved parts searched at once, each op on one thread;
t2t_lite/export/parallel_search.py). This process sets TensorFlow's threads for that before its
first op, or runs itself again in a fresh process when TensorFlow already started (bench_peers.py
--part=all trains first); the matmul ceiling then multiplies on every core at once. Model Garden
runs as it ships, plus a row with its batches split the same way by this bench.

Rows: sentences/s, target tokens/s (output tokens, EOS counted), the ratio to Model Garden in
sentences/s, and in the note the achieved decoder FLOP/s (analytic, beam rows x per-step matmul
FLOPs, attention excluded) over the fp32 matmul ceiling.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from ceiling import matmul_flops_per_second  # bench/ is the script's folder

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

SMALL = dict(num_layers=3, d_model=256, d_ff=1024, num_heads=4)
PROTOCOL = "@@"

# The Model Garden worker: runs under the peer venv's python, never imports t2t_lite.
MG_WORKER = r'''
import json, os, sys, time
os.environ["TF_USE_LEGACY_KERAS"] = "1"
import numpy as np
import tensorflow as tf
from official.nlp.modeling.models import seq2seq_transformer as s2s

config = json.loads(sys.argv[1])
ids = np.load(config["ids_file"])
searches = config["searches"]
if searches > 1:  # the same threads as t2t_lite's parallel searches (see measure())
    tf.config.threading.set_intra_op_parallelism_threads(max(1, config["cores"] // searches))
    tf.config.threading.set_inter_op_parallelism_threads(max(searches, 2))
tf.random.set_seed(0)

def stack(n):
    return dict(num_layers=n, num_attention_heads=config["num_heads"],
                intermediate_size=config["d_ff"], activation="relu", dropout_rate=0.0,
                attention_dropout_rate=0.0, use_bias=False, norm_first=True, norm_epsilon=1e-6,
                intermediate_dropout=0.0)

model = s2s.Seq2SeqTransformer(
    vocab_size=config["vocab_size"], embedding_width=config["d_model"], dropout_rate=0.0,
    padded_decode=False, decode_max_length=None, extra_decode_length=config["extra_length"],
    beam_size=config["beam_size"], alpha=config["alpha"],
    encoder_layer=s2s.TransformerEncoder(**stack(config["num_layers"])),
    decoder_layer=s2s.TransformerDecoder(**stack(config["num_layers"])), eos_id=1)
decode = tf.function(lambda x: model(dict(inputs=x), training=False),
                     input_signature=[tf.TensorSpec([None, None], tf.int32)])

pool = None
if searches > 1:
    import concurrent.futures
    pool = concurrent.futures.ThreadPoolExecutor(searches)

def decode_batch(batch):
    if pool is None:
        return decode(tf.constant(batch))["outputs"].numpy()
    # Interleaved parts searched at once, as t2t_lite's batch_decode does.
    parts = [batch[i::searches] for i in range(min(searches, len(batch)))]
    return np.concatenate(list(pool.map(
        lambda part: decode(tf.constant(part))["outputs"].numpy(), parts)))

def run(rows):
    tokens = 0
    for start in range(0, len(rows), config["batch"]):
        out = decode_batch(rows[start:start + config["batch"]])
        for row in out.tolist():
            row = [t for t in row if t != 0]
            # Beam steps: up to and including EOS, or every position when none came.
            tokens += (row.index(1) + 1) if 1 in row else len(row)
    return tokens

run(ids[:2])  # trace
print("@@" + json.dumps({"ready": True}), flush=True)
for line in sys.stdin:
    if line.strip() != "run":
        break
    start = time.perf_counter()
    tokens = run(ids)
    print("@@" + json.dumps({"seconds": time.perf_counter() - start, "tokens": tokens}),
          flush=True)
'''


def add_arguments(parser):
    """The decode flags (bench_peers.py adds them to its own parser; --peer_python may exist)."""
    group = parser.add_argument_group("decoding (bench/peers_decode.py)")
    group.add_argument("--decode_sentences", type=int, default=128)
    group.add_argument("--decode_source_length", type=int, default=20,
                       help="tokens per source sentence (EOS added), the same for all")
    group.add_argument("--decode_extra_length", type=int, default=10,
                       help="output limit = source + EOS + this")
    group.add_argument("--decode_batch", type=int, default=64, help="sentences per batch")
    group.add_argument("--decode_beam_size", type=int, default=4)
    group.add_argument("--decode_alpha", type=float, default=0.6)
    group.add_argument("--decode_rounds", type=int, default=2)
    group.add_argument("--decode_vocab_size", type=int, default=8000)
    group.add_argument("--decode_engines", default="checkpoint,savedmodel,checkpoint_bf16,"
                       "model_garden,model_garden_split,ctranslate2,ctranslate2_int8",
                       help="comma-separated subset of the rows (checkpoint_bf16: the opt-in "
                            "bfloat16 beam search, only on CPUs with bfloat16 units; "
                            "model_garden_split: Model Garden's search with each batch split "
                            "over the cores by this bench, as t2t_lite's decoder does)")
    group.add_argument("--decode_parallel_searches", type=int, default=0,
                       help="t2t-lite-decoder's --parallel_searches for the t2t_lite and "
                            "CTranslate2 rows (0: one per CPU core)")
    if "--peer_python" not in parser._option_string_actions:
        parser.add_argument("--peer_python",
                            default=os.path.join(ROOT, "runs", "peer_venv", "bin", "python"))
    return parser


def _decoder_flops_per_token(beam_size, vocab_size, num_layers, d_model, d_ff, **_):
    """Matmul FLOPs of one beam step for one sentence (K rows): self QKV + out, cross Q + out,
    feed-forward, logits. Attention scores/context and cross K/V (computed once) are left out."""
    per_row = num_layers * (4 * d_model ** 2 + 2 * d_model ** 2 + 2 * d_model * d_ff)
    per_row += d_model * vocab_size
    return 2 * beam_size * per_row


class _ModelGarden:
    def __init__(self, python, config):
        self.process = subprocess.Popen(
            [python, "-c", MG_WORKER, json.dumps(config)], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, text=True,
            env=dict(os.environ, TF_USE_LEGACY_KERAS="1", TF_CPP_MIN_LOG_LEVEL="2",
                     TF_ENABLE_ONEDNN_OPTS=os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1")))
        self._answer()

    def _answer(self):
        for line in self.process.stdout:
            if line.startswith(PROTOCOL):
                return json.loads(line[len(PROTOCOL):])
        raise RuntimeError(f"Model Garden worker ended (status {self.process.wait()})")

    def __call__(self):
        self.process.stdin.write("run\n")
        self.process.stdin.flush()
        answer = self._answer()
        return answer["seconds"], answer["tokens"]

    def close(self):
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        except OSError:
            pass
        self.process.wait(timeout=60)


def _peer_missing(python):
    if not os.path.exists(python):
        return f"{python} does not exist"
    check = subprocess.run(
        [python, "-c", "import os; os.environ['TF_USE_LEGACY_KERAS']='1'; "
                       "from official.nlp.modeling.models import seq2seq_transformer"],
        capture_output=True, text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    return None if check.returncode == 0 else check.stderr.strip().splitlines()[-1][:200]


def measure(args):
    """Decodes the same sentences through every engine, alternating; returns one dict per row."""
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    import dataclasses

    import keras
    import numpy as np
    import tensorflow as tf

    from t2t_lite import hparams
    from t2t_lite.data import tokenizers, vocab
    from t2t_lite.export import batch_decode, exporter, parallel_search, serving_module
    from t2t_lite.models.transformer import Transformer

    # t2t-lite-decoder's threads: set before TensorFlow's first op, or in a fresh process.
    searches = parallel_search.resolve(args.decode_parallel_searches)
    if not parallel_search.configure_tensorflow(searches):
        return _measure_in_subprocess(args)
    cores = parallel_search.available_cores()
    pool = parallel_search.thread_pool(searches)

    engines = [e.strip() for e in args.decode_engines.split(",") if e.strip()]
    vocab_size = args.decode_vocab_size
    beam, alpha, extra = args.decode_beam_size, args.decode_alpha, args.decode_extra_length
    root = tempfile.mkdtemp(prefix="peers_decode_")
    config = dataclasses.replace(hparams.load("small")[0], **SMALL, dropout=0.0,
                                 max_length=max(128, args.decode_source_length + extra + 2))
    keras.utils.set_random_seed(0)
    model = Transformer(config, vocab_size)
    symbols = [f"w{i}" for i in range(vocab_size - 3)]
    vocab_path = vocab.write_symbol_vocab(os.path.join(root, "bench.symbols.txt"), symbols)
    tokenizer = tokenizers.load_tokenizer(vocab_path)

    rng = np.random.default_rng(0)
    ids = rng.integers(3, vocab_size, size=(args.decode_sentences, args.decode_source_length + 1))
    ids[:, -1] = 1
    ids = ids.astype(np.int32)
    ids_file = os.path.join(root, "ids.npy")
    np.save(ids_file, ids)
    batches = [ids[i:i + args.decode_batch] for i in range(0, len(ids), args.decode_batch)]

    def tf_engine(translator):
        a, e = tf.constant(alpha), tf.constant(extra)

        def run(rows=batches):
            # As t2t-lite-decoder translates batches: each split into `searches` parts, all
            # queued at once.
            rows = [row for batch in rows for row in batch]
            parts = parallel_search.split_batches(
                [range(start, min(start + args.decode_batch, len(rows)))
                 for start in range(0, len(rows), args.decode_batch)], searches)
            return sum(len(text.split()) + 1
                       for _, texts, _ in batch_decode.translate_parts(translator, rows, parts,
                                                                       a, e, pool)
                       for text in texts[:, 0])
        return run

    contenders, notes = {}, {}
    module = serving_module.TranslationModule(model, tokenizer, beam_size=beam, alpha=alpha,
                                              extra_length=extra)
    if "checkpoint" in engines:
        contenders["t2t_lite checkpoint"] = tf_engine(module)
    if "savedmodel" in engines:
        version_dir = exporter.save(module, os.path.join(root, "export"))
        contenders["t2t_lite SavedModel"] = tf_engine(tf.saved_model.load(version_dir))
    if "checkpoint_bf16" in engines:
        from t2t_lite.training import precision

        if set(precision.BF16_CPU_FLAGS) & precision.cpu_flags():
            bf16_module = serving_module.TranslationModule(
                model, tokenizer, beam_size=beam, alpha=alpha, extra_length=extra,
                precision="bfloat16")
            contenders["t2t_lite checkpoint, bfloat16"] = tf_engine(bf16_module)
        else:
            notes["t2t_lite checkpoint, bfloat16"] = "skipped: this CPU has no bfloat16 units"
    for name in ("ctranslate2", "ctranslate2_int8"):
        if name not in engines:
            continue
        try:
            import ctranslate2

            from t2t_lite.export import ctranslate2_export
        except ImportError:
            notes[name] = "skipped: ctranslate2 is not installed"
            continue
        quantization = "int8" if name.endswith("int8") else None
        folder = ctranslate2_export.convert(model, list(tokenizers.RESERVED_TOKENS) + symbols,
                                            os.path.join(root, name), quantization=quantization)
        # As the decoder's CTranslate2 engine: `searches` translators, cores // searches threads
        # each; a batch's parts of max_batch_size sentences go to them at once.
        translator = ctranslate2.Translator(folder, device="cpu", inter_threads=searches,
                                            intra_threads=max(1, cores // searches))
        part_size = -(-args.decode_batch // searches)
        sources = [[symbols[i - 3] for i in row[:-1]] for row in ids.tolist()]
        # One step more than t2t_lite's limit without its forced EOS: the same number of beam
        # steps as t2t_lite (whose last step can only choose EOS) and Model Garden.
        limit = ctranslate2_export.decode_limits(args.decode_source_length, extra,
                                                 config.max_length) + 1

        def ct2_run(translator=translator, sources=sources, limit=limit):
            results = []
            for start in range(0, len(sources), args.decode_batch):
                results += translator.translate_batch(
                    sources[start:start + args.decode_batch], beam_size=beam,
                    length_penalty=alpha, max_decoding_length=limit, min_decoding_length=0,
                    max_batch_size=part_size)
            # Tokens = beam steps (a hypothesis cut at the limit has no EOS in CTranslate2).
            return sum(len(r.hypotheses[0]) + (len(r.hypotheses[0]) < limit) for r in results)
        label = "CTranslate2 (int8)" if quantization else "CTranslate2 (fp32)"
        contenders[label] = ct2_run
    model_gardens = {"model_garden": ("Model Garden beam search", 1)}
    if searches > 1:
        model_gardens["model_garden_split"] = (
            f"Model Garden, each batch split in {searches} searches by this bench", searches)
    for engine, (label, mg_searches) in model_gardens.items():
        if engine not in engines:
            continue
        missing = _peer_missing(args.peer_python)
        if missing:
            notes[label] = f"skipped: {missing}"
            continue
        contenders[label] = _ModelGarden(args.peer_python, dict(
            SMALL, vocab_size=vocab_size, extra_length=extra, beam_size=beam, alpha=alpha,
            batch=args.decode_batch, ids_file=ids_file, searches=mg_searches, cores=cores))

    # Warm-up (traces), then rounds alternating the order.
    for name, run in contenders.items():
        if name.startswith("t2t_lite"):
            run([batches[0][:2]])
    best = {name: None for name in contenders}
    ceiling = 0.0
    order = list(contenders)
    for round_index in range(args.decode_rounds):
        for name in (order if round_index % 2 == 0 else order[::-1]):
            run = contenders[name]
            if isinstance(run, _ModelGarden):
                seconds, tokens = run()
            else:
                start = time.perf_counter()
                tokens = run()
                seconds = time.perf_counter() - start
            if best[name] is None or seconds < best[name][0]:
                best[name] = (seconds, tokens)
            ceiling = max(ceiling, matmul_flops_per_second(threads=searches))
    for run in contenders.values():
        if isinstance(run, _ModelGarden):
            run.close()
    if pool is not None:
        pool.shutdown()

    flops_per_token = _decoder_flops_per_token(beam, vocab_size, **SMALL)
    mg = best.get("Model Garden beam search")
    mg_rate = args.decode_sentences / mg[0] if mg else None
    rows = []
    for name, (seconds, tokens) in best.items():
        rate = args.decode_sentences / seconds
        token_rate = tokens / seconds
        share = token_rate * flops_per_token / ceiling if ceiling else 0.0
        rows.append(dict(
            name=f"decode: {name}", sentences_per_s=round(rate, 2),
            target_tokens_per_s=round(token_rate, 1),
            ratio_vs_model_garden=round(rate / mg_rate, 2) if mg_rate else None,
            note=(f"beam {beam}, {args.decode_sentences} x {args.decode_source_length} tokens, "
                  f"mean output {tokens / args.decode_sentences:.1f} tokens (= beam steps, EOS counted); "
                  f"{share:.1%} of the fp32 matmul ceiling {ceiling / 1e9:.0f} GFLOP/s; "
                  f"{searches} parallel searches for t2t_lite and CTranslate2")))
    for name, note in notes.items():
        rows.append(dict(name=f"decode: {name}", sentences_per_s=None, target_tokens_per_s=None,
                         ratio_vs_model_garden=None, note=note))
    return rows


def _measure_in_subprocess(args):
    """measure(args) in a fresh process: TensorFlow's threads are fixed once it has run an op
    (bench_peers.py --part=all trains first), and the decoder sets them before."""
    flags = [f"--{action.dest}={getattr(args, action.dest)}"
             for action in add_arguments(argparse.ArgumentParser())._actions
             if action.dest != "help" and hasattr(args, action.dest)]
    result = subprocess.run([sys.executable, os.path.abspath(__file__), *flags, "--json_rows"],
                            stdout=subprocess.PIPE, text=True, check=True)
    for line in result.stdout.splitlines():
        if line.startswith(PROTOCOL):
            return json.loads(line[len(PROTOCOL):])
    raise RuntimeError("the decode bench printed no rows")


def main():
    parser = add_arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--json_rows", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    from t2t_lite import cli  # ROOT is on sys.path (top of this file)

    cli.filter_stderr()  # the workers inherit it: no TensorFlow start-up lines in the table
    rows = measure(args)
    if args.json_rows:
        print(PROTOCOL + json.dumps(rows), flush=True)
        return
    width = max(len(r["name"]) for r in rows)
    print(f"{'':{width}}  {'sent/s':>8}  {'tok/s':>9}  {'vs MG':>6}")
    for r in rows:
        fmt = lambda v, f: "-" if v is None else format(v, f)
        print(f"{r['name']:{width}}  {fmt(r['sentences_per_s'], '8.2f')}  "
              f"{fmt(r['target_tokens_per_s'], '9.1f')}  "
              f"{fmt(r['ratio_vs_model_garden'], '6.2f')}  {r['note']}")
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()
        print(f"load average: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on "
              f"{os.cpu_count()} CPUs (shared machine: compare ratios)")


if __name__ == "__main__":
    main()
