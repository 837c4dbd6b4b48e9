"""Training: t2t-lite-trainer's one library call, `trainer.train(TrainOptions) -> TrainResult`.

    trainer         a run: configs resolved, model_dir written, set up, stepped, reported
    loop            the step loop: steps until a stop, every hook called around each step
    hooks           what the loop shares with its hooks: TrainState, Decisions, the Hook interface
    parts           what a run builds under the strategy's scope, and the checkpoint holding it
    run_hooks       the hooks a run's settings call for: budget plan, regularisation, evaluation
    steps           the distributed train step, with token-weighted gradient accumulation
    loss            label-smoothed cross-entropy over non-pad target tokens
    schedule        the paper's learning-rate schedule (and tensor2tensor's), Adam as the paper's
    fused_adam      Adam whose per-variable update is TensorFlow's one fused kernel
    precision       the Keras dtype policy a run trains in ("auto": decided for this machine)
    strategy        the tf.distribute strategy: several workers, several GPUs, or the default
    checkpointing   checkpoints as a hook: on the set's timer, where a hook asks, at the end
    evaluation      dev evaluation during training, the best checkpoint, early stopping
    budget          fitting a run to a wall-clock budget (the budget planner)
    regularisation  dropout, label smoothing and subword sampling fitted to the planned passes
    divergence      a run whose loss or weights are no longer finite stopped, the last good kept
    progress        the progress line and TensorBoard summaries, as hooks
    flops           model FLOPs from the layout; a run's training cost
    warm_start      a new model_dir started from a parent model's weights
    preemption      stopping where every worker agrees: signals and the chief's decisions
    lost_workers    which worker of a cluster went away, and the one line that says so
    cluster_end     how a cluster run's workers end together: the barrier, then leaving
"""
