"""The training loop behind t2t-lite-trainer.

One call, `train(options)`: load the hparams set (or take the configs the caller resolved),
prepare the problem's data and the model_dir, pick a distribution strategy, build the model and
the paper's optimizer, restore the latest checkpoint if any (else, with --warm_start_from, the
parent's model weights: warm_start.py), then step until --train_steps or --train_minutes.
Everything beside the step is a hook (hooks.py): the budget plan, the divergence guard, the
progress line, checkpoints on the set's timer, dev evaluation with the best checkpoint and early
stopping, summaries.
"""
import dataclasses
import math
import os
import sys
import time
from typing import Any, Optional, Sequence

import keras
import tensorflow as tf
from absl import logging

from t2t_lite import hparams, models
from t2t_lite.config import TrainConfig
from t2t_lite.errors import UserError
from t2t_lite.model_dir import dev_history
from t2t_lite.model_dir import files as model_dir_files
from t2t_lite.model_dir.checkpoint_reader import checkpoint_paths
from t2t_lite.model_dir.checkpoint_saver import CheckpointKeeper
from t2t_lite.models import params
from t2t_lite.problem_spec import ProblemSpec
from t2t_lite.training import preemption
from t2t_lite.training import precision as precision_lib
from t2t_lite.training import strategy as strategy_lib
from t2t_lite.training import warm_start as warm_start_lib
from t2t_lite.training.budget import RATE_SKIP_STEPS, RATE_STEPS, BudgetPlanner
from t2t_lite.training.checkpointing import Checkpoints
from t2t_lite.training.divergence import DivergenceGuard
from t2t_lite.training.evaluation import Evaluation, Evaluator
from t2t_lite.training.flops import training_flops
from t2t_lite.training.hooks import TrainState
from t2t_lite.training.progress import Progress, Summaries
from t2t_lite.training.regularisation import (RegularisationChoice, RegularisationPlan,
                                              Regulariser, train_examples)
from t2t_lite.training.schedule import make_schedule, optimizer_with, peak_learning_rate
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
    # The run settings (RUN_SETTINGS) carry only what the user overrode: None is the set's
    # TrainConfig value; a value overrides it for this run (resolve_run_settings).
    train_steps: Optional[int] = None
    train_minutes: Optional[float] = None  # wall-clock budget of the whole run (0: none)
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
    # A parent model_dir or checkpoint whose model weights a new model_dir starts from.
    warm_start_from: Optional[str] = None
    # Model settings the child may set apart from the parent's (warm_start.COMPARED names).
    warm_start_accept: Sequence[str] = ()
    # The run's (ModelConfig, TrainConfig, DecodeConfig), resolved by the caller: used instead of
    # reading hparams_set, gin_files and gin_params (which run.json still records as where they
    # came from); the run settings above still override theirs.
    configs: Optional[tuple] = None

    def __post_init__(self):
        # isolated.call hands its child the configs as their values (dicts): built back here.
        if self.configs is not None and not all(map(dataclasses.is_dataclass, self.configs)):
            self.configs = model_dir_files.configs_from_values(self.configs)


# The run settings: TrainOptions fields that override the TrainConfig field of the same name.
# Named by the names the two share, so a new one is a TrainConfig field (its type, default and
# meaning), an Optional TrainOptions field defaulting to None, and its flag, which tests hold in
# step (tests/training/test_trainer_options.py, tests/test_command_line.py).
RUN_SETTINGS = tuple(sorted({field.name for field in dataclasses.fields(TrainOptions)}
                            & {field.name for field in dataclasses.fields(TrainConfig)}))


def resolve_run_settings(options, train_config):
    """The TrainConfig a run follows: the set's, with each RUN_SETTINGS value the options give
    (None: not given) in its place. It is the one resolved object the trainer and its hooks read
    every run setting from, and configs.json records it (how the run went)."""
    given = {name: getattr(options, name) for name in RUN_SETTINGS
             if getattr(options, name) is not None}
    try:
        return dataclasses.replace(train_config, **given)
    except ValueError as error:
        raise UserError(f"bad run setting: {error}") from None


