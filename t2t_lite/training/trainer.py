"""The training loop behind t2t-lite-trainer.

One call, `train(options)`: load the hparams set, prepare the problem's data and the model_dir,
pick a distribution strategy, build the model and the paper's optimizer, restore the latest
checkpoint if any, then step until --train_steps or --train_minutes, saving on the set's timer,
evaluating on the dev split, and stopping cleanly on NaN.
"""
import dataclasses
import math
import os
import time
from typing import Optional, Sequence

import keras
import tensorflow as tf
from absl import logging

from t2t_lite import hparams, models, registry
from t2t_lite.errors import UserError
from t2t_lite.model_dir import files as model_dir_files
from t2t_lite.model_dir.checkpoints import CheckpointKeeper
from t2t_lite.models.params import analytic_parameter_count
from t2t_lite.training import budget as budget_lib
from t2t_lite.training import precision as precision_lib
from t2t_lite.training import strategy as strategy_lib
from t2t_lite.training.evaluation import Evaluator, format_metrics, is_better
from t2t_lite.training.flops import training_flops
from t2t_lite.training.loss import token_statistics
from t2t_lite.training.progress import Progress
from t2t_lite.training.schedule import make_optimizer, make_schedule, peak_learning_rate
from t2t_lite.training.steps import TrainSteps


@dataclasses.dataclass
class TrainOptions:
    problem: str
    data_dir: str
    model_dir: str
    problem_modules: Sequence[str] = ()  # user modules registering problems
    problem_params: Sequence[str] = ()  # key=value constructor arguments of the problem
    hparams_set: str = "base"
    gin_files: Sequence[str] = ()  # the user's own gin files, after the set
    gin_params: Sequence[str] = ()
    # None: the set's TrainConfig value (RUN_SETTINGS); a value overrides it for this run.
    train_steps: Optional[int] = None
    train_minutes: Optional[float] = None  # wall-clock budget of the whole run
    generate_data: bool = False
    tmp_dir: Optional[str] = None
    num_gpus: Optional[int] = None
    accumulate_steps: Optional[int] = None  # None: derived from the set's global token budget
    eval_every_steps: Optional[int] = None
    eval_batches: Optional[int] = None
    bleu_sentences: Optional[int] = None
    eval_beam_size: Optional[int] = None
    early_stopping_evals: Optional[int] = None
    log_every: Optional[int] = None
    print_params: bool = False


# TrainOptions fields that override the TrainConfig field of the same name.
RUN_SETTINGS = ("train_steps", "train_minutes", "log_every", "eval_every_steps", "eval_batches",
                "bleu_sentences", "eval_beam_size", "early_stopping_evals")


def resolve_run_settings(options, train_config):
    """(options, train_config) agreeing on RUN_SETTINGS: a value given in the options wins and is
    recorded in the config (so configs.json says how the run went); None takes the set's."""
    given = {name: getattr(options, name) for name in RUN_SETTINGS
             if getattr(options, name) is not None}
    try:
        train_config = dataclasses.replace(train_config, **given)
    except ValueError as error:
        raise UserError(f"bad run setting: {error}") from None
    resolved = {name: getattr(train_config, name) for name in RUN_SETTINGS}
    return dataclasses.replace(options, **resolved), train_config


@dataclasses.dataclass
class TrainResult:
    step: int
    stopped_because: str
    last_checkpoint: Optional[str]
    best_metrics: Optional[dict]
    total_flops: float
    last_train_metrics: Optional[dict]


def batch_plan(train_config, replicas, accumulate_steps=None):
    """(per-replica token budget, accumulation steps) so that replicas x budget x steps reaches
    the set's global batch_tokens, as the paper's ~25k tokens per step."""
    per_replica = min(train_config.max_tokens_per_replica,
                      max(1, math.ceil(train_config.batch_tokens / replicas)))
    per_replica = max(per_replica, train_config.max_length)  # one longest example must fit
    if accumulate_steps is None:
        accumulate_steps = max(1, math.ceil(train_config.batch_tokens / (per_replica * replicas)))
    if accumulate_steps < 1:
        raise UserError(f"--accumulate_steps must be >= 1, got {accumulate_steps}")
    return per_replica, accumulate_steps


# Steps before the step rate is measured (tracing, first batches), and how many to time.
RATE_SKIP_STEPS = 2
RATE_STEPS = 10


