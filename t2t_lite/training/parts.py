"""What a run builds under the strategy's scope: the model, the paper's optimizer and its
schedule (with a budget plan's variables), the training seconds so far, and the checkpoint that
holds them; and the training pipeline's subword-sampling rate."""
import dataclasses
import os
from typing import Optional

import keras
import tensorflow as tf

from t2t_lite import models
from t2t_lite.errors import UserError
from t2t_lite.model_dir.checkpoint_reader import checkpoint_paths
from t2t_lite.training.schedule import make_schedule, optimizer_with


@dataclasses.dataclass
class Parts:
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


def build(strategy, model_config, train_config, vocab_size, train_steps, model_dir):
    """The model (at the highest dropout a budget plan may choose), the optimizer and its schedule
    (over a budget plan's variables, provisionally `train_steps`), the training-time counter and
    the checkpoint holding them, built under `strategy`'s scope."""
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
    if anchor and has_anchor(model_dir):
        keep_anchor()
    return Parts(model, optimizer, schedule, trained_seconds, plan_variables, checkpoint,
                  (*anchor, keep_anchor) if anchor else None)


def has_anchor(model_dir):
    """Whether the latest checkpoint in model_dir holds a budget schedule's anchor."""
    paths = checkpoint_paths(model_dir) if os.path.isdir(model_dir) else []
    return bool(paths) and any(name.startswith("plan_anchor_step/")
                               for name, _ in tf.train.list_variables(paths[-1]))


def subword_sampling(train_config):
    """The training pipeline's sampling rate: None (the stored segmentation), or a variable the
    pipeline reads as it runs (so a plan can change it)."""
    if not (train_config.subword_sampling or train_config.budget_subword_sampling):
        return None
    return tf.Variable(train_config.subword_sampling, trainable=False, dtype=tf.float32,
                       name="subword_sampling")
