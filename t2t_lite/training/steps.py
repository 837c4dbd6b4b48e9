"""Distributed training steps with exact token-weighted gradient accumulation.

The loss of a global step is the smoothed cross-entropy summed over every non-pad target token
of every micro-batch on every replica, divided by that global token count. Each replica sums its
micro-batches' gradients of the *summed* loss in replica-local accumulators; at the last
micro-batch the replicas all-reduce their token counts, divide, and the optimizer's own all-reduce
(a sum) completes the global gradient. So 2 replicas x k micro-batches give exactly the update of
one batch holding all of them.
"""
import tensorflow as tf

from t2t_lite.training.loss import batch_statistics
from t2t_lite.training.regularisation import RULES

STAT_NAMES = ("loss", "nll", "correct", "tokens", "source_tokens", "sequences")
# The final step's sums of the workers' votes (preemption.py): signalled workers, the chief's
# reason to stop, the chief's budget plan (warmup, total steps) for every worker to apply, and
# the chief's decisions for the step (hooks.Decisions): save, evaluate, the averaging window's
# first step, and the regularisation plan's passes and rates (index + 1 in each rule, 0: none).
DECISION_NAMES = ("save", "evaluate", "averaging_from", "passes",
                  *(f"rate_{rule}" for rule in RULES))
VOTE_NAMES = ("stop_sigterm", "stop_sigint", "stop_chief", "plan_warmup", "plan_total",
              *DECISION_NAMES)