@dataclasses.dataclass
class TrainResult:
    step: int
    stopped_because: str
    last_checkpoint: Optional[str]
    best_metrics: Optional[dict]
    total_flops: float
    last_train_metrics: Optional[dict]
    # What the budget plan's regularisation chose in this run; None when nothing was chosen.
    regularisation: Optional[RegularisationChoice] = None


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


def _set_precision(train_config):
    """Sets Keras' global policy; "auto" is resolved for this machine and the choice printed."""
    policy, why = precision_lib.choose(train_config.mixed_precision)
    keras.mixed_precision.set_global_policy(policy)
    if train_config.mixed_precision == "auto":
        print(f"precision: {policy} ({why})", flush=True)
    return dataclasses.replace(train_config, mixed_precision=policy)


def train(options: TrainOptions) -> TrainResult:
    """Trains as `options` say and returns how the run ended (TrainResult). SIGTERM or SIGINT
    during the steps saves a checkpoint at the next step boundary and exits with status 143 /
    130 (preemption.py). Under MultiWorkerMirroredStrategy the process ends here, whatever ends
    the run (_leave_cluster); a worker of the cluster going away ends it with one `error:` line
    naming it, status 1. The caller's Keras dtype policy is back when it returns or raises."""
    signals = preemption.Signals().install()
    policy = keras.config.dtype_policy()  # the run sets its own (_set_precision)
    try:
        return _train(options, signals)
    finally:
        keras.config.set_dtype_policy(policy)
        signals.restore()


def _train(options, signals):
    """The run's configuration, problem, data and warm-start parent, checked, then run.json
    written under the model_dir's lock; _build_and_train does the rest."""
    # First of all: MultiWorkerMirroredStrategy must configure collectives before any TF op runs.
    strategy = strategy_lib.make_strategy(options.num_gpus)
    signals.install()
    spec = ProblemSpec.of(options)
    spec.import_modules()  # before gin is read: a user's module may register what it binds
    for path in options.gin_files:
        if not os.path.isfile(path):
            raise UserError(f"--gin_file {path} does not exist")
    gin_bound = options.configs is None
    model_config, train_config, decode_config = (
        hparams.load(options.hparams_set, options.gin_params, options.gin_files) if gin_bound
        else options.configs)
    # Resolved once: the user's run settings, then "auto" precision decided for this machine.
    train_config = _set_precision(resolve_run_settings(options, train_config))
    # Seeding resets TF's kernel caches, which destroys resources such as the SentencePiece
    # op's model: it must come before any tokenizer is built.
    keras.utils.set_random_seed(train_config.seed)
    problem = spec.build()
    if options.generate_data:
        problem.generate_data(options.data_dir, options.tmp_dir)
    tokenizer = problem.tokenizer(options.data_dir)
    vocab_size = tokenizer.vocab_size
    if options.print_params:
        print(params.describe(options.hparams_set, model_config, vocab_size), flush=True)

    # Before anything is built or written: a parent that cannot be the child's start is refused.
    warm_start = None
    if options.warm_start_from:
        warm_start = warm_start_lib.prepare(
            options.warm_start_from, options.model_dir, model_config, vocab_size, problem,
            options.data_dir, _config_where(options), accept=options.warm_start_accept)
    run = _Run(options, model_config, train_config, decode_config, problem, tokenizer,
               strategy, strategy_lib.is_chief(strategy), warm_start, signals)
    os.makedirs(options.model_dir, exist_ok=True)
    lock = model_dir_files.TrainerLock(options.model_dir) if run.chief else None
    if lock:
        lock.acquire()
        # Released on every way out, also where the process ends with os._exit
        # (preemption.leave_now: a lost worker, the end of a cluster run, a second Ctrl-C).
        preemption.before_exit(lock.release)
    try:
        if run.chief:
            _write_run_info(run, config_text=hparams.config_text() if gin_bound else None)
        try:
            return _build_and_train(run)
        except (preemption.WorkerGone, *preemption.LOST_WORKER_ERRORS) as error:
            _lost_worker(error, run)
            raise  # an error of its own, not a lost worker: shown as it is
    finally:
        if lock:
            preemption.forget(lock.release)
            lock.release()


