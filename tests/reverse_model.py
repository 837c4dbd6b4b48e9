"""A tiny Transformer trained for a few seconds to reverse symbol strings, written as a
model_dir (the trained_model_dir fixture in tests/conftest.py): its best hypotheses end with their
own EOS, so two beam searches can be compared on it exactly."""
import os

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.data import vocab
from t2t_lite.model_dir import files as model_dir_lib
from t2t_lite.models.transformer import Transformer
from t2t_lite.training.loss import token_statistics

SYMBOLS = 17  # ids 3 .. 19
VOCAB = SYMBOLS + 3
EXTRA = 5
GIN_PARAMS = ["MAX_LENGTH = 24", "ModelConfig.dropout = 0.0", "DecodeConfig.beam_size = 4",
              f"DecodeConfig.extra_length = {EXTRA}"]
TOKENS = ["<pad>", "</s>", "<unk>"] + [f"s{i}" for i in range(SYMBOLS)]


def reverse_batch(rng, size=64, width=10):
    inputs = np.zeros((size, width), np.int32)
    targets = np.zeros((size, width), np.int32)
    for row in range(size):
        length = rng.integers(1, width - 1)
        ids = rng.integers(3, VOCAB, size=length)
        inputs[row, :length], inputs[row, length] = ids, 1
        targets[row, :length], targets[row, length] = ids[::-1], 1
    return inputs, targets


def train(model, steps, seed=0):
    rng = np.random.default_rng(seed)
    optimizer = keras.optimizers.Adam(learning_rate=3e-3)

    @tf.function
    def step(inputs, targets):
        with tf.GradientTape() as tape:
            logits = model({"inputs": inputs, "targets": targets}, training=True)
            stats = token_statistics(logits, targets, label_smoothing=0.0)
            loss = stats["loss"] / stats["tokens"]
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        return loss

    for _ in range(steps):
        loss = step(*reverse_batch(rng))
    return float(loss)


def write_model_dir(directory, steps=200):
    """Trains the model and writes it as a model_dir at `directory` (its symbol vocabulary
    beside it); the final training loss."""
    root = os.path.dirname(directory)
    vocab_path = vocab.write_symbol_vocab(os.path.join(root, "reverse.symbols.txt"), TOKENS[3:])
    configs = hparams.load("tiny", GIN_PARAMS)
    model_dir_lib.write_run_info(directory, "algorithmic_reverse", "tiny", GIN_PARAMS, vocab_path,
                                 VOCAB, configs)
    keras.utils.set_random_seed(1)
    model = Transformer(configs[0], VOCAB)
    loss = train(model, steps=steps)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory, 1).save(steps)
    return loss
