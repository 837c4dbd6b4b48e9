"""One row: its training (the trainer in a child process, isolated.call), then its last
checkpoint's dev perplexity and dev decode (t2t-lite-decoder's library call, beam 4, alpha 0.6),
each in a child process too, and the decode's BLEU, as the row's RowResult; a failure's reason.
Each stage is printed first as the command that does the same (command_line.to_args)."""
import dataclasses
import math
import os
import time

from t2t_lite import atomic, isolated
from t2t_lite.command_line import flag_args, shown, to_args
from t2t_lite.errors import UserError
from t2t_lite.problem_spec import ProblemSpec
from t2t_lite.table3.machine import machine
from t2t_lite.table3.paper import ALPHA, BEAM_SIZE, row_columns, set_name
from t2t_lite.table3.result import DevMetrics, RowResult, RowSeconds
from t2t_lite.table3.table import DEV_REFERENCE, DEV_SOURCE, DEV_TRANSLATION


class RowFailed(Exception):
    """A row that could not be trained or evaluated; its message is the table's reason."""


class RowRunner:
    """Trains one row (the trainer's library call in a child process) and evaluates its last
    checkpoint."""

    def __init__(self, table, problem, options, echo):
        self.table, self.problem, self.options, self.echo = table, problem, options, echo

    def train(self, row, plan, steps, minutes):
        """The row's training, to `steps` or for `minutes`; the trainer's TrainResult."""
        from t2t_lite.training.trainer import TrainOptions, train

        budget = ({"train_minutes": minutes} if minutes else
                  {"train_steps": steps, "train_minutes": 0.0})
        options = TrainOptions(
            problem=self.options.problem, problem_params=list(self.options.problem_params),
            problem_modules=list(self.options.problem_modules),
            data_dir=os.path.abspath(self.options.data_dir),
            model_dir=self.table.row_path(row, "model"),
            # The configs the table resolved, as they are; the set and bindings that give them
            # are what run.json and the command below show.
            configs=plan.configs, hparams_set=set_name(row), gin_params=list(plan.bindings),
            bleu_sentences=0,  # the table decodes dev itself, with beam 4
            **budget)
        prefix = f"[{row}]"
        self.echo(f"{prefix} {shown('trainer', to_args(options, omit=('configs',)))}",
                  flush=True)
        try:
            return isolated.call(train, options, prefix, self.echo)
        except isolated.Failed as failure:
            raise RowFailed(failure.reason("t2t-lite-trainer")) from None

    def evaluate(self, row, plan):
        """The last checkpoint's dev perplexity and dev BLEU (beam 4, alpha 0.6, no
        averaging)."""
        from t2t_lite.metrics.report import score_files
        from t2t_lite.model_dir import checkpoint_reader

        model_dir = self.table.row_path(row, "model")
        listed = checkpoint_reader.checkpoint_paths(model_dir) if os.path.isdir(model_dir) else []
        if not listed:
            raise RowFailed(f"no checkpoint in {model_dir} after training")
        checkpoint = listed[-1]
        start = time.monotonic()
        dev = self.perplexity(row, model_dir, checkpoint)
        if not math.isfinite(dev.loss):
            raise RowFailed(f"diverged: dev loss {dev.loss} at {checkpoint}")
        perplexity_seconds = time.monotonic() - start
        translation = self.table.row_path(row, DEV_TRANSLATION)
        start = time.monotonic()
        self.decode(row, model_dir, checkpoint, translation)
        decode_seconds = time.monotonic() - start
        try:
            report, scores = score_files(translation, self.table.path(DEV_REFERENCE))
        except UserError as error:
            raise RowFailed(f"scoring the dev translation: {error}") from None
        atomic.write_text(self.table.row_path(row, "bleu.txt"), report + "\n")
        return checkpoint, dev, scores, report, perplexity_seconds, decode_seconds

    def decode(self, row, model_dir, checkpoint, translation):
        """The dev split translated by file_decoding.decode_file in a child process (the
        model and its memory leave with it), printed as the t2t-lite-decoder command that does
        the same; its DecodeStats, also written to the row's decode_summary.json."""
        from t2t_lite.file_decoding import DecodeOptions, decode_file
        from t2t_lite.inference.batch_decode import DecodeStats

        options = DecodeOptions(
            model_dir=model_dir, checkpoint_path=checkpoint, beam_size=BEAM_SIZE, alpha=ALPHA,
            decode_from_file=self.table.path(DEV_SOURCE), decode_to_file=translation,
            start_over=True)
        summary = self.table.row_path(row, "decode_summary.json")
        prefix = f"[{row}]"
        args = to_args(options) + flag_args(summary_file=summary)
        self.echo(f"{prefix} {shown('decoder', args)}", flush=True)
        try:
            stats = isolated.call(decode_file, options, prefix, self.echo, result_type=DecodeStats)
        except isolated.Failed as failure:
            raise RowFailed(failure.reason("t2t-lite-decoder")) from None
        self.echo(f"{prefix} {stats.summary()}", flush=True)
        atomic.write_json(summary, stats.as_dict(), indent=1, sort_keys=True)
        return stats

    def perplexity(self, row, model_dir, checkpoint):
        """dev_perplexity in a child process of its own, so that the model (and on a GPU, its
        memory) is gone before the next row trains."""
        self.echo(f"[{row}] dev perplexity of {checkpoint} over the whole dev split", flush=True)
        request = DevPerplexity(
            problem=ProblemSpec.of(self.options), data_dir=os.path.abspath(self.options.data_dir),
            model_dir=model_dir, checkpoint=checkpoint)
        try:
            return isolated.call(dev_perplexity, request, f"[{row}]", self.echo)
        except isolated.Failed as failure:
            raise RowFailed(failure.reason("dev perplexity")) from None

    def run(self, row, plan, steps, minutes):
        """Trains and evaluates the row: its RowResult (RowFailed if it could not)."""
        trained = self.train(row, plan, steps, minutes)
        checkpoint, dev, scores, report, ppl_seconds, decode_seconds = self.evaluate(row, plan)
        model, train, decode = plan.configs
        return RowResult(
            row=row, status="done", set=set_name(row), bindings=plan.bindings,
            model_dir=self.table.row_path(row, "model"), checkpoint=checkpoint,
            steps=trained.step, averaged=False,
            columns=row_columns(plan.configs), varied=plan.varied,
            params=plan.params, precision=train.mixed_precision, dev=dev,
            bleu=round(scores["bleu"], 4), chrf=round(scores["chrf"], 4),
            bleu_signature=scores["signature"], bleu_report=report,
            beam_size=BEAM_SIZE, alpha=ALPHA,
            translation=self.table.row_path(row, DEV_TRANSLATION),
            seconds=RowSeconds(train=round(trained_seconds(checkpoint), 1),
                               evaluate=round(ppl_seconds + decode_seconds, 1),
                               perplexity=round(ppl_seconds, 1),
                               decode=round(decode_seconds, 1)),
            machine=machine(), finished=time.strftime("%Y-%m-%d %H:%M:%S"))


