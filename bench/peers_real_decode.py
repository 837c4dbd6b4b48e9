"""Real text, side by side: t2t-lite-decoder and Model Garden's beam search, each with a model
trained for the same number of steps on the same split, translating the same held-out lines.

    .venv/bin/python bench/peers_real_decode.py --run_dir=RUN \
        [--peer_python=runs/peer_venv/bin/python --peer_script=../shared/peers/mg_seq2seq_train.py \
         --peer_steps=300 --rounds=2]

RUN is a `t2t-lite-demo` run folder (data/, model/, export/<n>/, test.src, test.ref), e.g. from
`t2t-lite-demo --run_dir=RUN --train_steps=300 --train_minutes=0`.

bench/peers_decode.py measures equal work (random weights, every sentence decoded to its limit).
This measures what a user sees: trained models stop at different steps, and a sentence that
babbles to its limit costs whatever the search makes it cost. Model Garden is trained by the
script the issue's peer figures came from (shared/peers/mg_seq2seq_train.py, its own recipe:
Noam warmup 100, x0.32, dropout 0.1), on the same training pairs and with RUN's SentencePiece
model, so both sides count the same tokens; that script then decodes the test split (beam 4,
alpha 0.6, +50, batches of 64 sorted by length) and times it after a warm-up call. t2t_lite's
rates are t2t-lite-decoder's own summary line (tokenizing, searching, detokenizing; without the
process start-up and model load), best of --rounds, for the SavedModel, the checkpoint and, when
the ctranslate2 package is installed, the CTranslate2 engine.

Rows: lines/s, output tokens/s (SentencePiece pieces of the detokenized output, as both models
write it), the ratio to Model Garden in lines/s, test sacreBLEU. The Model Garden run is kept in
--peer_dir and reused when its result.json is there (training takes ~8 minutes at 300 steps on
2 cores).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # the problem's import loads TensorFlow
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

DEFAULT_PEER_SCRIPT = os.path.join(os.path.dirname(ROOT), "shared", "peers",
                                   "mg_seq2seq_train.py")
SUMMARY = re.compile(r"^decoded (\d+) lines in ([0-9.]+)s \(([0-9.]+) lines/s\)")


def fail(message):
    print(f"peers_real_decode: {message}", file=sys.stderr)
    sys.exit(1)


def run_files(run_dir):
    """RUN's data dir, model dir, newest export, test source/reference and SentencePiece model."""
    data, model = os.path.join(run_dir, "data"), os.path.join(run_dir, "model")
    export_root = os.path.join(run_dir, "export")
    versions = sorted(int(n) for n in os.listdir(export_root) if n.isdigit()) if os.path.isdir(
        export_root) else []
    spm_models = [n for n in os.listdir(data) if n.endswith(".spm.model")] if os.path.isdir(
        data) else []
    files = dict(data=data, model=model, source=os.path.join(run_dir, "test.src"),
                 reference=os.path.join(run_dir, "test.ref"),
                 export=os.path.join(export_root, str(versions[-1])) if versions else None,
                 spm=os.path.join(data, spm_models[0]) if len(spm_models) == 1 else None)
    missing = [k for k, v in files.items() if not v or not os.path.exists(v)]
    if missing:
        fail(f"{run_dir} is not a finished t2t-lite-demo run folder (missing: "
             f"{', '.join(missing)})")
    return files


def write_peer_data(problem_name, files, folder):
    """train.tsv (the problem's training pairs, as datagen read them) and test.tsv (RUN's)."""
    from t2t_lite import registry
    from t2t_lite.data import text_io

    problem = registry.problem_class(problem_name)()
    train = os.path.join(folder, "train.tsv")
    with open(train, "w", encoding="utf-8") as f:
        for pair in problem.generate_samples("train", os.path.join(folder, "tmp")):
            if not isinstance(pair, text_io.Skipped):
                f.write("\t".join(text.replace("\t", " ") for text in pair) + "\n")
    test = os.path.join(folder, "test.tsv")
    sources, references = (read_lines(files[k]) for k in ("source", "reference"))
    with open(test, "w", encoding="utf-8") as f:
        f.writelines(f"{s}\t{r}\n" for s, r in zip(sources, references))
    return train, test


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def model_garden(args, files):
    """Trains (or reuses) the peer run; returns (lines/s, hypotheses, training steps)."""
    result_path = os.path.join(args.peer_dir, "result.json")
    if not os.path.isfile(result_path):
        if not os.path.isfile(args.peer_script):
            fail(f"no Model Garden script at {args.peer_script} (--peer_script)")
        os.makedirs(args.peer_dir, exist_ok=True)
        train, test = write_peer_data(args.problem, files, args.peer_dir)
        command = [args.peer_python, args.peer_script, f"--train_tsv={train}",
                   f"--test_tsv={test}", "--dev_size=1", "--skip_dev", "--warmup=100",
                   "--lr_mult=0.32", f"--max_steps={args.peer_steps}", "--minutes=100000",
                   f"--sp_model={files['spm']}", f"--out_dir={args.peer_dir}"]
        print("$ " + " ".join(command), flush=True)
        log_path = os.path.join(args.peer_dir, "train.log")
        with open(log_path, "w") as log:
            code = subprocess.call(command, stdout=log, stderr=subprocess.STDOUT)
        if code or not os.path.isfile(result_path):
            fail(f"the Model Garden run failed (exit {code}); see {log_path}")
    with open(result_path) as f:
        result = json.load(f)
    with open(os.path.join(args.peer_dir, "test.hyp.tsv"), encoding="utf-8") as f:
        hypotheses = [line.rstrip("\n").split("\t")[2] for line in f]
    return result["decode_sents_per_s"], hypotheses, result["steps"]