def _write_run_info(run, config_text):
    """run.json: what the run trains on and with (model_dir/files.py)."""
    options, extra = run.options, {}
    # A resumed child keeps the record of the parent its weights started from.
    record = (run.warm_start.record() if run.warm_start
              else _previous_warm_start(options.model_dir))
    if record:
        extra["warm_start"] = record
    model_dir_files.write_run_info(
        options.model_dir, run.problem.name, options.hparams_set, options.gin_params,
        run.problem.vocab_path(options.data_dir), run.tokenizer.vocab_size, run.configs,
        extra={"gin_files": [os.path.abspath(p) for p in options.gin_files],
               "problem_params": list(options.problem_params),
               "problem_modules": list(options.problem_modules),
               "data_dir": os.path.abspath(options.data_dir), **extra},
        config_text=config_text)


class _Position:
    """Where a run is, for the lost-worker line: the step restored, then the loop's state."""
    step = 0
    state = None

    @property
    def current(self):
        return self.state.step if self.state is not None else self.step


@dataclasses.dataclass(frozen=True)
class _Run:
    """A run's context, resolved once in _train and passed whole: the user's options (what they
    overrode), the resolved configs (train_config holds every run setting: resolve_run_settings,
    then the precision chosen for this machine), the problem, this worker's place in the
    strategy, the warm-start parent and the signals."""
    options: TrainOptions
    model_config: Any
    train_config: Any
    decode_config: Any
    problem: Any
    tokenizer: Any
    strategy: Any
    chief: bool
    warm_start: Any = None
    signals: Any = None
    position: _Position = dataclasses.field(default_factory=_Position)

    @property
    def configs(self):
        return self.model_config, self.train_config, self.decode_config

    @property
    def cluster(self):
        return strategy_lib.in_cluster(self.strategy)


def _lost_worker(error, run):
    """Ends the process with the one `error:` line when `error` says a worker of the cluster
    went away (before the first step, during the steps or at the end-of-run barrier); returns
    when it is an error of this worker's own, or off a cluster."""
    if not run.cluster:
        return
    own = strategy_lib.own_task(run.strategy)
    lost = (error.worker if isinstance(error, preemption.WorkerGone)
            else preemption.lost_worker(error, own))
    if lost is None:
        return
    line = preemption.lost_worker_error(error, run.position.current, run.options.model_dir, own,
                                        lost)
    # The line cli.run prints for a UserError, then out at once: TensorFlow's teardown would
    # wait out the lost task's heartbeats and add its own complaint after the line.
    print(f"error: {line}", file=sys.stderr, flush=True)
    preemption.leave_now(1)


def _config_where(options):
    """How a message names the configuration the flags give."""
    given = [name for name, values in (("--gin_file", options.gin_files),
                                       ("--gin_param", options.gin_params)) if values]
    return f"--hparams_set={options.hparams_set}" + (f" with {' and '.join(given)}"
                                                      if given else "")


def _previous_warm_start(model_dir):
    """The warm_start record of the run.json already in model_dir, while its checkpoints (whose
    weights started from that parent) are there to resume."""
    if (not os.path.isfile(os.path.join(model_dir, model_dir_files.RUN_INFO))
            or not checkpoint_paths(model_dir)):
        return None
    return model_dir_files.read_run_info(model_dir).get("warm_start")


def _checkpoint_dir(run):
    # Every worker of MultiWorkerMirroredStrategy saves, at the steps the chief decides for all
    # (hooks.Decisions), so a save is collective; only the chief's copy is kept.
    if run.chief:
        return run.options.model_dir
    return os.path.join(run.options.model_dir,
                        f".worker_{strategy_lib.worker_id(run.strategy)}")


