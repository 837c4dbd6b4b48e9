"""Real text, side by side: t2t-lite-decoder and Model Garden's beam search, each with a model
trained for the same number of steps on the same split, translating the same held-out lines.

    .venv/bin/python bench/peers_real_decode.py --run_dir=RUN \
        [--peer_python=runs/peer_venv/bin/python --peer_script=../shared/peers/mg_seq2seq_train.py \
         --peer_steps=300 --rounds=2]

RUN is a `t2t-lite-demo` run folder (data/, model/, export/<n>/, test.src, test.ref), e.g. from
`t2t-lite-demo --run_dir=RUN --train_steps=300 --train_minutes=0`.

bench/peers_decode.py measures equal work (random weights, every sentence decoded to its limit).
This measures what a user sees: trained models stop at different steps, and a sentence that
babbles to its limit costs whatever the search makes it cost.

Model Garden is trained once by the peer script (shared/peers/mg_seq2seq_train.py, its own
recipe: Noam warmup 100, x0.32, dropout 0.1), on the same training pairs and with RUN's
SentencePiece model, so both sides count the same tokens. It is kept in --peer_dir
(RUN/peer_model_garden) and reused. Each round then times, in alternation (order reversed every
round):
- Model Garden's beam search of the saved model, in a peer-venv worker process, as that script
  decodes: beam 4, alpha 0.6, +50, batches of 64 sorted by length, after a warm-up call;
- t2t-lite-decoder with RUN's SavedModel, its checkpoint and, when the ctranslate2 package is
  installed, the CTranslate2 engine, each at its default settings; the rate is the decoder's own
  summary line (tokenizing, searching, detokenizing; not process start-up or model load).

Rows: best lines/s over --rounds, output tokens/s (SentencePiece pieces of the detokenized output,
as both models write it), the ratio to Model Garden in lines/s, test sacreBLEU.
"""
import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import harness


def model_garden_worker(config):
    """Runs under the peer venv's python: the saved peer model (built as the peer script builds
    it; dropout is off at inference) decoding a file on "decode", as the peer script's
    translate() does: batches of 64 sorted by length, a warm-up call first, the time of the whole
    file."""
    import numpy as np
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=config["spm"])
    model = harness.model_garden_transformer(**config["model"])
    model.load_weights(config["weights"]).expect_partial()
    search = harness.model_garden_search(model)

    def translate(sources, batch=64):
        ids = [x + [1] for x in sp.encode(list(sources))]
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        hypotheses = [None] * len(ids)
        for start in range(0, len(order), batch):
            rows = order[start:start + batch]
            array = np.zeros((len(rows), max(len(ids[i]) for i in rows)), np.int32)
            for r, i in enumerate(rows):
                array[r, :len(ids[i])] = ids[i]
            for r, out in zip(rows, search(array).tolist()):
                kept = []
                for token in out:  # up to EOS (1) or padding (0)
                    if token in (0, 1):
                        break
                    kept.append(token)
                hypotheses[r] = sp.decode(kept)
        return hypotheses

    def decode(source, output):
        with open(source, encoding="utf-8") as f:
            sources = [line.rstrip("\n") for line in f]
        translate(["Open file"])
        seconds, hypotheses = harness.timed(translate, sources)
        with open(output, "w", encoding="utf-8") as f:
            f.writelines(h + "\n" for h in hypotheses)
        return {"rate": len(sources) / seconds}

    harness.serve(decode=decode)


def fail(message):
    print(f"peers_real_decode: {message}", file=sys.stderr)
    sys.exit(1)


def run_files(run_dir):
    """RUN's data dir, model dir, newest export, test source/reference and SentencePiece model."""
    from t2t_lite.inference import saved_model

    data, model = os.path.join(run_dir, "data"), os.path.join(run_dir, "model")
    export_root = os.path.join(run_dir, "export")
    versions = saved_model.versions(export_root)
    spm_models = [n for n in os.listdir(data) if n.endswith(".spm.model")] if os.path.isdir(
        data) else []
    files = dict(data=data, model=model, source=os.path.join(run_dir, "test.src"),
                 reference=os.path.join(run_dir, "test.ref"),
                 export=saved_model.latest_version_dir(export_root) if versions else None,
                 spm=os.path.join(data, spm_models[0]) if len(spm_models) == 1 else None)
    missing = [k for k, v in files.items() if not v or not os.path.exists(v)]
    if missing:
        fail(f"{run_dir} is not a finished t2t-lite-demo run folder (missing: "
             f"{', '.join(missing)})")
    return files


def write_peer_data(problem_name, files, folder):
    """train.tsv (the problem's training pairs, as datagen read them) and test.tsv (RUN's)."""
    from t2t_lite import problems, registry  # noqa: F401  (problems registers the built-ins)
    from t2t_lite.data import text_io
    from t2t_lite.metrics.report import read_lines

    problem = registry.problem_class(problem_name)()
    train = os.path.join(folder, "train.tsv")
    with open(train, "w", encoding="utf-8") as f:
        for pair in problem.generate_samples("train", os.path.join(folder, "tmp")):
            if not isinstance(pair, text_io.Skipped):
                f.write("\t".join(text.replace("\t", " ") for text in pair) + "\n")
    test = os.path.join(folder, "test.tsv")
    sources, references = (read_lines(files[k], k) for k in ("source", "reference"))
    with open(test, "w", encoding="utf-8") as f:
        f.writelines(f"{s}\t{r}\n" for s, r in zip(sources, references))
    return train, test


