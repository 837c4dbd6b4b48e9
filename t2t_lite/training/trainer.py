"""A training run behind t2t-lite-trainer: set up, stepped, reported.

One call, `train(options)`: load the hparams set (or take the configs the caller resolved),
prepare the problem's data and the model_dir, pick a distribution strategy, build the model and
the paper's optimizer, restore the latest checkpoint if any (else, with --warm_start_from, the
parent's model weights: warm_start.py), then step until --train_steps or --train_minutes.
The steps are loop.py's; everything beside the step is a hook (hooks.py; the optional ones built
in run_hooks.py): the budget plan, the divergence guard, the progress line, checkpoints on the
set's timer, dev evaluation with the best checkpoint and early stopping, summaries. What is built
under the strategy's scope is parts.py's; a cluster's lost workers and its end of run are
lost_workers.py's and cluster_end.py's.
"""
import dataclasses
import math
import os
import time
from typing import Any, Optional, Sequence

import keras
import tensorflow as tf
from absl import logging

from t2t_lite import hparams
from t2t_lite.config import TrainConfig
from t2t_lite.errors import UserError
from t2t_lite.model_dir import dev_history
from t2t_lite.model_dir import files as model_dir_files
from t2t_lite.model_dir.checkpoint_reader import checkpoint_paths
from t2t_lite.model_dir.checkpoint_saver import CheckpointKeeper
from t2t_lite.models import params
from t2t_lite.problem_spec import ProblemSpec
from t2t_lite.training import cluster_end, lost_workers, preemption, run_hooks
from t2t_lite.training import parts as parts_lib
from t2t_lite.training import precision as precision_lib
from t2t_lite.training import strategy as strategy_lib
from t2t_lite.training import warm_start as warm_start_lib
from t2t_lite.training.checkpointing import Checkpoints
from t2t_lite.training.divergence import DivergenceGuard
from t2t_lite.training.flops import run_flops
from t2t_lite.training.hooks import TrainState
from t2t_lite.training.loop import loop
from t2t_lite.training.progress import Progress
from t2t_lite.training.regularisation import RegularisationChoice
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
    the run (cluster_end.leave); a worker of the cluster going away ends it with one `error:`
    line naming it, status 1 (lost_workers.py). The caller's Keras dtype policy is back when it
    returns or raises."""
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
    strategy_lib.stop_if_signalled_while_joining(strategy)  # TensorFlow took it in the join
    spec = ProblemSpec.of(options)
    spec.import_modules()  # before gin is read: a user's module may register what it binds
    hparams.check_gin_files(options.gin_files)
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
        except (lost_workers.WorkerGone, *lost_workers.LOST_WORKER_ERRORS) as error:
            if run.cluster:  # a lost worker ends the process here with one `error:` line
                lost_workers.exit_if_lost(error, strategy_lib.own_task(run.strategy),
                                          run.position.current, run.options.model_dir)
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


def _build_and_train(run):
    """Sets the run up (_set_up), steps it (_run_loop) and reports how it ended (_report)."""
    training = _set_up(run)
    _run_loop(run, training)
    return _report(run, training)


@dataclasses.dataclass
class _Training:
    """What _set_up builds for a run, for the loop and the final report."""
    parts: parts_lib.Parts
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
    parts = parts_lib.build(run.strategy, run.model_config, config, run.tokenizer.vocab_size,
                            config.train_steps, run.options.model_dir)
    keeper, restored, step = _restore(run, parts)
    sampling = parts_lib.subword_sampling(config)

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
    planner = run_hooks.planner(run, parts, planned)
    # The order is the hooks' contract: each reads what the ones before it left on the state at
    # this step (TrainState's fields name their writer and readers, hooks.py).
    regularisation = run_hooks.regularisation_plan(run, parts.model, steps, sampling,
                                                   planned=bool(planner))
    hooks = [*planner, *regularisation, guard, progress,
             Checkpoints(keeper, parts.trained_seconds, check=guard.verify),
             *run_hooks.evaluation(run, parts.model)]
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
        cluster_end.end_of_run_barrier(run.strategy, stopping_anyway=bool(state.signal))
    if signals:
        signals.settle()
    if state.signal:
        print(_signal_line(run, training), flush=True)
        if cluster:
            cluster_end.leave(run.strategy, run.chief, preemption.EXIT_STATUS[state.signal])
        raise SystemExit(preemption.EXIT_STATUS[state.signal])


def _report(run, training):
    """Prints how the run ended and returns it as a TrainResult (a cluster's process ends)."""
    state, progress = training.state, training.progress
    total_flops = run_flops(run.model_config, run.tokenizer.vocab_size, progress)
    elapsed = time.monotonic() - training.start
    print(f"stopped at step {state.step} ({state.stopped_because}) after {elapsed / 60:.1f} min "
          f"({(training.already_trained + elapsed) / 60:.1f} min of training in total); "
          f"{progress.total_target_tokens:,.0f} target tokens this run; estimated training cost "
          f"{total_flops:.3g} FLOPs; last checkpoint {state.last_checkpoint}", flush=True)
    if run.cluster:
        cluster_end.leave(run.strategy, run.chief, 0)
    regularisation = training.regularisation
    return TrainResult(step=state.step, stopped_because=state.stopped_because,
                       last_checkpoint=state.last_checkpoint, best_metrics=state.best_metrics,
                       total_flops=total_flops, last_train_metrics=state.last_train_metrics,
                       regularisation=regularisation[0].chosen if regularisation else None)


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