def loop(state, train_step, hooks):
    """Steps until state.total_steps, state.deadline, a hook's reason to stop or a signal (as
    state.stopping decides: preemption.py); returns the reason. `train_step()` applies one
    optimizer step and returns its statistics."""
    stopping = state.stopping or preemption.Stopping(None)
    for hook in hooks:
        hook.begin(state)
    if stopping.signals:
        stopping.signals.arm()  # from here on a signal saves, at the next step boundary
    reason = None
    while reason is None:
        own = None
        if state.step >= state.total_steps:
            own = "train_steps"
        elif state.deadline is not None and time.monotonic() >= state.deadline:
            own = "train_minutes"
        reason = stopping.before_step(state, own)
        if reason is None:
            start = time.monotonic()
            stats = train_step()
            state.next_step(int(state.optimizer.iterations.numpy()), stats,
                            time.monotonic() - start)
            stopping.agree(state)
            # Every hook sees the step, also after one asks to stop.
            reasons = [hook.after_step(state) for hook in hooks]
            reason = stopping.after_step(state, next((r for r in reasons if r), None))
    state.signal = stopping.signal
    state.stopped_because = reason
    state.next_step(state.step)
    for hook in hooks:
        hook.end(state)
        if state.saved and stopping.signals and not state.signal:
            # The last checkpoint is written: a signal from here on (or one that came during
            # the save) skips what is left, the final dev evaluation (preemption.Interrupted).
            stopping.signals.ending()
    if stopping.signals:
        stopping.signals.settle()  # from here a signal is recorded, for the caller to read
    return state.stopped_because


def _build_and_train(run):
    """Sets the run up (_set_up), steps it (_run_loop) and reports how it ended (_report)."""
    training = _set_up(run)
    _run_loop(run, training)
    return _report(run, training)


@dataclasses.dataclass
class _Training:
    """What _set_up builds for a run, for the loop and the final report."""
    parts: "_Parts"
    train_step: Any  # one optimizer step on the next batch (TrainSteps.train_step)
    state: TrainState
    progress: Progress
    hooks: list
    regularisation: list  # [the RegularisationPlan hook] when the run has one
    start: float  # time.monotonic() when the loop starts
    already_trained: float  # training seconds of the run before this process (resumes)


def _set_up(run):
    """Builds the model, optimizer, checkpoint, data pipeline and hooks, and restores the latest
    checkpoint (else the warm start's weights)."""
    config = run.train_config
    replicas = run.strategy.num_replicas_in_sync
    per_replica_tokens, accumulate = batch_plan(config, replicas, run.options.accumulate_steps)
    logging.info("batching: %d tokens per replica x %d replicas x %d accumulation steps = %d "
                 "tokens per step (set: %d)", per_replica_tokens, replicas, accumulate,
                 per_replica_tokens * replicas * accumulate, config.batch_tokens)
    parts = _build(run.strategy, run.model_config, config, run.tokenizer.vocab_size,
                   config.train_steps, run.options.model_dir)
    keeper, restored, step = _restore(run, parts)
    sampling = _subword_sampling(config)

    def dataset_fn(input_context):
        return run.problem.dataset("train", run.options.data_dir,
                                   batch_tokens=per_replica_tokens,
                                   max_length=config.max_length, input_context=input_context,
                                   seed=config.seed + step, subword_sampling=sampling)

    iterator = iter(run.strategy.distribute_datasets_from_function(dataset_fn))
    steps = TrainSteps(run.strategy, parts.model, parts.optimizer, config.label_smoothing,
                       accumulate, element_spec=iterator.element_spec,
                       jit_compile=config.jit_compile)
    probe = next(iter(run.problem.dataset("dev", run.options.data_dir,
                                          batch_tokens=per_replica_tokens,
                                          max_length=config.max_length, drop_long=True)))
    start = time.monotonic()
    already_trained = float(parts.trained_seconds.numpy())
    state, planned = _loop_state(run, parts, steps, step, restored, start, already_trained)
    progress = Progress(every=config.log_every)
    guard = DivergenceGuard(parts.model, probe, config.label_smoothing, keeper,
                            loss_scaling=steps.loss_scaling)
    planner = _planner(run, parts, planned)
    # The order is the hooks' contract: each reads what the ones before it left on the state at
    # this step (TrainState's fields name their writer and readers, hooks.py).
    regularisation = _regularisation_plan(run, parts.model, steps, sampling,
                                          planned=bool(planner))
    hooks = [*planner, *regularisation, guard, progress,
             Checkpoints(keeper, parts.trained_seconds, check=guard.verify),
             *_evaluation(run, parts.model)]
    return _Training(parts, lambda: steps.train_step(iterator), state, progress, hooks,
                     regularisation, start, already_trained)