def trained_seconds(checkpoint):
    """The trainer's training seconds across resumes, as the checkpoint recorded them."""
    import tensorflow as tf

    try:
        return float(tf.train.load_variable(checkpoint,
                                            "trained_seconds/.ATTRIBUTES/VARIABLE_VALUE"))
    except (tf.errors.OpError, ValueError):
        return float("nan")


@dataclasses.dataclass
class DevPerplexity:
    """What dev_perplexity measures: a checkpoint of a model_dir on its problem's dev split."""
    problem: ProblemSpec
    data_dir: str
    model_dir: str
    checkpoint: str


def dev_perplexity(request: DevPerplexity) -> DevMetrics:
    """dev_loss_metrics of `request`, the line a user reads printed."""
    problem = request.problem.build()
    metrics = DevMetrics(**{k: float(v) for k, v in dev_loss_metrics(
        problem, request.data_dir, request.model_dir, request.checkpoint).items()})
    print(f"dev perplexity {metrics.perplexity:.4f} (loss {metrics.loss:.4f}, token "
          f"accuracy {metrics.token_accuracy:.4f})", flush=True)
    return metrics


def dev_loss_metrics(problem, data_dir, model_dir, checkpoint):
    """Loss, perplexity (exp of the unsmoothed per-token NLL) and token accuracy of a checkpoint
    over the whole dev split, as the trainer's evaluation computes them."""
    from t2t_lite.model_dir import loaded
    from t2t_lite.training.evaluation import Evaluator

    run = loaded.load(model_dir, checkpoint)
    evaluator = Evaluator(run.model, problem, data_dir, run.tokenizer, *run.configs,
                          max_batches=2 ** 31 - 1, bleu_sentences=0)
    return evaluator.loss_metrics()
