"""Toy decoders for the decoding tests: no network, no Transformer, fully known distributions."""
import itertools
import types

import numpy as np
import pytest
import tensorflow as tf

PAD, EOS = 0, 1


class TableModel:
    """next-token log probs = table[index, previous id]; a Markov chain with a known optimum.

    `table` is [L, V, V] (row = position, previous token) or [V, V] (position-independent) and
    holds probabilities; rows are normalised here. The cache is unused.
    """

    def __init__(self, table):
        table = np.asarray(table, np.float64)
        table = table / table.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore"):
            self.log_table = np.log(table).astype(np.float32)
        self.vocab_size = table.shape[-1]

    def tokens_to_logits(self, ids, index, cache, static):
        del static
        table = tf.constant(self.log_table)
        if table.shape.rank == 3:
            table = tf.gather(table, tf.minimum(index, table.shape[0] - 1))
        return tf.gather(table, ids), cache

    def sequence_log_prob(self, tokens):
        """Log probability of a generated sequence (without the start token)."""
        total, previous = 0.0, PAD
        for index, token in enumerate(tokens):
            rows = self.log_table if self.log_table.ndim == 2 else self.log_table[
                min(index, len(self.log_table) - 1)]
            total += float(rows[previous, token])
            previous = token
        return total


class RnnModel:
    """A random tanh-RNN language model: its output depends on the whole prefix through the cache.

    cache {"h": [B, D]} must be gathered along beams correctly, and static {"bias": [B, V]} gives
    every example its own distribution, so mixing up examples or beams changes the results. Pad is
    never generated (logit -inf), like in a trained model.
    """

    def __init__(self, vocab_size, hidden=8, seed=0, eos_bias=0.0, sharpness=3.0):
        rng = np.random.default_rng(seed)
        self.vocab_size = vocab_size
        self.hidden = hidden
        self.w = rng.normal(0, 1 / np.sqrt(hidden), (hidden, hidden)).astype(np.float32)
        self.embed = rng.normal(0, 1, (vocab_size, hidden)).astype(np.float32)
        self.out = (sharpness * rng.normal(0, 1 / np.sqrt(hidden), (hidden, vocab_size))).astype(
            np.float32)
        self.eos_bias = eos_bias
        self.rng = rng
        self.calls = 0

    def initial_state(self, batch_size):
        bias = self.rng.normal(0, 1, (batch_size, self.vocab_size)).astype(np.float32)
        bias[:, EOS] += self.eos_bias
        bias[:, PAD] = -np.inf
        cache = {"h": tf.zeros([batch_size, self.hidden])}
        static = {"bias": tf.constant(bias)}
        return cache, static

    def tokens_to_logits(self, ids, index, cache, static):
        del index
        self.calls += 1  # counts steps when run eagerly
        h = tf.tanh(tf.matmul(cache["h"], self.w) + tf.gather(self.embed, ids))
        return tf.matmul(h, self.out) + static["bias"], {"h": h}

    def sequence_log_prob(self, tokens, bias_row):
        """Uncached reference: re-runs the RNN over the prefix in numpy."""
        h, previous, total = np.zeros(self.hidden, np.float64), PAD, 0.0
        for token in tokens:
            h = np.tanh(h @ self.w + self.embed[previous])
            logits = h @ self.out + bias_row
            finite = logits[np.isfinite(logits)]
            log_z = np.log(np.exp(finite - finite.max()).sum()) + finite.max()
            total += logits[token] - log_z
            previous = token
        return total


def gnmt_penalty(length, alpha):
    return ((5.0 + length) / 6.0) ** alpha


def all_sequences(vocab_size, max_length):
    """Every sequence of non-pad, non-EOS tokens followed by EOS, up to max_length tokens."""
    body_tokens = range(2, vocab_size)
    for body_length in range(max_length):
        for body in itertools.product(body_tokens, repeat=body_length):
            yield list(body) + [EOS]


def strip(row):
    """Tokens of a 0-padded row up to and including the first EOS."""
    row = list(np.asarray(row))
    return row[: row.index(EOS) + 1] if EOS in row else row


def assert_ends_with_eos_and_padded(sequences, limits=None):
    """Each row: non-pad tokens, one EOS, then only zeros; length within its limit."""
    sequences = np.asarray(sequences)
    flat = sequences.reshape(-1, sequences.shape[-1])
    for n, row in enumerate(flat):
        eos_positions = np.flatnonzero(row == EOS)
        assert len(eos_positions) >= 1, row
        end = eos_positions[0]
        assert np.all(row[:end] > EOS), row
        assert np.all(row[end + 1:] == PAD), row
        if limits is not None:
            per_row = np.repeat(limits, len(flat) // len(limits))
            assert end + 1 <= per_row[n], (row, per_row[n])


@pytest.fixture
def toys():
    """The helpers above as one namespace (test modules cannot import conftest under importlib)."""
    return types.SimpleNamespace(
        TableModel=TableModel, RnnModel=RnnModel, gnmt_penalty=gnmt_penalty,
        all_sequences=all_sequences, strip=strip,
        assert_ends_with_eos_and_padded=assert_ends_with_eos_and_padded, PAD=PAD, EOS=EOS)