def _restore(run, parts):
    """(the keeper, the checkpoint restored or None, the step): the latest checkpoint, else the
    warm start's weights; the chief also writes the operative config."""
    config, model_dir = run.train_config, run.options.model_dir
    keeper = CheckpointKeeper(parts.checkpoint, _checkpoint_dir(run),
                              keep=config.keep_checkpoints, minutes=config.checkpoint_minutes,
                              steps=config.checkpoint_steps)
    # Every worker resumes from the chief's checkpoint (a shared model_dir), so that all start
    # at the same step whatever a worker's own copy holds.
    restored = (keeper if run.chief else CheckpointKeeper(parts.checkpoint, model_dir,
                                                          keep=config.keep_checkpoints)
                ).restore_latest()
    if restored and not run.chief:
        keeper.saved_as(restored)  # as the chief's keeper: no save at the restored step
    if not restored and run.warm_start:
        # The parent's model weights only: the optimizer, its iterations (the step) and
        # trained_seconds stay fresh, so the child runs its own schedule from step 0.
        run.warm_start.restore(parts.model)
        print(run.warm_start.describe(), flush=True)
    step = int(parts.optimizer.iterations.numpy())
    run.position.step = step
    if restored:
        print(f"resumed from {restored} at step {step} (learning rate "
              f"{float(parts.schedule(step)):.6g})", flush=True)
    elif run.chief:
        dev_history.reset(model_dir)  # a fresh run's evaluations only
    if run.chief:
        # Written after the model and optimizer exist, so it lists every value gin supplied
        # (the configs' own, when the caller gave them).
        model_dir_files.write_operative_config(
            model_dir, run.configs,
            hparams.operative_config_text() if run.options.configs is None else None)
    return keeper, restored, step


def _loop_state(run, parts, steps, step, restored, start, already_trained):
    """The loop's TrainState, with who decides where the run stops (preemption.py), and the
    variables the budget planner writes its plan to."""
    config = run.train_config
    deadline = (start + config.train_minutes * 60 - already_trained
                if config.train_minutes > 0 else None)
    plan = None
    if run.cluster and parts.plan_variables:
        # The planner writes its plan to copies; ClusterStopping applies the chief's.
        copies = tuple(tf.Variable(v.numpy(), trainable=False) for v in parts.plan_variables)
        plan = (*copies, *parts.plan_variables)
    stopping = (preemption.ClusterStopping(run.signals, steps, run.chief, config.train_steps,
                                           plan)
                if run.cluster else preemption.Stopping(run.signals))
    state = TrainState(parts.model, parts.optimizer, parts.schedule, step, config.train_steps,
                       deadline, start, already_trained, last_checkpoint=restored,
                       stopping=stopping)
    run.position.state = state
    return state, plan[:2] if plan else parts.plan_variables


def _run_loop(run, training):
    """Runs `loop`; under a cluster, waits at the end-of-run barrier. A signal's run prints what
    was saved and exits 143 / 130 here."""
    state, signals, cluster = training.state, run.signals, run.cluster
    try:
        loop(state, training.train_step, training.hooks)
    except preemption.Interrupted as stop:
        # A signal after the last checkpoint was written: the final dev evaluation is left to a
        # re-run of the same command, which trains no step and evaluates.
        state.signal = stop.signum
    if cluster and signals:
        signals.waiting(lambda signum: _signal_line(run, training, signum))
    if signals and signals.received and not state.signal:
        state.signal = signals.received  # came after the loop's last look: all is written
    if cluster:
        # No worker leaves while another still works (the chief's last evaluation): one that
        # exits early stops sending heartbeats, which the coordination service reports as a
        # crashed task. A signal while waiting ends the process at once (Signals.waiting).
        _end_of_run_barrier(run.strategy, stopping_anyway=bool(state.signal))
    if signals:
        signals.settle()
    if state.signal:
        print(_signal_line(run, training), flush=True)
        if cluster:
            _leave_cluster(run.strategy, run.chief, preemption.EXIT_STATUS[state.signal])
        raise SystemExit(preemption.EXIT_STATUS[state.signal])


