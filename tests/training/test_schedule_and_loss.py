"""The paper's learning-rate formula and label-smoothed cross-entropy, by hand."""
import math

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.training.loss import token_statistics
from t2t_lite.training.schedule import PaperSchedule, T2TSchedule, make_schedule, optimizer_with


@pytest.mark.parametrize("step", [1, 2, 100, 3999, 4000, 4001, 10000, 100000])
def test_paper_schedule_equals_formula(step):
    schedule = PaperSchedule(d_model=512, warmup_steps=4000)
    expected = 512 ** -0.5 * min(step ** -0.5, step * 4000 ** -1.5)
    # Keras passes the 0-based iteration count; the paper's step is 1-based.
    assert math.isclose(float(schedule(step - 1)), expected, rel_tol=1e-5)


def test_paper_schedule_peaks_at_warmup():
    schedule = PaperSchedule(d_model=512, warmup_steps=4000)
    values = [float(schedule(s)) for s in range(3990, 4010)]
    assert int(np.argmax(values)) + 3990 == 3999  # step 4000, 1-based
    assert math.isclose(max(values), 512 ** -0.5 * 4000 ** -0.5, rel_tol=1e-5)


def test_t2t_schedule_formula():
    schedule = T2TSchedule(d_model=512, warmup_steps=8000, scale=2.0)
    for step in (1, 8000, 20000):
        expected = 2.0 * 512 ** -0.5 * min(step / 8000, 1.0) * max(step, 8000) ** -0.5
        assert math.isclose(float(schedule(step - 1)), expected, rel_tol=1e-5)


def test_optimizer_is_the_papers_adam():
    model_config, train_config, _ = hparams.load("base")
    optimizer = optimizer_with(make_schedule(model_config, train_config), train_config)
    assert (optimizer.beta_1, optimizer.beta_2, optimizer.epsilon) == (0.9, 0.98, 1e-9)


def test_label_smoothed_loss_by_hand():
    logits = np.array([[[2.0, 0.5, -1.0, 0.0], [0.1, 0.2, 0.3, 0.4]]], dtype="float32")
    targets = np.array([[2, 0]], dtype="int32")  # second position is padding
    eps = 0.1
    stats = token_statistics(logits, targets, eps)
    row = logits[0, 0].astype(np.float64)
    log_probs = row - math.log(sum(math.exp(v) for v in row))
    # Szegedy et al.: q = (1 - eps) * onehot + eps / V
    q = np.full(4, eps / 4)
    q[2] += 1 - eps
    expected_loss = -(q * log_probs).sum()
    assert math.isclose(float(stats["loss"]), expected_loss, rel_tol=1e-5)
    assert math.isclose(float(stats["nll"]), -log_probs[2], rel_tol=1e-5)
    assert float(stats["tokens"]) == 1.0
    assert float(stats["correct"]) == 0.0  # argmax is 0, the target 2


def test_without_smoothing_loss_is_keras_crossentropy():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 5, 7)).astype("float32")
    targets = rng.integers(1, 7, size=(2, 5)).astype("int32")
    stats = token_statistics(logits, targets, 0.0)
    reference = tf.keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
    assert math.isclose(float(stats["loss"]), float(tf.reduce_sum(reference)), rel_tol=1e-5)