def train_model_garden(args, files):
    """Trains the peer model once (kept in --peer_dir); returns its result.json."""
    result_path = os.path.join(args.peer_dir, "result.json")
    weights = os.path.join(args.peer_dir, "ckpt", "model.index")
    if not (os.path.isfile(result_path) and os.path.isfile(weights)):
        if not os.path.isfile(args.peer_script):
            fail(f"no Model Garden script at {args.peer_script} (--peer_script)")
        os.makedirs(args.peer_dir, exist_ok=True)
        train, test = write_peer_data(args.problem, files, args.peer_dir)
        command = [args.peer_python, args.peer_script, f"--train_tsv={train}",
                   f"--test_tsv={test}", "--dev_size=1", "--skip_dev", "--warmup=100",
                   "--lr_mult=0.32", f"--max_steps={args.peer_steps}", "--minutes=100000",
                   f"--sp_model={files['spm']}", f"--out_dir={args.peer_dir}", "--save_weights"]
        print("$ " + " ".join(command), flush=True)
        log_path = os.path.join(args.peer_dir, "train.log")
        with open(log_path, "w") as log:
            code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT)
        if code or not os.path.isfile(result_path):
            fail(f"the Model Garden run failed (exit {code}); see {log_path}")
    with open(result_path) as f:
        return json.load(f)


def model_garden_decoder(args, files, result):
    """A worker holding the saved peer model; .ask("decode", source=..., output=...)."""
    peer = result["config"]  # as the peer script writes it
    model = dict(vocab_size=peer["vocab"], d_model=peer["d_model"], d_ff=peer["d_ff"],
                 num_heads=peer["heads"], num_layers=peer["layers"],
                 dec_layers=peer["dec_layers"], norm_first=peer["pre_ln"], beam_size=4,
                 alpha=0.6, extra_length=50)
    return harness.Worker("Model Garden", args.peer_python, __file__, "mg", dict(
        model=model, spm=files["spm"], weights=os.path.join(args.peer_dir, "ckpt", "model")),
        harness.model_garden_env())


def t2t_lite_decode(engine_args, files, output):
    """One t2t-lite-decoder run over the test lines; returns its own lines/s."""
    return harness.run_decoder(engine_args, files["source"], output)[0]["lines_per_second"]


def main():
    if harness.worker_main({"mg": model_garden_worker}):
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run_dir", required=True)
    parser.add_argument("--problem", default="translate_ende_gettext")
    harness.add_peer_python(parser)
    parser.add_argument("--peer_script", default=harness.PEER_SCRIPT)
    parser.add_argument("--peer_steps", type=int, default=300)
    parser.add_argument("--peer_dir", default=None,
                        help="Model Garden's run folder (default: RUN/peer_model_garden)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    args.peer_dir = args.peer_dir or os.path.join(args.run_dir, "peer_model_garden")
    harness.tensorflow_env()
    from t2t_lite import cli

    cli.filter_stderr()  # the problem's import loads TensorFlow, which prints start-up lines

    import sentencepiece

    from t2t_lite.metrics import bleu
    from t2t_lite.metrics.report import read_lines

    files = run_files(args.run_dir)
    peer = train_model_garden(args, files)
    peer_name = "Model Garden `Seq2SeqTransformer` beam search"
    engines = {"t2t_lite, SavedModel (`--export_dir`)": [f"--export_dir={files['export']}"],
               "t2t_lite, checkpoint (`--model_dir`)": [f"--model_dir={files['model']}"]}
    scratch = tempfile.mkdtemp(prefix="peers_real_decode_")
    if importlib.util.find_spec("ctranslate2") is None:
        print("CTranslate2 skipped: pip install 't2t_lite[ctranslate2]'", file=sys.stderr)
    else:
        converted = os.path.join(scratch, "ctranslate2")
        subprocess.run([sys.executable, "-m", "t2t_lite.bin.exporter",
                        f"--model_dir={files['model']}", f"--export_dir={converted}",
                        "--format=ctranslate2"], check=True, capture_output=True)
        engines["CTranslate2 fp32 (`--engine=ctranslate2`)"] = [
            "--engine=ctranslate2", f"--export_dir={converted}"]
    outputs = {name: os.path.join(scratch, f"{i}.txt")
               for i, name in enumerate([peer_name, *engines])}
    with model_garden_decoder(args, files, peer) as decoder:
        decoder.wait_ready()  # loaded before anything is timed
        contenders = {peer_name: lambda _: decoder.ask(
            "decode", source=files["source"], output=outputs[peer_name])["rate"]}
        contenders.update({name: lambda _, name=name: t2t_lite_decode(engines[name], files,
                                                                      outputs[name])
                           for name in engines})
        rates = harness.alternate(contenders, args.rounds, report=lambda r, name, rate: print(
            f"round {r + 1}: {name}: {rate:.1f} lines/s", flush=True))
    rows = {name: (rate, read_lines(outputs[name], name))
            for name, rate in harness.best_of(rates).items()}
    shutil.rmtree(scratch)
    peer_rate = rows[peer_name][0]

    tokenizer = sentencepiece.SentencePieceProcessor(model_file=files["spm"])
    references = read_lines(files["reference"], "reference")
    print(f"\n{len(references)} test lines of {args.run_dir}; Model Garden trained "
          f"{peer['steps']} steps ({args.peer_dir}); best of {args.rounds} rounds\n")
    print("| engine | lines/s | output tokens/s | vs Model Garden | test BLEU |")
    print("|---|---|---|---|---|")
    for name, (rate, hypotheses) in rows.items():
        tokens = sum(len(ids) for ids in tokenizer.encode(hypotheses))
        tokens_per_second = rate * tokens / len(hypotheses)
        score = bleu.corpus_scores(hypotheses, references)["bleu"]
        print(f"| {name} | {rate:.1f} | {tokens_per_second:,.0f} | {rate / peer_rate:.2f}x "
              f"| {score:.2f} |")


if __name__ == "__main__":
    main()