def _report(run, training):
    """Prints how the run ended and returns it as a TrainResult (a cluster's process ends)."""
    state, progress = training.state, training.progress
    total_flops = _estimate_flops(run.model_config, run.tokenizer.vocab_size, progress)
    elapsed = time.monotonic() - training.start
    print(f"stopped at step {state.step} ({state.stopped_because}) after {elapsed / 60:.1f} min "
          f"({(training.already_trained + elapsed) / 60:.1f} min of training in total); "
          f"{progress.total_target_tokens:,.0f} target tokens this run; estimated training cost "
          f"{total_flops:.3g} FLOPs; last checkpoint {state.last_checkpoint}", flush=True)
    if run.cluster:
        _leave_cluster(run.strategy, run.chief, 0)
    regularisation = training.regularisation
    return TrainResult(step=state.step, stopped_because=state.stopped_because,
                       last_checkpoint=state.last_checkpoint, best_metrics=state.best_metrics,
                       total_flops=total_flops, last_train_metrics=state.last_train_metrics,
                       regularisation=regularisation[0].chosen if regularisation else None)


def _end_of_run_barrier(strategy, stopping_anyway=False):
    """Returns when every worker of the cluster has reached it; raises when one is gone
    (ignored when this worker stops on a signal anyway: everything is written).

    Each worker posts a key in the coordination service's key-value store and reads the
    others', a second at a time: TensorFlow's own barrier (wait_at_barrier) holds Python's GIL
    for as long as it waits, hours for the chief's last evaluation, so no signal handler could
    run meanwhile. Between reads the signal handlers run (Signals.waiting), and every few
    seconds the peers are checked (preemption.gone_peer). Not an all-reduce: a collective here
    could pair with one the chief alone runs meanwhile (its dev evaluation saving the best
    weights reads variables across workers) and let the other workers leave early.
    """
    from tensorflow.python.eager import context

    ctx = context.context()
    own = strategy_lib.own_task(strategy)
    spec = strategy.cluster_resolver.cluster_spec().as_dict()
    others = [(job, index) for job in ("chief", "worker")
              for index in range(len(spec.get(job, []))) if (job, index) != own]
    deadline = time.monotonic() + BARRIER_MS / 1000
    try:
        ctx.set_config_key_value(f"t2t_lite_end_of_run/{own[0]}/{own[1]}", "1")
        for job, index in others:
            reads = 0
            while True:
                try:
                    ctx.get_config_key_value(f"t2t_lite_end_of_run/{job}/{index}",
                                             timeout_in_ms=1000)
                    break
                except tf.errors.DeadlineExceededError:
                    reads += 1
                    if time.monotonic() > deadline:
                        raise preemption.WorkerGone(
                            preemption.describe(job, index),
                            f"it did not reach the end of the run within "
                            f"{BARRIER_MS / 3600000:g} h") from None
                    if reads % 5 == 0:
                        gone = preemption.gone_peer(own)
                        if gone:
                            raise preemption.WorkerGone(
                                gone, "the end-of-run barrier: no longer answering") from None
    except (preemption.WorkerGone, *preemption.LOST_WORKER_ERRORS):
        if not stopping_anyway:
            raise


# How long the other workers wait for the chief's last dev evaluation at the end of a run (a
# worker lost meanwhile is found within seconds).
BARRIER_MS = 6 * 3600 * 1000


def _leave_cluster(strategy, chief, status):
    """Ends the process of a cluster run, without the coordination service's "The tasks have
    crashed": the service (on the chief) reports a task whose heartbeats stopped while the
    chief still runs, and a task reports the service gone while it still runs. TensorFlow's own
    teardown makes both likely: the chief's waits out the heartbeat timeout (10 s) for the
    others to shut down their agents, which Python's exit never does. So every worker leaves
    with os._exit once everything is written (preemption.leave_now, which releases the
    model_dir lock first): the others at once, the chief once their ports are closed."""
    sys.stdout.flush()
    sys.stderr.flush()
    if chief:
        preemption.wait_until_gone(strategy_lib.own_task(strategy))
    preemption.leave_now(status)