def _set_precision(train_config):
    """Sets Keras' global policy; "auto" is resolved for this machine and the choice printed."""
    has_gpu = bool(tf.config.list_logical_devices("GPU"))
    policy, why = precision_lib.choose(train_config.mixed_precision, has_gpu=has_gpu)
    keras.mixed_precision.set_global_policy(policy)
    if train_config.mixed_precision == "auto":
        print(f"precision: {policy} ({why})", flush=True)
    return dataclasses.replace(train_config, mixed_precision=policy)


def train(options: TrainOptions) -> TrainResult:
    # First of all: MultiWorkerMirroredStrategy must configure collectives before any TF op runs.
    strategy = strategy_lib.make_strategy(options.num_gpus)
    for module in options.problem_modules:
        registry.import_problem_module(module)
    registry.list_problems()  # registers problem configurables before gin parses bindings
    for path in options.gin_files:
        if not os.path.isfile(path):
            raise UserError(f"--gin_file {path} does not exist")
    model_config, train_config, decode_config = hparams.load(options.hparams_set,
                                                             options.gin_params,
                                                             options.gin_files)
    options, train_config = resolve_run_settings(options, train_config)
    train_steps = options.train_steps
    # Seeding resets TF's kernel caches, which destroys resources such as the SentencePiece
    # op's model: it must come before any tokenizer is built.
    keras.utils.set_random_seed(train_config.seed)
    problem = registry.problem(options.problem, **registry.parse_params(options.problem_params))
    if options.generate_data:
        problem.generate_data(options.data_dir, options.tmp_dir)
    tokenizer = problem.tokenizer(options.data_dir)
    vocab_size = tokenizer.vocab_size
    if options.print_params:
        count = analytic_parameter_count(model_config, vocab_size)
        print(f"{options.hparams_set}: {count:,} parameters ({count / 1e6:.1f}M) at vocabulary "
              f"{vocab_size:,}", flush=True)

    chief = strategy_lib.is_chief(strategy)
    os.makedirs(options.model_dir, exist_ok=True)
    lock = model_dir_files.TrainerLock(options.model_dir) if chief else None
    if lock:
        lock.acquire()
    try:
        if chief:
            model_dir_files.write_run_info(
                options.model_dir, problem.name, options.hparams_set, options.gin_params,
                problem.vocab_path(options.data_dir), vocab_size,
                (model_config, train_config, decode_config),
                extra={"gin_files": [os.path.abspath(p) for p in options.gin_files],
                       "problem_params": list(options.problem_params),
                       "problem_modules": list(options.problem_modules),
                       "data_dir": os.path.abspath(options.data_dir)})
        return _train_loop(options, problem, tokenizer, strategy, chief, model_config,
                           train_config, decode_config, train_steps)
    finally:
        if lock:
            lock.release()


def _checkpoint_dir(options, strategy, chief):
    # Every worker of MultiWorkerMirroredStrategy must save (it is collective); only the chief's
    # copy is kept.
    if chief:
        return options.model_dir
    return os.path.join(options.model_dir, f".worker_{strategy_lib.worker_id(strategy)}")


