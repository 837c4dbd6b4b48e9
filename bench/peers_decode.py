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

Model Garden runs in a long-lived worker process of the peer venv (TF_USE_LEGACY_KERAS=1, as
shared/peers/mg_seq2seq_train.py builds it); the parent alternates the contenders round by round
(t2t_lite, Model Garden, CTranslate2, ..., reversed in the next round) and times a 2048^3 fp32
matmul between rounds, so machine load drifts favour none. Each contender's best round counts.

t2t_lite and CTranslate2 decode as t2t-lite-decoder does (--decode_parallel_searches, default
one per core: each batch split into interleaved parts searched at once, each op on one thread;
t2t_lite/inference/parallel_search.py). This process sets TensorFlow's threads for that before its
first op, or runs itself again in a fresh process when TensorFlow already started (bench_peers.py
--part=all trains first); the matmul ceiling then multiplies on every core at once. Model Garden
runs as it ships, plus a row with its batches split the same way by this bench.

Rows: sentences/s, target tokens/s (output tokens, EOS counted), the ratio to Model Garden in
sentences/s, and in the note the achieved decoder FLOP/s (analytic, beam rows x per-step matmul
FLOPs, attention excluded) over the fp32 matmul ceiling.
"""
import argparse
import os
import sys
import tempfile

import harness

SMALL = dict(num_layers=3, d_model=256, d_ff=1024, num_heads=4)


def model_garden_worker(config):
    """Runs under the peer venv's python: Model Garden's search of the same ids, timed on "run"."""
    import concurrent.futures

    import numpy as np
    import tensorflow as tf

    ids = np.load(config["ids_file"])
    searches = config["searches"]
    if searches > 1:  # the same threads as t2t_lite's parallel searches (see measure())
        tf.config.threading.set_intra_op_parallelism_threads(max(1, config["cores"] // searches))
        tf.config.threading.set_inter_op_parallelism_threads(max(searches, 2))
    search = harness.model_garden_search(harness.model_garden_transformer(**config["model"]))
    pool = concurrent.futures.ThreadPoolExecutor(searches) if searches > 1 else None

    def decode_batch(batch):
        if pool is None:
            return search(batch)
        # Interleaved parts searched at once, as t2t_lite's batch_decode does.
        parts = [batch[i::searches] for i in range(min(searches, len(batch)))]
        return np.concatenate(list(pool.map(search, parts)))

    def decode(rows):
        tokens = 0
        for start in range(0, len(rows), config["batch"]):
            for row in decode_batch(rows[start:start + config["batch"]]).tolist():
                row = [t for t in row if t != 0]
                # Beam steps: up to and including EOS, or every position when none came.
                tokens += (row.index(1) + 1) if 1 in row else len(row)
        return tokens

    decode(ids[:2])  # trace

    def run():
        seconds, tokens = harness.timed(decode, ids)
        return {"seconds": seconds, "tokens": tokens}

    harness.serve(run=run)


def add_arguments(parser):
    """The decode flags (bench_peers.py adds them to its own parser)."""
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
    return harness.add_peer_python(parser)


def _decoder_flops_per_token(beam_size, vocab_size, num_layers, d_model, d_ff, **_):
    """Matmul FLOPs of one beam step for one sentence (K rows): self QKV + out, cross Q + out,
    feed-forward, logits. Attention scores/context and cross K/V (computed once) are left out."""
    per_row = num_layers * (4 * d_model ** 2 + 2 * d_model ** 2 + 2 * d_model * d_ff)
    per_row += d_model * vocab_size
    return 2 * beam_size * per_row


def _timed_by_worker(worker):
    """A contender run by a Model Garden worker, which times its own decode."""
    def run(_):
        answer = worker.ask("run")
        return answer["seconds"], answer["tokens"]
    return run


def measure(args):
    """Decodes the same sentences through every engine, alternating; returns one dict per row."""
    harness.tensorflow_env()
    import dataclasses

    import numpy as np
    import tensorflow as tf

    from t2t_lite import cpu, hparams
    from t2t_lite.data import tokenizers
    from t2t_lite.ids import RESERVED_TOKENS
    from t2t_lite.export import saved_model_versions
    from t2t_lite.inference import batch_decode, parallel_search, translation_module

    # t2t-lite-decoder's threads: set before TensorFlow's first op, or in a fresh process.
    searches = parallel_search.resolve(args.decode_parallel_searches)
    if not parallel_search.configure_tensorflow(searches):
        return _measure_in_subprocess(args)
    cores = cpu.available_cores()
    pool = parallel_search.thread_pool(searches)

    engines = [e.strip() for e in args.decode_engines.split(",") if e.strip()]
    vocab_size = args.decode_vocab_size
    beam, alpha, extra = args.decode_beam_size, args.decode_alpha, args.decode_extra_length
    root = tempfile.mkdtemp(prefix="peers_decode_")
    config = dataclasses.replace(hparams.load("small")[0], **SMALL, dropout=0.0,
                                 max_length=max(128, args.decode_source_length + extra + 2))
    model = harness.random_transformer(config, vocab_size)
    vocab_path, symbols = harness.symbol_vocab(root, vocab_size)
    tokenizer = tokenizers.load_tokenizer(vocab_path)

    rng = np.random.default_rng(0)
    ids = rng.integers(3, vocab_size, size=(args.decode_sentences, args.decode_source_length + 1))
    ids[:, -1] = 1
    ids = ids.astype(np.int32)
    ids_file = os.path.join(root, "ids.npy")
    np.save(ids_file, ids)
    batches = [ids[i:i + args.decode_batch] for i in range(0, len(ids), args.decode_batch)]

    def tf_engine(module):
        a, e = tf.constant(alpha), tf.constant(extra)

        def run(rows=batches):
            # As t2t-lite-decoder translates batches: each split into `searches` parts, all
            # queued at once.
            rows = [row for batch in rows for row in batch]
            parts = parallel_search.split_batches(
                [range(start, min(start + args.decode_batch, len(rows)))
                 for start in range(0, len(rows), args.decode_batch)], searches)
            return sum(len(text.split()) + 1
                       for _, texts, _ in batch_decode.translate_parts(module, rows, parts,
                                                                       a, e, pool)
                       for text in texts[:, 0])

        run([batches[0][:2]])  # trace
        return run

    runs, notes = {}, {}  # contender name -> run() -> tokens (beam steps)
    module = translation_module.TranslationModule(model, tokenizer, beam_size=beam, alpha=alpha,
                                                  extra_length=extra)
    if "checkpoint" in engines:
        runs["t2t_lite checkpoint"] = tf_engine(module)
    if "savedmodel" in engines:
        version_dir = saved_model_versions.save(module, os.path.join(root, "export"))
        runs["t2t_lite SavedModel"] = tf_engine(tf.saved_model.load(version_dir))
    if "checkpoint_bf16" in engines:
        if harness.bf16_units():
            bf16_module = translation_module.TranslationModule(
                model, tokenizer, beam_size=beam, alpha=alpha, extra_length=extra,
                precision="bfloat16")
            runs["t2t_lite checkpoint, bfloat16"] = tf_engine(bf16_module)
        else:
            notes["t2t_lite checkpoint, bfloat16"] = "skipped: this CPU has no bfloat16 units"
    for name in ("ctranslate2", "ctranslate2_int8"):
        if name not in engines:
            continue
        try:
            import ctranslate2

            from t2t_lite.export import ctranslate2_export
            from t2t_lite.inference import ctranslate2_engine
        except ImportError:
            notes[name] = "skipped: ctranslate2 is not installed"
            continue
        quantization = "int8" if name.endswith("int8") else None
        folder = ctranslate2_export.convert(model, list(RESERVED_TOKENS) + symbols,
                                            os.path.join(root, name), quantization=quantization)
        # As the decoder's CTranslate2 engine: `searches` translators, cores // searches threads
        # each; a batch's parts of max_batch_size sentences go to them at once.
        ct2 = ctranslate2.Translator(folder, device="cpu", inter_threads=searches,
                                     intra_threads=max(1, cores // searches))
        part_size = -(-args.decode_batch // searches)
        sources = [[symbols[i - 3] for i in row[:-1]] for row in ids.tolist()]
        # One step more than t2t_lite's limit without its forced EOS: the same number of beam
        # steps as t2t_lite (whose last step can only choose EOS) and Model Garden.
        limit = ctranslate2_engine.decode_limits(args.decode_source_length, extra,
                                                 config.max_length) + 1

        def ct2_run(ct2=ct2, sources=sources, limit=limit):
            results = []
            for start in range(0, len(sources), args.decode_batch):
                results += ct2.translate_batch(
                    sources[start:start + args.decode_batch], beam_size=beam,
                    length_penalty=alpha, max_decoding_length=limit, min_decoding_length=0,
                    max_batch_size=part_size)
            # Tokens = beam steps (a hypothesis cut at the limit has no EOS in CTranslate2).
            return sum(len(r.hypotheses[0]) + (len(r.hypotheses[0]) < limit) for r in results)
        runs["CTranslate2 (int8)" if quantization else "CTranslate2 (fp32)"] = ct2_run

    contenders = {name: lambda _, run=run: harness.timed(run) for name, run in runs.items()}
    workers = []
    model_gardens = {"model_garden": ("Model Garden beam search", 1)}
    if searches > 1:
        model_gardens["model_garden_split"] = (
            f"Model Garden, each batch split in {searches} searches by this bench", searches)
    for engine, (label, mg_searches) in model_gardens.items():
        if engine not in engines:
            continue
        missing = harness.peer_missing(args.peer_python)
        if missing:
            notes[label] = f"skipped: {missing}"
            continue
        worker = harness.Worker(label, args.peer_python, __file__, "mg", dict(
            model=dict(SMALL, vocab_size=vocab_size, extra_length=extra, beam_size=beam,
                       alpha=alpha),
            batch=args.decode_batch, ids_file=ids_file, searches=mg_searches, cores=cores),
            harness.model_garden_env())
        workers.append(worker)
        contenders[label] = _timed_by_worker(worker)

    ceilings = []
    try:
        for worker in workers:
            worker.wait_ready()  # set up and traced before anything is timed
        results = harness.alternate(
            contenders, args.decode_rounds,
            between=lambda _: ceilings.append(harness.matmul_flops_per_second(threads=searches)))
    finally:
        for worker in workers:
            worker.close()
        if pool is not None:
            pool.shutdown()
    best = harness.best_of(results, key=lambda seconds_tokens: -seconds_tokens[0])
    ceiling = max(ceilings)

    flops_per_token = _decoder_flops_per_token(beam, vocab_size, **SMALL)
    mg = best.get("Model Garden beam search")
    mg_rate = args.decode_sentences / mg[0] if mg else None
    rows = []
    for name, (seconds, tokens) in best.items():
        rate = args.decode_sentences / seconds
        token_rate = tokens / seconds
        rows.append(dict(
            name=f"decode: {name}", sentences_per_s=round(rate, 2),
            target_tokens_per_s=round(token_rate, 1),
            ratio_vs_model_garden=round(rate / mg_rate, 2) if mg_rate else None,
            note=(f"beam {beam}, {args.decode_sentences} x {args.decode_source_length} tokens, "
                  f"mean output {tokens / args.decode_sentences:.1f} tokens "
                  f"(= beam steps, EOS counted); "
                  f"{token_rate * flops_per_token / ceiling:.1%} of the fp32 matmul ceiling "
                  f"{ceiling / 1e9:.0f} GFLOP/s; "
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
    answers = harness.run_for_answers([sys.executable, os.path.abspath(__file__), *flags,
                                       "--json_rows"])
    if not answers:
        raise RuntimeError("the decode bench printed no rows")
    return answers[-1]


def main():
    if harness.worker_main({"mg": model_garden_worker}):
        return
    parser = add_arguments(argparse.ArgumentParser(description=__doc__.split("\n")[0]))
    parser.add_argument("--json_rows", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    harness.tensorflow_env()
    from t2t_lite import cli

    cli.filter_stderr()  # the workers inherit it: no TensorFlow start-up lines in the table
    rows = measure(args)
    if args.json_rows:
        harness.answer(rows)
        return
    width = max(len(r["name"]) for r in rows)
    fmt = harness.fmt
    print(f"{'':{width}}  {'sent/s':>8}  {'tok/s':>9}  {'vs MG':>6}")
    for r in rows:
        print(f"{r['name']:{width}}  {fmt(r['sentences_per_s'], '8.2f')}  "
              f"{fmt(r['target_tokens_per_s'], '9.1f')}  "
              f"{fmt(r['ratio_vs_model_garden'], '6.2f')}  {r['note']}")
    load = harness.load_note()
    if load:
        print(f"{load} (shared machine: compare ratios)")


if __name__ == "__main__":
    main()