def _signal_line(run, training, signum=None):
    """One line saying what was saved and how to resume (`signum`: the signal, if not the one
    the run stopped on)."""
    state, model_dir = training.state, run.options.model_dir
    name = preemption.signal_name(signum or state.signal)
    if signum is None and (state.stopping.signal_elsewhere if run.cluster else False):
        name += " on another worker"
    if state.last_checkpoint and state.step > 0:
        # A worker's own copy is not the one to resume from: the chief's in model_dir is.
        path = os.path.join(model_dir, os.path.basename(state.last_checkpoint))
        saved = (f"saved {path} at step {state.step} (learning rate "
                 f"{float(training.parts.schedule(state.step)):.6g}; the budget plan, training "
                 f"time and dev history are kept in {model_dir})")
    else:
        saved = "nothing to save"
    again = "every worker's command" if run.cluster else "the same command"
    return f"{name}: {saved}; re-run {again} to resume"


@dataclasses.dataclass
class _Parts:
    """What training builds under the strategy's scope, and the checkpoint holding it."""
    model: keras.Model
    optimizer: keras.optimizers.Optimizer
    schedule: keras.optimizers.schedules.LearningRateSchedule
    trained_seconds: tf.Variable
    plan_variables: Optional[tuple]  # (warmup, total) of a budgeted run's schedule
    checkpoint: tf.train.Checkpoint
    # (anchor step, anchor fraction, keep) of a budgeted run's schedule (BudgetPlanner): keep()
    # adds them to the checkpoint once a resumed decay sets them.
    anchor: Optional[tuple] = None


def _build(strategy, model_config, train_config, vocab_size, train_steps, model_dir):
    with strategy.scope():
        if train_config.budget_schedule and train_config.budget_dropout:
            # Built with the highest rate the plan may choose (a dropout layer makes its random
            # state at construction), then trained at the set's rate until the plan chooses.
            highest = max(model_config.dropout,
                          *(rate for _, rate in train_config.budget_dropout))
            model = models.build(dataclasses.replace(model_config, dropout=highest), vocab_size)
            if not hasattr(model, "set_dropout"):
                raise UserError(f"TrainConfig.budget_dropout: model {model_config.model!r} "
                                "cannot change its dropout")
            model.set_dropout(model_config.dropout)
        else:
            model = models.build(model_config, vocab_size)
        plan_variables = None
        if train_config.budget_schedule:
            # The schedule hangs on two variables the plan sets once the step rate is
            # measured; until then, a provisional plan over the step cap.
            plan_variables = (
                tf.Variable(max(1, round(train_config.budget_warmup_fraction * train_steps)),
                            dtype=tf.int64, trainable=False, name="plan_warmup"),
                tf.Variable(train_steps, dtype=tf.int64, trainable=False, name="plan_total"))
        anchor = ()
        if train_config.budget_schedule:
            # Where a run resumed inside its decay goes on from (BudgetSchedule); 0: nowhere.
            anchor = (tf.Variable(0, dtype=tf.int64, trainable=False, name="plan_anchor_step"),
                      tf.Variable(1.0, dtype=tf.float32, trainable=False,
                                  name="plan_anchor_fraction"))
        schedule = make_schedule(model_config, train_config,
                                 (*plan_variables, *anchor) if plan_variables else None)
        optimizer = optimizer_with(schedule, train_config)
        optimizer.build(model.trainable_variables)
        # Training seconds so far, across restarts: --train_minutes is a budget for the whole
        # run (as fairseq's --stop-time-hours), so a resumed run only trains what is left.
        trained_seconds = tf.Variable(0.0, dtype=tf.float64, trainable=False,
                                      name="trained_seconds")
        plan = ({"plan_warmup": plan_variables[0], "plan_total": plan_variables[1]}
                if plan_variables else {})
        checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer,
                                         trained_seconds=trained_seconds, **plan)

    def keep_anchor():
        checkpoint.plan_anchor_step, checkpoint.plan_anchor_fraction = anchor

    # A checkpoint from before the anchor (or of a run never resumed inside its decay) has
    # none: the anchor joins the checkpoint only where one holds it or once it is set, so that
    # every checkpoint restores.
    if anchor and _has_anchor(model_dir):
        keep_anchor()
    return _Parts(model, optimizer, schedule, trained_seconds, plan_variables, checkpoint,
                  (*anchor, keep_anchor) if anchor else None)