def _train_loop(options, problem, tokenizer, strategy, chief, model_config, train_config,
                decode_config, train_steps):
    train_config = _set_precision(train_config)
    replicas = strategy.num_replicas_in_sync
    per_replica_tokens, accumulate = batch_plan(train_config, replicas, options.accumulate_steps)
    logging.info("batching: %d tokens per replica x %d replicas x %d accumulation steps = %d "
                 "tokens per step (set: %d)", per_replica_tokens, replicas, accumulate,
                 per_replica_tokens * replicas * accumulate, train_config.batch_tokens)

    budgeted = train_config.budget_schedule
    with strategy.scope():
        model = models.build(model_config, tokenizer.vocab_size)
        # A budgeted run's schedule hangs on two variables the plan sets once the step rate is
        # measured; until then, a provisional plan over the step cap.
        plan_warmup = tf.Variable(
            max(1, round(train_config.budget_warmup_fraction * train_steps)), dtype=tf.int64,
            trainable=False, name="plan_warmup")
        plan_total = tf.Variable(train_steps, dtype=tf.int64, trainable=False, name="plan_total")
        optimizer = make_optimizer(model_config, train_config,
                                   (plan_warmup, plan_total) if budgeted else None)
        optimizer.build(model.trainable_variables)
        # Training seconds so far, across restarts: --train_minutes is a budget for the whole
        # run (as fairseq's --stop-time-hours), so a resumed run only trains what is left.
        trained_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                      name="trained_seconds")
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                         trained_seconds=trained_seconds,
                                         **({"plan_warmup": plan_warmup, "plan_total": plan_total}
                                            if budgeted else {}))
    keeper = CheckpointKeeper(checkpoint, _checkpoint_dir(options, strategy, chief),
                              keep=train_config.keep_checkpoints,
                              minutes=train_config.checkpoint_minutes,
                              steps=train_config.checkpoint_steps)
    restored = keeper.restore_latest()
    step = int(optimizer.iterations.numpy())
    if restored:
        print(f"resumed from {restored} at step {step}", flush=True)
    if chief:
        # Written after the model and optimizer exist, so it lists every value gin supplied.
        model_dir_files.write_operative_config(options.model_dir)

    def dataset_fn(input_context):
        return problem.dataset("train", options.data_dir, batch_tokens=per_replica_tokens,
                               max_length=train_config.max_length, input_context=input_context,
                               seed=train_config.seed + step)

    dataset = strategy.distribute_datasets_from_function(dataset_fn)
    iterator = iter(dataset)
    steps = TrainSteps(strategy, model, optimizer, train_config.label_smoothing, accumulate,
                       element_spec=iterator.element_spec, jit_compile=train_config.jit_compile)

    probe = next(iter(problem.dataset("dev", options.data_dir, batch_tokens=per_replica_tokens,
                                      max_length=train_config.max_length, drop_long=True)))
    divergence = DivergenceCheck(model, probe, train_config.label_smoothing)
    start = time.monotonic()
    already_trained = float(trained_seconds.numpy())
    deadline = (start + options.train_minutes * 60 - already_trained
                if options.train_minutes else None)
    progress = Progress(os.path.join(options.model_dir, "train"), train_steps, deadline,
                        every=options.log_every, write_summaries=chief)
    evaluator = Evaluator(model, problem, options.data_dir, tokenizer, model_config, train_config,
                          decode_config, max_batches=options.eval_batches,
                          bleu_sentences=options.bleu_sentences,
                          beam_size=options.eval_beam_size) if chief else None
    best_keeper = tf.train.CheckpointManager(tf.train.Checkpoint(model=model),
                                             os.path.join(options.model_dir, "best"),
                                             max_to_keep=1) if chief else None
    best, evals_without_improvement = None, 0
    stopped_because, last_path = "train_steps", restored
    planner = None
    if budgeted:
        peak = peak_learning_rate(make_schedule(model_config, train_config), train_config)
        planner = BudgetPlanner(train_config, options, step, train_steps, deadline, plan_warmup,
                                plan_total, peak, progress)

    def evaluate_and_keep_best(at_step):
        nonlocal best, evals_without_improvement
        if evaluator is None:
            return
        eval_start = time.monotonic()
        metrics = evaluator.evaluate()
        if planner:
            planner.evaluated(time.monotonic() - eval_start)
        progress.scalars("dev", at_step, metrics)
        print(f"dev at step {at_step}: {format_metrics(metrics)}", flush=True)
        if is_better(metrics, best):
            best, evals_without_improvement = dict(metrics, step=at_step), 0
            best_keeper.save(checkpoint_number=at_step)
        else:
            evals_without_improvement += 1

    while step < (planner.total_steps if planner else train_steps):
        if deadline is not None and time.monotonic() >= deadline:
            stopped_because = "train_minutes"
            break
        step_start = time.monotonic()
        micro_totals = [steps.micro_step(next(iterator)) for _ in range(accumulate - 1)]
        stats = _sum_statistics(micro_totals + [steps.final_step(next(iterator))])
        step = int(optimizer.iterations.numpy())
        if planner:
            planner.stepped(step, time.monotonic() - step_start)
        loss_value = float(stats["loss"])
        grad_ok = math.isfinite(float(stats["grad_norm"]))
        # Under float16 loss scaling an overflowing step is expected: the optimizer skips it
        # and lowers the scale.
        if not math.isfinite(loss_value) or not (grad_ok or steps.loss_scaling):
            # The in-memory weights are now suspect; the last good checkpoint stays the latest.
            raise UserError(f"training diverged at step {step}: loss is {loss_value}; "
                            f"{_kept_checkpoint(keeper)}. Try a lower learning rate or more "
                            "warmup.")
        progress.update(step, stats, _current_learning_rate(optimizer))
        due_eval = options.eval_every_steps and step % options.eval_every_steps == 0
        if planner:
            due_eval = planner.eval_due(step)
        trained_seconds.assign(already_trained + time.monotonic() - start)
        if keeper.due(step) or (planner and planner.checkpoint_due(step)):
            divergence.verify(step, keeper)
            last_path = keeper.save(step)
            if not options.eval_every_steps and not planner:
                due_eval = True
        if due_eval:
            evaluate_and_keep_best(step)
            if (options.early_stopping_evals
                    and evals_without_improvement >= options.early_stopping_evals):
                stopped_because = "early_stopping"
                break

    if planner and stopped_because == "train_steps" and planner.total_steps < train_steps:
        stopped_because = "end of the budget plan"
    if step > 0:
        divergence.verify(step, keeper)
        last_path = keeper.save(step)
        if best is None or best.get("step") != step:
            evaluate_and_keep_best(step)
    last_metrics = (progress.report(step, _current_learning_rate(optimizer))
                    or progress.last_values)
    total_flops = _estimate_flops(model_config, tokenizer.vocab_size, progress)
    elapsed = time.monotonic() - start
    print(f"stopped at step {step} ({stopped_because}) after {elapsed / 60:.1f} min "
          f"({(already_trained + elapsed) / 60:.1f} min of training in total); "
          f"{progress.total_target_tokens:,.0f} target tokens this run; estimated training cost "
          f"{total_flops:.3g} FLOPs; last checkpoint {last_path}", flush=True)
    return TrainResult(step=step, stopped_because=stopped_because, last_checkpoint=last_path,
                       best_metrics=best, total_flops=total_flops,
                       last_train_metrics=last_metrics)


