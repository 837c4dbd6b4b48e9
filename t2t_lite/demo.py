"""The main job end to end: datagen -> train -> average -> export -> decode test -> BLEU.

Each stage prints the command-line tool that does the same (so every step can be repeated by
hand); datagen and training are library calls in this process, the later stages run their
tools. Everything goes under one run folder:

    RUN/data/            vocabulary, TFRecord shards, dev/test text
    RUN/model/           checkpoints, config, vocabulary (t2t-lite-trainer)
    RUN/model/averaged/  the average of the last checkpoints (t2t-lite-avg-checkpoints)
    RUN/export/<n>/      the SavedModel (t2t-lite-exporter)
    RUN/test.src, RUN/test.ref, RUN/test.translation   the held-out test split and its translation
    RUN/results.json     BLEU, chrF, timings and paths

Re-running resumes: datagen skips finished shards, the trainer continues from its latest
checkpoint within the same total --train_minutes, and finished later stages are reused unless
the checkpoint they came from changed.
"""
import json
import os
import sys
import time

from t2t_lite import atomic, isolated
from t2t_lite.errors import UserError

STATE = "state.json"
# t2t-lite-decoder's --summary_file: its own timing of the translation, without the process
# start-up and model load that the decode stage's wall clock includes.
DECODE_SUMMARY = "decode_summary.json"


class Run:
    def __init__(self, run_dir, echo=print):
        self.dir = os.path.abspath(run_dir)
        self.echo = echo
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, STATE)
        self.state = json.load(open(path)) if os.path.isfile(path) else {}

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def save_state(self):
        atomic.write_json(self.path(STATE), self.state, indent=2)

    def tool(self, name, *args, merge_stderr=False):
        """Runs `python -m t2t_lite.bin.<name> args`; a failure ends the demo with its message.
        Returns the seconds it took.

        merge_stderr: the tool's stderr joins the streamed output (for tools that report on
        stderr), instead of going straight to the demo's stderr."""
        self.echo(command_line(name, args), flush=True)
        start = time.monotonic()
        returncode, _ = isolated.stream([sys.executable, "-m", f"t2t_lite.bin.{name}", *args],
                                        "", self.echo, merge_stderr=merge_stderr)
        if returncode:
            raise UserError(f"t2t-lite-{name.replace('_', '-')} failed (exit {returncode});"
                            " see its messages above. Re-running resumes from here.")
        return time.monotonic() - start


def command_line(name, args):
    """The tool's command a user can repeat, as the demo prints it before the stage."""
    return "$ t2t-lite-" + name.replace("_", "-") + " " + " ".join(args)


def run_demo(run_dir, problem="translate_ende_gettext", hparams_set="small_cpu",
             train_minutes=20.0, train_steps=None, average_last=None, test_sentences=0,
             gin_params=(), problem_params=(), samples=5, echo=print):
    """Runs every stage; returns the results dict also written to RUN/results.json."""
    from t2t_lite import problems
    from t2t_lite.data import datagen
    from t2t_lite.training.trainer import TrainOptions, train

    run = Run(run_dir, echo)
    data_dir, model_dir, export_dir = run.path("data"), run.path("model"), run.path("export")
    common = [f"--problem={problem}", *[f"--problem_param={p}" for p in problem_params]]
    echo(f"run folder: {run.dir}", flush=True)
    timings = run.state.setdefault("seconds", {})

    echo(command_line("datagen", [*common, f"--data_dir={data_dir}"]), flush=True)
    start = time.monotonic()
    echo(datagen.run(problems.build(problem, problem_params), data_dir), flush=True)
    timings["datagen"] = time.monotonic() - start

    train_args = [*common, f"--data_dir={data_dir}", f"--model_dir={model_dir}",
                  f"--hparams_set={hparams_set}", *[f"--gin_param={g}" for g in gin_params],
                  "--bleu_sentences=0", "--print_params"]
    # Unset budgets are the set's, as when the flags are left out.
    train_args += ([f"--train_minutes={train_minutes}"] if train_minutes else []) + (
        [f"--train_steps={train_steps}"] if train_steps else [])
    echo(command_line("trainer", train_args), flush=True)
    start = time.monotonic()
    trained = train(TrainOptions(
        problem=problem, problem_params=list(problem_params), data_dir=data_dir,
        model_dir=model_dir, hparams_set=hparams_set, gin_params=list(gin_params),
        bleu_sentences=0, print_params=True, train_minutes=train_minutes or None,
        train_steps=train_steps or None))
    timings["train"] = timings.get("train", 0.0) + time.monotonic() - start
    run.state["train_summary"] = {"step": trained.step, "stopped_because": trained.stopped_because,
                                  "last_checkpoint": trained.last_checkpoint}

    # Without --average_last, the tool averages the set's own TrainConfig.average_last.
    run.tool("avg_checkpoints", f"--model_dir={model_dir}",
             *([f"--num_last={average_last}"] if average_last else []))
    from t2t_lite.inference import saved_model
    from t2t_lite.model_dir.checkpoint_reader import resolve_checkpoint

    checkpoint = resolve_checkpoint(model_dir)  # the average just written

    if run.state.get("exported_from") != checkpoint or not _export_exists(run.state, export_dir):
        timings["export"] = run.tool("exporter", f"--model_dir={model_dir}",
                                     f"--export_dir={export_dir}",
                                     f"--checkpoint_path={checkpoint}")
        run.state["export_path"] = saved_model.latest_version_dir(export_dir)
        run.state["exported_from"] = checkpoint
        run.state.pop("translated_with", None)
        run.save_state()

    source, reference = _write_test_split(run, data_dir, test_sentences)
    translation = run.path("test.translation")
    if run.state.get("translated_with") != run.state["export_path"] or not os.path.isfile(
            translation):
        summary = run.path(DECODE_SUMMARY)
        timings["decode"] = run.tool(
            "decoder", f"--export_dir={run.state['export_path']}", f"--decode_from_file={source}",
            f"--decode_to_file={translation}", f"--summary_file={summary}", "--start_over",
            merge_stderr=True)
        with open(summary, encoding="utf-8") as f:
            run.state["decoder_rate"] = json.load(f)["lines_per_second"]
        run.state["translated_with"] = run.state["export_path"]
        run.save_state()
    results = _results(run, source, reference, translation, samples)
    with open(run.path("results.json"), "w") as f:
        json.dump(results, f, indent=2)
    run.save_state()
    _print_summary(run, results, echo)
    return results