def _has_anchor(model_dir):
    """Whether the latest checkpoint in model_dir holds a budget schedule's anchor."""
    paths = checkpoint_paths(model_dir) if os.path.isdir(model_dir) else []
    return bool(paths) and any(name.startswith("plan_anchor_step/")
                               for name, _ in tf.train.list_variables(paths[-1]))


def _subword_sampling(train_config):
    """The training pipeline's sampling rate: None (the stored segmentation), or a variable the
    pipeline reads as it runs (so a plan can change it)."""
    if not (train_config.subword_sampling or train_config.budget_subword_sampling):
        return None
    return tf.Variable(train_config.subword_sampling, trainable=False, dtype=tf.float32,
                       name="subword_sampling")


def _planner(run, parts, plan_variables):
    """The budget planner's hook, for a budgeted run; it writes its plan to `plan_variables`."""
    if not parts.plan_variables:
        return []
    config = run.train_config
    peak = peak_learning_rate(make_schedule(run.model_config, config), config)
    return [BudgetPlanner(config, config.train_steps, *plan_variables, peak,
                          log_every=config.log_every, eval_batches=config.eval_batches,
                          bleu_sentences=config.bleu_sentences, anchor=parts.anchor)]


def _regularisation_plan(run, model, steps, sampling, planned):
    """The hook fitting dropout, label smoothing and subword sampling to the planned passes, for
    a budgeted run with a rule for any of them."""
    def set_dropout(rate):
        model.set_dropout(rate)
        steps.retrace()

    def set_label_smoothing(eps):
        steps.label_smoothing = eps
        steps.retrace()

    config = run.train_config
    # (name, TrainConfig rule, rate until the plan decides, how to change it). Sampling needs no
    # retrace: the pipeline reads its variable as it runs (batches already prefetched keep the
    # old segmentation).
    candidates = [
        ("dropout", "budget_dropout", run.model_config.dropout, set_dropout),
        ("label smoothing", "budget_label_smoothing", config.label_smoothing,
         set_label_smoothing),
        ("subword sampling", "budget_subword_sampling", config.subword_sampling,
         lambda rate: sampling.assign(rate)),
    ]
    regularisers = [Regulariser(name, setting, getattr(config, setting), current, apply)
                    for name, setting, current, apply in candidates
                    if getattr(config, setting)]
    if not (planned and regularisers):
        return []
    return [RegularisationPlan(regularisers, train_examples(run.problem, run.options.data_dir),
                               measure_after=RATE_SKIP_STEPS + RATE_STEPS)]


def _evaluation(run, model):
    """The chief's dev evaluation and summaries hooks. Evaluation follows the budget plan in a
    budgeted run, else --eval_every_steps, else each checkpoint save."""
    if not run.chief:
        return []
    config, model_dir = run.train_config, run.options.model_dir
    evaluator = Evaluator(model, run.problem, run.options.data_dir, run.tokenizer,
                          run.model_config, config, run.decode_config,
                          max_batches=config.eval_batches,
                          bleu_sentences=config.bleu_sentences,
                          beam_size=config.eval_beam_size)
    when = "plan" if config.budget_schedule else config.eval_every_steps or "checkpoints"
    return [Evaluation(evaluator, os.path.join(model_dir, "best"), when,
                       early_stopping_evals=config.early_stopping_evals,
                       history_dir=model_dir),
            _Summaries(os.path.join(model_dir, "train"))]


class _Summaries(Summaries):
    """Summaries whose events file is created at the first write, not when the hook is made: a
    run that trains no step (a finished command re-run) leaves no new file in the model_dir."""

    def __init__(self, summary_dir):  # pylint: disable=super-init-not-called
        self._summary_dir, self._writer = summary_dir, None

    @property
    def writer(self):
        if self._writer is None:
            self._writer = tf.summary.create_file_writer(self._summary_dir)
        return self._writer


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