class DivergenceCheck:
    """Before each save: are the weights, and the loss they give on a fixed probe batch, finite?

    A step's loss is computed before its update, so a finite loss can still be followed by an
    update that ruins the weights; this extra forward pass (once per checkpoint) catches that.
    """

    def __init__(self, model, probe_batch, label_smoothing):
        self.model, self.probe = model, probe_batch
        self.label_smoothing = label_smoothing
        self._check = tf.function(self._finite, autograph=False)

    def _finite(self):
        weights_ok = tf.reduce_all([tf.reduce_all(tf.math.is_finite(v))
                                    for v in self.model.trainable_variables])
        logits = self.model(self.probe, training=False)
        loss = token_statistics(logits, self.probe["targets"], self.label_smoothing)["loss"]
        return tf.logical_and(weights_ok, tf.math.is_finite(loss))

    def verify(self, step, keeper):
        if not bool(self._check()):
            raise UserError(
                f"training diverged at step {step}: the weights no longer give a finite loss; "
                f"{_kept_checkpoint(keeper)}. Try a lower learning rate or more warmup.")


def _kept_checkpoint(keeper):
    latest = keeper.manager.latest_checkpoint
    if latest:
        return f"the last good checkpoint ({latest}) was kept"
    return "no checkpoint was written (the run diverged before its first save)"


