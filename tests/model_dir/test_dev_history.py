"""The dev history a run writes and the averaging window chosen from it."""
import os

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.model_dir import averaging, checkpoint_reader, dev_history


def _paths(steps):
    return [(step, f"/m/ckpt-{step}") for step in steps]


def _losses(pairs):
    return {step: {"loss": loss} for step, loss in pairs}


def test_a_run_still_improving_averages_its_last_checkpoints():
    history = _losses([(100, 3.0), (200, 2.5), (300, 2.2), (380, 2.1)])
    chosen, reason = dev_history.choose_window(_paths([100, 200, 300, 360, 380, 390, 400]),
                                               history, 3)
    assert [s for s, _ in chosen] == [380, 390, 400]
    assert "best dev evaluation (step 380) is among them" in reason


def test_a_best_evaluation_inside_the_window_without_its_own_checkpoint_keeps_the_window():
    # The trainer saves no checkpoint for an evaluation inside the planned averaging window
    # (step 385 here): the run still improved into the window, so the last N are averaged.
    history = _losses([(100, 3.0), (200, 2.5), (300, 2.2), (385, 2.1)])
    chosen, reason = dev_history.choose_window(_paths([100, 200, 300, 380, 390, 400]),
                                               history, 3)
    assert [s for s, _ in chosen] == [380, 390, 400]
    assert "best dev evaluation (step 385) is among them" in reason


def test_a_run_that_stopped_improving_averages_at_its_best():
    # Dev loss best at 800, near it (within 1%) at 640 and 960; worse after.
    history = _losses([(160, 4.0), (320, 2.5), (480, 2.0), (640, 1.905), (800, 1.90),
                       (960, 1.915), (1120, 1.95), (1280, 2.0)])
    steps = [160, 320, 480, 640, 800, 960, 1120, 1280, 1520, 1540, 1560, 1580, 1600]
    chosen, reason = dev_history.choose_window(_paths(steps), history, 5)
    assert [s for s, _ in chosen] == [640, 800, 960]
    assert reason.startswith("dev stopped improving: best at step 800 (loss 1.9000), "
                             "loss 2.0000 at step 1280; the 3 evaluated checkpoints within 1% "
                             "loss of the best")


def test_the_window_stops_at_num_last_nearest_first():
    history = _losses([(100, 1.0), (200, 1.0), (300, 0.999), (400, 1.0), (500, 1.0),
                       (600, 2.0)])
    chosen, _ = dev_history.choose_window(_paths([100, 200, 300, 400, 500, 600, 700]),
                                          history, 3)
    assert [s for s, _ in chosen] == [200, 300, 400]


def test_bleu_decides_where_it_was_measured():
    history = {100: {"loss": 2.0, "bleu": 20.0}, 200: {"loss": 1.9, "bleu": 25.0},
               300: {"loss": 2.1, "bleu": 24.8}, 400: {"loss": 2.2, "bleu": 22.0}}
    chosen, reason = dev_history.choose_window(_paths([100, 200, 300, 400, 410]), history, 2)
    assert [s for s, _ in chosen] == [200, 300] and "0.5 bleu" in reason


def test_without_an_evaluated_checkpoint_the_last_ones_are_averaged():
    chosen, reason = dev_history.choose_window(_paths([10, 20, 30]), _losses([(5, 1.0)]), 2)
    assert [s for s, _ in chosen] == [20, 30] and "no dev evaluation" in reason


def test_the_history_file_survives_a_cut_line(tmp_path):
    dev_history.append(str(tmp_path), 10, {"loss": 2.0, "perplexity": 7.4, "step": 99})
    dev_history.append(str(tmp_path), 20, {"loss": 1.5})
    with open(tmp_path / dev_history.HISTORY, "a") as f:
        f.write('{"step": 30, "lo')  # a killed run's last write
    assert dev_history.read(str(tmp_path)) == {10: {"loss": 2.0, "perplexity": 7.4},
                                               20: {"loss": 1.5}}
    dev_history.reset(str(tmp_path))
    assert dev_history.read(str(tmp_path)) == {}


@pytest.mark.slow
def test_the_averager_follows_the_dev_history(model_dir, tmp_path, cli):
    """A trained model_dir with extra checkpoints and a dev history whose best lies before the
    last ones: `--window=dev` averages the evaluated checkpoints at the best, numbers the
    average like the newest checkpoint (so it is what gets loaded) and says why."""
    import shutil

    from t2t_lite.model_dir import loaded

    copy = str(tmp_path / "model")
    shutil.copytree(model_dir, copy)
    for name in os.listdir(copy):
        if name == "averaged":
            shutil.rmtree(os.path.join(copy, name))
    run = loaded.load(copy)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=run.model), copy,
                                         max_to_keep=20)
    weights = {}
    for number in (1001, 1002, 1003, 1004):
        for w in run.model.weights:
            w.assign(w + 0.01)
        weights[number] = [np.asarray(w) for w in run.model.weights]
        manager.save(checkpoint_number=number)
    for step, loss in ((1001, 2.0), (1002, 1.99), (1003, 2.5)):
        dev_history.append(copy, step, {"loss": loss})
    out = cli("avg_checkpoints", f"--model_dir={copy}", "--num_last=2",
              "--window=dev")
    assert out.returncode == 0, out.stderr.decode()
    first_line = out.stdout.decode().strip()
    assert "(ckpt-1001, ckpt-1002; dev stopped improving: best at step 1002" in first_line
    averaged = loaded.load(copy)
    assert averaged.checkpoint.endswith("averaged/ckpt-1004")
    for got, a, b in zip(averaged.model.weights, weights[1001], weights[1002]):
        np.testing.assert_allclose(np.asarray(got), (a + b) / 2, rtol=1e-5, atol=1e-6)
    # The paper's window: the newest two.
    out = cli("avg_checkpoints", f"--model_dir={copy}", "--num_last=2",
              "--window=last")
    assert "(ckpt-1003, ckpt-1004; the last 2)" in out.stdout.decode()
    assert checkpoint_reader.resolve_checkpoint(copy).endswith("averaged/ckpt-1004")
    # The tool prints the library call's message; the call also says what it wrote and from what.
    result = averaging.average(copy, num_last=2, window="dev")
    assert result.message == first_line
    assert [os.path.basename(p) for p in result.checkpoints] == ["ckpt-1001", "ckpt-1002"]
    assert result.path == checkpoint_reader.resolve_checkpoint(copy)
