"""The main job end to end: datagen -> train -> average -> export -> decode test -> BLEU.

Each stage prints the command-line tool that does the same (so every step can be repeated by
hand) and runs as that tool's library call in this process, its typed result read back.
Everything goes under one run folder:

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
import dataclasses
import json
import os
import sys
import time
from typing import Any, Optional, Sequence

from t2t_lite import atomic
from t2t_lite.command_line import flag_args, shown, to_args

STATE = "state.json"


DEFAULT_TRAIN_MINUTES = 20.0


@dataclasses.dataclass
class DemoOptions:
    """t2t-lite-demo's settings: its flags of the same names (command_line: gin_params and
    problem_params are the repeated --gin_param and --problem_param); `samples` test sentences
    are shown."""
    run_dir: str = "runs/ende_gettext"
    problem: str = "translate_ende_gettext"
    hparams_set: str = "small_cpu"
    # None: DEFAULT_TRAIN_MINUTES, or no budget when train_steps is given; 0: no budget.
    train_minutes: Optional[float] = None
    train_steps: Optional[int] = None  # with the budget off, the run's plan
    average_last: Optional[int] = None  # None: the set's TrainConfig.average_last
    test_sentences: int = 0  # 0: the whole test split
    gin_params: Sequence[str] = ()
    problem_params: Sequence[str] = ()
    samples: int = 5


@dataclasses.dataclass
class DemoResult:
    """What a run gives back: results.json's dict and its stages' own results."""
    results: dict
    trained: Any  # training.trainer.TrainResult
    averaged: Any  # model_dir.averaging.Averaged
    decoded: Any  # inference.batch_decode.DecodeStats; None when the translation was reused


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


def budget_minutes(options):
    """The wall-clock budget a demo trains under, in minutes (0.0: none, as everywhere):
    --train_minutes as given; left out, 20 minutes, or none when --train_steps says how many
    steps to train (then they are the plan)."""
    if options.train_minutes is not None:
        return float(options.train_minutes)
    return 0.0 if options.train_steps else DEFAULT_TRAIN_MINUTES


def run_demo(options, echo=print):
    """Runs every stage of DemoOptions `options`; its DemoResult (the results dict is also
    written to RUN/results.json)."""
    from t2t_lite import hparams
    from t2t_lite.problem_spec import ProblemSpec

    # Before the run folder is made and TensorFlow loads, and not after datagen's minutes.
    ProblemSpec.of(options).check_name()
    hparams.hparams_file(options.hparams_set)
    from t2t_lite.data import datagen
    from t2t_lite.model_dir import averaging

    run = Run(options.run_dir, echo)
    data_dir, model_dir, export_dir = run.path("data"), run.path("model"), run.path("export")
    echo(f"run folder: {run.dir}", flush=True)
    timings = run.state.setdefault("seconds", {})

    echo(shown("datagen", flag_args(problem=options.problem,
                                    problem_params=options.problem_params, data_dir=data_dir)),
         flush=True)
    start = time.monotonic()
    problem = ProblemSpec.of(options).build()
    echo(datagen.run(problem, data_dir), flush=True)
    timings["datagen"] = time.monotonic() - start

    trained = _train(run, options, data_dir, model_dir, echo)

    # Without --average_last, the set's own TrainConfig.average_last.
    echo(shown("avg_checkpoints", flag_args(model_dir=model_dir,
                                            num_last=options.average_last or None)), flush=True)
    averaged = averaging.average(model_dir, num_last=options.average_last or None)
    echo(averaged.message, flush=True)
    checkpoint = averaged.path

    if run.state.get("exported_from") != checkpoint or not _export_exists(run.state, export_dir):
        _export(run, model_dir, export_dir, checkpoint, echo)

    source, reference = _write_test_split(run, problem, data_dir, options.test_sentences)
    translation = run.path("test.translation")
    decoded = None
    if run.state.get("translated_with") != run.state["export_path"] or not os.path.isfile(
            translation):
        start = time.monotonic()
        decoded = _decode(run, source, translation)
        timings["decode"] = time.monotonic() - start
        run.state["decoder_rate"] = decoded.as_dict()["lines_per_second"]
        run.state["translated_with"] = run.state["export_path"]
        run.save_state()
    results = _results(run, source, reference, translation, options.samples)
    with open(run.path("results.json"), "w") as f:
        json.dump(results, f, indent=2)
    run.save_state()
    _print_summary(run, results, echo)
    return DemoResult(results=results, trained=trained, averaged=averaged, decoded=decoded)


def _train(run, options, data_dir, model_dir, echo):
    """Trains (or resumes) the demo's model as t2t-lite-trainer does; its TrainResult. Its
    seconds add to the run's "train" timing; run.state["train_summary"] records the result."""
    from t2t_lite.training.trainer import TrainOptions, train

    train_options = TrainOptions(
        problem=options.problem, problem_params=list(options.problem_params),
        data_dir=data_dir, model_dir=model_dir, hparams_set=options.hparams_set,
        gin_params=list(options.gin_params), bleu_sentences=0, print_params=True,
        # The demo's budget always (0.0: none); unset steps are the set's.
        train_minutes=budget_minutes(options), train_steps=options.train_steps or None)
    echo(shown("trainer", to_args(train_options)), flush=True)
    timings = run.state["seconds"]
    start = time.monotonic()
    trained = train(train_options)
    timings["train"] = timings.get("train", 0.0) + time.monotonic() - start
    run.state["train_summary"] = {"step": trained.step, "stopped_because": trained.stopped_because,
                                  "last_checkpoint": trained.last_checkpoint}
    return trained


