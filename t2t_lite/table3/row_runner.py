"""One row: t2t-lite-trainer, then its last checkpoint's dev perplexity (a worker subprocess) and
dev BLEU (t2t-lite-decoder, beam 4, alpha 0.6), as the row's result; a failure's reason."""
import json
import math
import os
import shlex
import subprocess
import sys
import time

from t2t_lite import atomic, problems, registry, stderr_filter
from t2t_lite.errors import UserError
from t2t_lite.table3.machine import machine
from t2t_lite.table3.paper import ALPHA, BEAM_SIZE, row_columns, set_name
from t2t_lite.table3.table import DEV_REFERENCE, DEV_SOURCE, DEV_TRANSLATION, read_json

class RowFailed(Exception):
    """A row that could not be trained or evaluated; its message is the table's reason."""


def run_tool(name, args, prefix, echo):
    """Runs `python -m t2t_lite.bin.<name> args`, its stdout and stderr streamed with `prefix`
    (TensorFlow's start-up noise dropped); returns (exit status, its last lines)."""
    echo(f"{prefix} $ t2t-lite-{name.replace('_', '-')} {shlex.join(args)}", flush=True)
    return run_streamed([sys.executable, "-m", f"t2t_lite.bin.{name}", *args], prefix, echo)


def run_streamed(command, prefix, echo):
    """Runs `command`, streaming its merged output with `prefix`; (exit status, last lines)."""
    tail = []
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True, bufsize=1, errors="replace")
    try:
        for line in process.stdout:
            if stderr_filter.is_noise(line.encode("utf-8")):
                continue
            tail = (tail + [line.rstrip("\n")])[-40:]
            echo(f"{prefix} {line.rstrip()}", flush=True)
        process.wait()
    finally:
        if process.poll() is None:  # interrupted: the child must not outlive the table
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        process.stdout.close()
    return process.returncode, tail


def failure_reason(what, returncode, tail):
    """"<what>: <why>", why being the tool's last `error: ...` line (a divergence, a bad
    setting), else its exit status and last line."""
    for line in reversed(tail):
        if line.startswith("error: "):
            return f"{what}: {line[len('error: '):]}"
    if returncode < 0:
        how = f"killed by signal {-returncode}" + (" (out of memory?)" if returncode == -9
                                                    else "")
    else:
        how = f"exit {returncode}"
    last = next((line for line in reversed(tail) if line.strip()), "")
    return f"{what}: {how}" + (f": {last.strip()[:300]}" if last else "")