class TrainSteps:
    """Builds `micro_step(batch)` (accumulate only) and `final_step(batch)` (accumulate + apply);
    `train_step(iterator)` is one optimizer step of both.

    Both take a distributed batch and return summed statistics of that micro-batch; final_step
    also returns the gradient norm of the applied update.
    """

    def __init__(self, strategy, model, optimizer, label_smoothing, accumulate_steps,
                 element_spec=None, jit_compile=False):
        self.strategy, self.model, self.optimizer = strategy, model, optimizer
        self.label_smoothing = label_smoothing
        self.accumulate_steps = accumulate_steps
        self.loss_scaling = hasattr(optimizer, "scale_loss") and hasattr(optimizer,
                                                                          "inner_optimizer")
        variables = model.trainable_variables
        self.accumulators = []
        if accumulate_steps > 1:
            with strategy.scope():
                self.accumulators = [
                    tf.Variable(tf.zeros(v.shape, v.dtype), trainable=False,
                                synchronization=tf.VariableSynchronization.ON_READ,
                                aggregation=tf.VariableAggregation.SUM,
                                name=f"grad_accumulator_{i}") for i, v in enumerate(variables)]
                self.accumulated_tokens = tf.Variable(
                    0.0, trainable=False, synchronization=tf.VariableSynchronization.ON_READ,
                    aggregation=tf.VariableAggregation.SUM, name="accumulated_tokens")
        # This worker's stop votes, divided by its replicas (each of them adds them in): a
        # plain local variable the final step reads, set from Python only when it changes.
        self._local_replicas = max(1, strategy.num_replicas_in_sync // _workers(strategy))
        self.votes = tf.Variable(tf.zeros([len(VOTE_NAMES)]), trainable=False,
                                 name="stop_votes")
        self._voted = (0.0,) * len(VOTE_NAMES)
        self.signature = None if element_spec is None else [element_spec]
        self.jit_compile = jit_compile
        self.retrace()

    def vote(self, *values):
        """This worker's stop votes, carried by the next final step (VOTE_NAMES' order)."""
        values = tuple(float(v) for v in values)
        if values != self._voted:
            self.votes.assign([v / self._local_replicas for v in values])
            self._voted = values

    def retrace(self):
        """New step functions, traced again at their next call: a traced step keeps the Python
        values it read (a dropout rate the budget plan changed)."""
        signature = self.signature
        self.micro_step = tf.function(self._distributed_micro, input_signature=signature,
                                      reduce_retracing=signature is None, autograph=False)
        self.final_step = tf.function(self._distributed_final, input_signature=signature,
                                      reduce_retracing=signature is None, autograph=False)
        self._gradients_fn = (tf.function(self._gradients, jit_compile=True, autograph=False)
                              if self.jit_compile else self._gradients)

    def train_step(self, iterator):
        """One optimizer step over `accumulate_steps` micro-batches from a distributed iterator;
        returns their token statistics summed, as floats, and the applied update's grad_norm."""
        per_micro_batch = [self.micro_step(next(iterator))
                           for _ in range(self.accumulate_steps - 1)]
        per_micro_batch.append(self.final_step(next(iterator)))
        total = {key: float(value) for key, value in per_micro_batch[-1].items()}
        for stats in per_micro_batch[:-1]:
            for key, value in stats.items():
                total[key] += float(value)
        return total

    # --- replica functions ---------------------------------------------------------------------
    def _gradients(self, batch, scale=None):
        with tf.GradientTape() as tape:
            stats = batch_statistics(self.model, batch, True, self.label_smoothing,
                                     packed=not self.jit_compile)
            loss = stats["loss"]
            if scale is not None:
                loss = loss * scale
            if self.loss_scaling:
                loss = self.optimizer.scale_loss(loss)
        grads = tape.gradient(loss, self.model.trainable_variables)
        stats["source_tokens"] = tf.reduce_sum(tf.cast(batch["inputs"] != 0, tf.float32))
        # Sentence pairs in the batch: how a budgeted run counts its passes over the data.
        stats["sequences"] = tf.reduce_sum(
            tf.cast(tf.reduce_any(batch["targets"] != 0, axis=1), tf.float32))
        return grads, stats

    def _replica_micro(self, batch):
        grads, stats = self._gradients_fn(batch)
        for accumulator, grad in zip(self.accumulators, grads):
            accumulator.assign_add(tf.convert_to_tensor(grad))
        self.accumulated_tokens.assign_add(stats["tokens"])
        return stats

    def _replica_final(self, batch):
        context = tf.distribute.get_replica_context()
        if self.accumulators:
            grads, stats = self._gradients_fn(batch)
            grads = [a + tf.convert_to_tensor(g) for a, g in zip(self.accumulators, grads)]
            tokens = stats["tokens"] + self.accumulated_tokens
            global_tokens = tf.maximum(context.all_reduce(tf.distribute.ReduceOp.SUM, tokens),
                                       1.0)
            grads = [tf.convert_to_tensor(g) / global_tokens for g in grads]
        else:
            # Without accumulation the global token count is known before the forward pass:
            # dividing the loss by it spares one pass over every gradient.
            tokens = tf.reduce_sum(tf.cast(tf.not_equal(batch["targets"], 0), tf.float32))
            global_tokens = tf.maximum(context.all_reduce(tf.distribute.ReduceOp.SUM, tokens),
                                       1.0)
            grads, stats = self._gradients_fn(batch, 1.0 / global_tokens)
            grads = [tf.convert_to_tensor(g) for g in grads]
        # One L2Loss (sum of squares / 2) per gradient: a single pass, no squared copy. Under
        # float16 loss scaling the gradients are scaled; report the true norm.
        local_norm_squared = 2.0 * tf.add_n([tf.nn.l2_loss(tf.cast(g, tf.float32))
                                             for g in grads])
        if self.loss_scaling:
            local_norm_squared /= tf.square(tf.cast(self.optimizer.dynamic_scale, tf.float32))
        # The optimizer sums gradients over replicas, completing the global average.
        self.optimizer.apply_gradients(zip(grads, self.model.trainable_variables))
        for accumulator in self.accumulators:
            accumulator.assign(tf.zeros_like(accumulator))
        if self.accumulators:
            self.accumulated_tokens.assign(0.0)
        stats["grad_norm_squared"] = local_norm_squared
        for index, name in enumerate(VOTE_NAMES):
            stats[name] = self.votes[index]
        return stats

    # --- cross-replica wrappers ----------------------------------------------------------------
    def _run_reduced(self, replica_fn, batch):
        """replica_fn's statistics summed over all replicas, in one all-reduce of one vector
        (one per statistic would cost a collective each)."""
        keys = []

        def packed(replica_batch):
            stats = replica_fn(replica_batch)
            keys[:] = list(stats)
            return tf.stack([tf.cast(stats[key], tf.float32) for key in keys])

        total = self.strategy.reduce(tf.distribute.ReduceOp.SUM,
                                     self.strategy.run(packed, args=(batch,)), axis=None)
        return {key: total[index] for index, key in enumerate(keys)}

    def _distributed_micro(self, batch):
        return self._run_reduced(self._replica_micro, batch)

    def _distributed_final(self, batch):
        stats = self._run_reduced(self._replica_final, batch)
        # With one replica this is the exact global norm; with several, the root-sum-square of
        # each replica's share (the exact norm would cost another all-reduce of every gradient).
        stats["grad_norm"] = tf.sqrt(stats.pop("grad_norm_squared"))
        return stats


def _workers(strategy):
    resolver = getattr(strategy, "cluster_resolver", None)
    spec = resolver.cluster_spec().as_dict() if resolver is not None else {}
    return max(1, sum(len(tasks) for job, tasks in spec.items() if job in ("chief", "worker")))