def _export(run, model_dir, export_dir, checkpoint, echo):
    """Exports `checkpoint` as a SavedModel as t2t-lite-exporter does, and records it in
    run.state (export_path, exported_from; the old translation no longer counts)."""
    from t2t_lite.export import exporters

    echo(shown("exporter", flag_args(model_dir=model_dir, export_dir=export_dir,
                                     checkpoint_path=checkpoint)), flush=True)
    start = time.monotonic()
    run.state["export_path"] = exporters.make_exporter("savedmodel").export(
        model_dir, export_dir, checkpoint_path=checkpoint)
    echo(run.state["export_path"], flush=True)
    run.state["seconds"]["export"] = time.monotonic() - start
    run.state["exported_from"] = checkpoint
    run.state.pop("translated_with", None)
    run.save_state()


def _decode(run, source, translation):
    """Translates the test split with the export as t2t-lite-decoder does; its DecodeStats.

    TensorFlow's threads stay as training left them in this process (they are fixed once it has
    run an op, so parallel_search.configure_tensorflow changes nothing): measured, the searches
    run no slower than in a decoder process of their own."""
    from t2t_lite.file_decoding import DecodeOptions, decode_file

    options = DecodeOptions(export_dir=run.state["export_path"], decode_from_file=source,
                            decode_to_file=translation, start_over=True)
    run.echo(shown("decoder", to_args(options)), flush=True)
    stats = decode_file(options, progress=sys.stdout)
    run.echo(stats.summary(), flush=True)
    return stats


def _export_exists(state, export_dir):
    """Whether state.json's export is a SavedModel of this run's own export folder (a state file
    pointing elsewhere would make the demo run someone else's graph: it re-exports instead)."""
    path = state.get("export_path")
    return (isinstance(path, str)
            and os.path.dirname(os.path.abspath(path)) == os.path.abspath(export_dir)
            and os.path.isfile(os.path.join(path, "saved_model.pb")))


def _write_test_split(run, problem, data_dir, test_sentences):
    """RUN/test.src and RUN/test.ref: the problem's test split (its first `test_sentences`);
    a translation of other text is no longer this run's."""
    from t2t_lite.problem_spec import write_eval_split

    source, reference = run.path("test.src"), run.path("test.ref")
    if write_eval_split(problem, data_dir, "test", source, reference,
                        limit=test_sentences).changed:
        run.state.pop("translated_with", None)
    return source, reference


def _results(run, source, reference, translation, samples):
    """Scores the translation as t2t-lite-bleu does (the command is printed to repeat it)."""
    from t2t_lite.metrics.report import read_lines, score_files

    run.echo(shown("bleu", flag_args(translation=translation, reference=reference)), flush=True)
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
        # The decoder's own rate; the decode stage's wall clock adds the model's load, which a
        # 562-line test split cannot amortise.
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
             f"{results['seconds']['decode']:.1f}s for the stage with the model's load",
             flush=True)
    for sample in results["samples"]:
        echo(f"  EN  {sample['source']}\n  MT  {sample['translation']}\n  REF {sample['reference']}",
             flush=True)
    echo(f"model:       {results['model_dir']}\nexport:      {results['export']}\n"
         f"translation: {results['translation']}\nresults:     {run.path('results.json')}",
         flush=True)