def t2t_lite(engine_args, files, rounds):
    """Best lines/s of `rounds` t2t-lite-decoder runs, and the output lines."""
    output = tempfile.NamedTemporaryFile(suffix=".txt", delete=False).name
    command = [sys.executable, "-m", "t2t_lite.bin.decoder", *engine_args,
               f"--decode_from_file={files['source']}", f"--decode_to_file={output}"]
    print("$ t2t-lite-decoder " + " ".join(command[3:]), flush=True)
    rates = []
    for _ in range(rounds):
        done = subprocess.run(command, capture_output=True, text=True)
        matches = [m for m in map(SUMMARY.match, done.stderr.splitlines()) if m]
        if done.returncode or not matches:
            fail(f"t2t-lite-decoder failed (exit {done.returncode}): "
                 f"{done.stderr.strip().splitlines()[-1:]}")
        rates.append(float(matches[-1].group(3)))
    print(f"  lines/s per round: {rates}", flush=True)
    hypotheses = read_lines(output)
    os.unlink(output)
    return max(rates), hypotheses


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run_dir", required=True)
    parser.add_argument("--problem", default="translate_ende_gettext")
    parser.add_argument("--peer_python", default=os.path.join(ROOT, "runs", "peer_venv", "bin",
                                                              "python"))
    parser.add_argument("--peer_script", default=DEFAULT_PEER_SCRIPT)
    parser.add_argument("--peer_steps", type=int, default=300)
    parser.add_argument("--peer_dir", default=None,
                        help="Model Garden's run folder (default: RUN/peer_model_garden)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    args.peer_dir = args.peer_dir or os.path.join(args.run_dir, "peer_model_garden")

    import sentencepiece
    from t2t_lite.metrics import bleu

    files = run_files(args.run_dir)
    peer_rate, peer_hypotheses, peer_steps = model_garden(args, files)
    rows = {"Model Garden `Seq2SeqTransformer` beam search": (peer_rate, peer_hypotheses)}
    engines = {"t2t_lite, SavedModel (`--export_dir`)": [f"--export_dir={files['export']}"],
               "t2t_lite, checkpoint (`--model_dir`)": [f"--model_dir={files['model']}"]}
    scratch = None  # the CTranslate2 conversion's folder
    try:
        import ctranslate2  # noqa: F401
        from t2t_lite.export import ctranslate2_export  # noqa: F401
    except ImportError:
        print("CTranslate2 skipped: pip install 't2t_lite[ctranslate2]'", file=sys.stderr)
    else:
        scratch = tempfile.mkdtemp(prefix="peers_real_ct2_")
        converted = os.path.join(scratch, "model")
        subprocess.run([sys.executable, "-m", "t2t_lite.bin.exporter",
                        f"--model_dir={files['model']}", f"--export_dir={converted}",
                        "--format=ctranslate2"], check=True, capture_output=True)
        engines["CTranslate2 fp32 (`--engine=ctranslate2`)"] = [
            "--engine=ctranslate2", f"--export_dir={converted}"]
    for name, engine_args in engines.items():
        rows[name] = t2t_lite(engine_args, files, args.rounds)
    if scratch:
        shutil.rmtree(scratch)

    tokenizer = sentencepiece.SentencePieceProcessor(model_file=files["spm"])
    references = read_lines(files["reference"])
    print(f"\n{len(references)} test lines of {args.run_dir}; Model Garden trained "
          f"{peer_steps} steps ({args.peer_dir})\n")
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