def _export_exists(state, export_dir):
    """Whether state.json's export is a SavedModel of this run's own export folder (a state file
    pointing elsewhere would make the demo run someone else's graph: it re-exports instead)."""
    path = state.get("export_path")
    return (isinstance(path, str)
            and os.path.dirname(os.path.abspath(path)) == os.path.abspath(export_dir)
            and os.path.isfile(os.path.join(path, "saved_model.pb")))


def _write_test_split(run, data_dir, test_sentences):
    pairs_path = None
    for name in os.listdir(data_dir):
        if name.endswith("-test.tsv"):
            pairs_path = os.path.join(data_dir, name)
    if pairs_path is None:
        raise UserError(f"no test split text in {data_dir}")
    with open(pairs_path, encoding="utf-8") as f:
        pairs = [line.rstrip("\n").split("\t") for line in f]
    if test_sentences:
        pairs = pairs[:test_sentences]
    source, reference = run.path("test.src"), run.path("test.ref")
    for path, column in ((source, 0), (reference, 1)):
        text = "".join(pair[column] + "\n" for pair in pairs)
        if not os.path.isfile(path) or open(path, encoding="utf-8").read() != text:
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            run.state.pop("translated_with", None)
    return source, reference


def _results(run, source, reference, translation, samples):
    """Scores the translation as t2t-lite-bleu does (the command is printed to repeat it)."""
    from t2t_lite.metrics.report import read_lines, score_files

    run.echo(f"$ t2t-lite-bleu --translation={translation} --reference={reference}", flush=True)
    report, scores = score_files(translation, reference)
    run.echo(report, flush=True)
    hypotheses = read_lines(translation, "translation")
    references = read_lines(reference, "reference")
    sources = read_lines(source, "source")
    return {
        "bleu": round(scores["bleu"], 2), "chrf": round(scores["chrf"], 2),
        "bleu_signature": scores["signature"], "test_sentences": len(references),
        "report": report,
        "seconds": {k: round(v, 1) for k, v in run.state.get("seconds", {}).items()},
        "train_summary": run.state.get("train_summary"),
        # The decoder's own rate; the decode stage's wall clock adds start-up and model load,
        # which a 562-line test split cannot amortise.
        "decode_sentences_per_second": run.state.get("decoder_rate"),
        "decode_sentences_per_second_with_startup": round(
            len(references) / max(run.state["seconds"].get("decode", 0.0), 1e-9), 1)
        if run.state["seconds"].get("decode") else None,
        "model_dir": run.path("model"), "export": run.state.get("export_path"),
        "translation": translation,
        "samples": [{"source": s, "translation": h, "reference": r}
                    for s, h, r in list(zip(sources, hypotheses, references))[:samples]],
    }


def _print_summary(run, results, echo):
    echo("", flush=True)
    echo(f"test BLEU {results['bleu']:.2f}  chrF {results['chrf']:.2f}  "
         f"({results['test_sentences']} sentences; {results['bleu_signature']})", flush=True)
    if results["decode_sentences_per_second"]:
        echo(f"decoding: {results['decode_sentences_per_second']:.1f} lines/s in the decoder; "
             f"{results['seconds']['decode']:.1f}s for the stage with start-up and model load",
             flush=True)
    for sample in results["samples"]:
        echo(f"  EN  {sample['source']}\n  MT  {sample['translation']}\n  REF {sample['reference']}",
             flush=True)
    echo(f"model:       {results['model_dir']}\nexport:      {results['export']}\n"
         f"translation: {results['translation']}\nresults:     {run.path('results.json')}",
         flush=True)
