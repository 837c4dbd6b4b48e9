"""Run as a script: one training step three ways on the same global batch, printed as JSON.

1. one device, the whole batch;
2. MirroredStrategy over 2 logical CPU devices, half the batch each;
3. one device, gradient accumulation over 2 micro-batches (the same halves).
It must run in its own process: logical devices are fixed before TensorFlow starts.
"""
import json
import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

from t2t_lite import hparams  # noqa: E402
from t2t_lite.models.transformer import Transformer  # noqa: E402
from t2t_lite.training.steps import TrainSteps  # noqa: E402

VOCAB = 30


def batches():
    rng = np.random.default_rng(0)
    halves = []
    for rows, width in ((3, 9), (2, 7)):  # unequal token counts: weighting must be by tokens
        inputs = rng.integers(2, VOCAB, size=(rows, width)).astype("int32")
        targets = rng.integers(2, VOCAB, size=(rows, width)).astype("int32")
        inputs[:, -1], targets[:, -1] = 1, 1
        targets[0, width // 2:] = 0
        halves.append({"inputs": inputs, "targets": targets})
    width = 9
    pad = lambda a: np.pad(a, [[0, 0], [0, width - a.shape[1]]])
    whole = {k: np.concatenate([pad(h[k]) for h in halves]) for k in ("inputs", "targets")}
    return whole, halves


def run(strategy, feed, accumulate):
    model_config, train_config, _ = hparams.load("tiny", ["ModelConfig.dropout = 0.0"])
    with strategy.scope():
        keras.utils.set_random_seed(3)
        model = Transformer(model_config, VOCAB)
        # Plain SGD at rate 1 makes the weight change equal the gradient, so the comparison
        # is as sharp as possible (Adam's first step is ~lr * sign(g), hiding differences).
        optimizer = keras.optimizers.SGD(learning_rate=1.0)
        optimizer.build(model.trainable_variables)
    steps = TrainSteps(strategy, model, optimizer, train_config.label_smoothing, accumulate)
    totals = {}
    for i, batch in enumerate(feed):
        fn = steps.final_step if i == len(feed) - 1 else steps.micro_step
        for key, value in fn(batch).items():
            totals[key] = totals.get(key, 0.0) + float(value)
    weights = np.concatenate([np.asarray(w).ravel() for w in model.trainable_variables])
    return totals["loss"] / totals["tokens"], weights, totals["tokens"]


def main():
    whole, halves = batches()
    default = tf.distribute.get_strategy()
    loss_one, weights_one, tokens_one = run(default, [whole], 1)

    mirrored = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    per_replica = mirrored.experimental_distribute_values_from_function(
        lambda context: halves[context.replica_id_in_sync_group])
    loss_two, weights_two, tokens_two = run(mirrored, [per_replica], 1)

    loss_acc, weights_acc, tokens_acc = run(default, halves, 2)
    json.dump({
        "replicas": mirrored.num_replicas_in_sync,
        "tokens": [tokens_one, tokens_two, tokens_acc],
        "loss": [loss_one, loss_two, loss_acc],
        "weight_change": float(np.abs(weights_one - run_initial()).max()),
        "mean_weight_change": float(np.abs(weights_one - run_initial()).mean()),
        "mirrored_max_diff": float(np.abs(weights_one - weights_two).max()),
        "accumulated_max_diff": float(np.abs(weights_one - weights_acc).max()),
    }, sys.stdout)


def run_initial():
    model_config, _, _ = hparams.load("tiny", ["ModelConfig.dropout = 0.0"])
    keras.utils.set_random_seed(3)
    model = Transformer(model_config, VOCAB)
    return np.concatenate([np.asarray(w).ravel() for w in model.trainable_variables])


if __name__ == "__main__":
    main()