class BudgetPlanner:
    """Drives a budgeted run (budget.py): measures the step rate, plans, re-plans as it goes.

    Re-plans at every progress report until the averaging window starts, so a machine that
    slows down (or a resumed run with a larger budget) still ends with a full decay and window.
    """

    def __init__(self, train_config, options, step, max_steps, deadline, warmup_var, total_var,
                 peak, progress):
        self.config, self.options = train_config, options
        self.start_step, self.max_steps, self.deadline = step, max_steps, deadline
        self.warmup_var, self.total_var, self.peak = warmup_var, total_var, peak
        self.progress = progress
        self.timed_seconds, self.timed_steps = 0.0, 0
        self.eval_seconds = []
        self.plan = self.printed_plan = None
        self.next_eval = None
        restored_warmup = int(warmup_var.numpy())
        # A resumed run past its warmup keeps it: only the length is re-planned.
        self.kept_warmup = restored_warmup if step and step >= restored_warmup else None
        if deadline is None:
            self._make_plan(step, seconds_per_step=0.0)  # --train_steps alone: nothing to measure
        else:
            print(f"plan: measuring this machine's step rate over steps {step + RATE_SKIP_STEPS + 1}"
                  f"-{step + RATE_SKIP_STEPS + RATE_STEPS}, then fitting the run to "
                  f"{(deadline - time.monotonic()) / 60:.1f} min left", flush=True)

    @property
    def total_steps(self):
        return self.plan.total_steps if self.plan else self.max_steps

    def stepped(self, step, seconds):
        if step - self.start_step > RATE_SKIP_STEPS:
            self.timed_seconds += seconds
            self.timed_steps += 1
        measured = self.timed_steps >= RATE_STEPS
        if self.deadline is None or not measured:
            return
        # The plan freezes a little before its averaging window, so the window's checkpoints
        # are not moved past while they are being written.
        frozen = self.plan and (not self.plan.average_steps or step >= self.plan.average_steps[0]
                                - 2 * self.options.log_every)
        if self.plan is None or (step % self.options.log_every == 0 and not frozen):
            self._make_plan(step, self.timed_seconds / self.timed_steps)

    def evaluated(self, seconds):
        self.eval_seconds.append(seconds)

    def _estimated_eval_seconds(self, seconds_per_step):
        if self.eval_seconds:
            return sum(self.eval_seconds) / len(self.eval_seconds)
        # A dev batch's forward pass costs about a third of a training step; greedy BLEU
        # decoding roughly a tenth of a second per sentence on a CPU.
        return (self.options.eval_batches * seconds_per_step / 3
                + 0.1 * self.options.bleu_sentences)

    def _make_plan(self, step, seconds_per_step):
        seconds_left = None if self.deadline is None else self.deadline - time.monotonic()
        new = budget_lib.plan(
            step, seconds_left, seconds_per_step, self.max_steps, self.config.average_last,
            warmup_fraction=self.config.budget_warmup_fraction,
            average_fraction=self.config.budget_average_fraction,
            eval_seconds=self._estimated_eval_seconds(seconds_per_step),
            eval_fraction=self.config.budget_eval_fraction, warmup_steps=self.kept_warmup,
            decay_fraction=self.config.budget_decay_fraction)
        if self.plan is None or self.next_eval is None:
            self.next_eval = step + new.eval_every
        elif new.eval_every != self.plan.eval_every:
            self.next_eval = min(self.next_eval, step + new.eval_every)
        # Printed when it moved more than 2% from the plan last printed.
        shown = self.printed_plan
        changed = (shown is None
                   or abs(new.total_steps - shown.total_steps) > 0.02 * shown.total_steps)
        self.plan = new
        if step >= new.warmup_steps:
            self.kept_warmup = new.warmup_steps
        self.warmup_var.assign(new.warmup_steps)
        self.total_var.assign(new.total_steps)
        self.progress.total_steps = new.total_steps
        if changed:
            self.printed_plan = new
            print(new.describe(self.peak), flush=True)

    def eval_due(self, step):
        if self.next_eval is not None and step >= self.next_eval and step < self.total_steps:
            self.next_eval = step + self.plan.eval_every
            return True
        return False

    def checkpoint_due(self, step):
        return bool(self.plan) and step in self.plan.average_steps


def _sum_statistics(per_micro_batch):
    """Sums the micro-batches' token statistics; the gradient norm is the applied update's."""
    total = {key: float(value) for key, value in per_micro_batch[-1].items()}
    for stats in per_micro_batch[:-1]:
        for key, value in stats.items():
            total[key] += float(value)
    return total


def _current_learning_rate(optimizer):
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    schedule = inner._learning_rate if hasattr(inner, "_learning_rate") else inner.learning_rate
    if callable(schedule):
        return float(schedule(inner.iterations - 1))
    return float(schedule)


def _estimate_flops(model_config, vocab_size, progress):
    """Table 2 style: 3x forward FLOPs per token pair, at the run's mean sentence length.

    Without per-sentence lengths, tokens are split into sentences of 25 target tokens (typical
    for WMT); FLOPs grow only slightly with length through the attention terms.
    """
    target_tokens = progress.total_target_tokens
    if not target_tokens:
        return 0.0
    sentence = 25
    ratio = progress.total_source_tokens / target_tokens
    per_sentence = training_flops(model_config, vocab_size, max(1, round(sentence * ratio)),
                                  sentence)
    return per_sentence * target_tokens / sentence