class RowRunner:
    """Trains one row with t2t-lite-trainer and evaluates its last checkpoint."""

    def __init__(self, table, problem, options, echo):
        self.table, self.problem, self.options, self.echo = table, problem, options, echo

    def train(self, row, plan, steps, minutes):
        prefix = f"[{row}]"
        args = [f"--problem={self.options.problem}",
                *[f"--problem_param={p}" for p in self.options.problem_params],
                *[f"--problem_module={m}" for m in self.options.problem_modules],
                f"--data_dir={os.path.abspath(self.options.data_dir)}",
                f"--model_dir={self.table.row_path(row, 'model')}",
                f"--hparams_set={set_name(row)}",
                *[f"--gin_param={g}" for g in plan.bindings],
                "--bleu_sentences=0"]  # the table decodes dev itself, with beam 4
        if minutes:
            args.append(f"--train_minutes={minutes:g}")
        else:
            args += [f"--train_steps={steps}", "--train_minutes=0"]
        returncode, tail = run_tool("trainer", args, prefix, self.echo)
        if returncode:
            raise RowFailed(failure_reason("t2t-lite-trainer", returncode, tail))

    def evaluate(self, row, plan):
        """The last checkpoint's dev perplexity (in process) and dev BLEU (t2t-lite-decoder,
        beam 4, alpha 0.6, no averaging)."""
        from t2t_lite.metrics.report import score_files
        from t2t_lite.model_dir import checkpoint_reader

        model_dir = self.table.row_path(row, "model")
        listed = checkpoint_reader.checkpoint_paths(model_dir) if os.path.isdir(model_dir) else []
        if not listed:
            raise RowFailed(f"no checkpoint in {model_dir} after training")
        checkpoint = listed[-1]
        start = time.monotonic()
        dev = self.perplexity(row, model_dir, checkpoint)
        if not math.isfinite(dev["loss"]):
            raise RowFailed(f"diverged: dev loss {dev['loss']} at {checkpoint}")
        perplexity_seconds = time.monotonic() - start
        translation = self.table.row_path(row, DEV_TRANSLATION)
        summary = self.table.row_path(row, "decode_summary.json")
        start = time.monotonic()
        returncode, tail = run_tool("decoder", [
            f"--model_dir={model_dir}", f"--checkpoint_path={checkpoint}",
            f"--beam_size={BEAM_SIZE}", f"--alpha={ALPHA}",
            f"--decode_from_file={self.table.path(DEV_SOURCE)}",
            f"--decode_to_file={translation}", f"--summary_file={summary}", "--start_over"],
            f"[{row}]", self.echo)
        if returncode:
            raise RowFailed(failure_reason("t2t-lite-decoder", returncode, tail))
        decode_seconds = time.monotonic() - start
        try:
            report, scores = score_files(translation, self.table.path(DEV_REFERENCE))
        except UserError as error:
            raise RowFailed(f"scoring the dev translation: {error}") from None
        atomic.write_text(self.table.row_path(row, "bleu.txt"), report + "\n")
        return checkpoint, dev, scores, report, perplexity_seconds, decode_seconds

    def perplexity(self, row, model_dir, checkpoint):
        """dev_loss_metrics in a subprocess of its own, so that the model (and on a GPU, its
        memory) is gone before the next row trains."""
        path = self.table.row_path(row, "dev_perplexity.json")
        if os.path.isfile(path):
            os.remove(path)
        request = {"problem": self.options.problem,
                   "problem_params": list(self.options.problem_params),
                   "problem_modules": list(self.options.problem_modules),
                   "data_dir": os.path.abspath(self.options.data_dir), "model_dir": model_dir,
                   "checkpoint": checkpoint, "output": path}
        self.echo(f"[{row}] dev perplexity of {checkpoint} over the whole dev split", flush=True)
        returncode, tail = run_streamed([sys.executable, "-c", PERPLEXITY_WORKER,
                                         json.dumps(request)], f"[{row}]", self.echo)
        metrics = read_json(path)
        if returncode or not isinstance(metrics, dict) or "loss" not in metrics:
            raise RowFailed(failure_reason("dev perplexity", returncode or 1, tail))
        return metrics

    def run(self, row, plan, steps, minutes):
        self.train(row, plan, steps, minutes)
        checkpoint, dev, scores, report, ppl_seconds, decode_seconds = self.evaluate(row, plan)
        step = checkpoint_step(checkpoint)
        model, train, decode = plan.configs
        return {
            "row": row, "status": "done", "set": set_name(row), "bindings": plan.bindings,
            "model_dir": self.table.row_path(row, "model"), "checkpoint": checkpoint,
            "steps": step, "averaged": False,
            "columns": row_columns(plan.configs), "varied": plan.varied,
            "params": plan.params, "precision": train.mixed_precision,
            "dev": {k: float(v) for k, v in dev.items()},
            "bleu": round(scores["bleu"], 4), "chrf": round(scores["chrf"], 4),
            "bleu_signature": scores["signature"], "bleu_report": report,
            "beam_size": BEAM_SIZE, "alpha": ALPHA,
            "translation": self.table.row_path(row, DEV_TRANSLATION),
            "seconds": {"train": round(trained_seconds(checkpoint), 1),
                        "evaluate": round(ppl_seconds + decode_seconds, 1),
                        "perplexity": round(ppl_seconds, 1), "decode": round(decode_seconds, 1)},
            "machine": machine(),
            "finished": time.strftime("%Y-%m-%d %H:%M:%S"),
        }


def checkpoint_step(path):
    try:
        return int(path.rsplit("-", 1)[1])
    except (IndexError, ValueError):
        return None


def trained_seconds(checkpoint):
    """The trainer's training seconds across resumes, as the checkpoint recorded them."""
    import tensorflow as tf

    try:
        return float(tf.train.load_variable(checkpoint,
                                            "trained_seconds/.ATTRIBUTES/VARIABLE_VALUE"))
    except (tf.errors.OpError, ValueError):
        return float("nan")


PERPLEXITY_WORKER = ("import sys; from t2t_lite.table3 import row_runner; "
                     "row_runner.perplexity_worker(sys.argv[1])")


def perplexity_worker(request):
    """The dev-perplexity subprocess: a JSON request in, dev_loss_metrics written to its
    "output" file; a UserError becomes one `error:` line and exit status 1."""
    try:
        request = json.loads(request)
        for module in request["problem_modules"]:
            registry.import_problem_module(module)
        problem = problems.build(request["problem"], request["problem_params"])
        metrics = dev_loss_metrics(problem, request["data_dir"], request["model_dir"],
                                   request["checkpoint"])
    except UserError as error:
        print(f"error: {error}", file=sys.stderr, flush=True)
        sys.exit(1)
    atomic.write_json(request["output"], {k: float(v) for k, v in metrics.items()}, indent=1)
    print(f"dev perplexity {metrics['perplexity']:.4f} (loss {metrics['loss']:.4f}, token "
          f"accuracy {metrics['token_accuracy']:.4f})", flush=True)


def dev_loss_metrics(problem, data_dir, model_dir, checkpoint):
    """Loss, perplexity (exp of the unsmoothed per-token NLL) and token accuracy of a checkpoint
    over the whole dev split, as the trainer's evaluation computes them."""
    from t2t_lite.model_dir import loaded
    from t2t_lite.training.evaluation import Evaluator

    run = loaded.load(model_dir, checkpoint)
    evaluator = Evaluator(run.model, problem, data_dir, run.tokenizer, *run.configs,
                          max_batches=2 ** 31 - 1, bleu_sentences=0)
    return evaluator.loss_metrics()
