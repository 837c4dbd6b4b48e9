"""Dropout fitted to the planned passes: the rule, the hook, the model's switch and a real run."""
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.config import ModelConfig, TrainConfig
from t2t_lite.models.transformer import Transformer
from t2t_lite.training import regularisation
from t2t_lite.training.hooks import TrainState

RULE = ((0, 0.0), (4, 0.1), (8, 0.2))


def test_planned_passes_counts_sentence_pairs():
    assert regularisation.planned_passes(1600, 230.0, 35195) == pytest.approx(1600 * 230 / 35195)
    assert regularisation.planned_passes(10, 5.0, 0) == 50.0  # no division by zero


@pytest.mark.parametrize("passes, rate", [(0.5, 0.0), (3.99, 0.0), (4.0, 0.1), (7.9, 0.1),
                                          (8.0, 0.2), (40.0, 0.2)])
def test_the_last_threshold_reached_gives_the_rate(passes, rate):
    assert regularisation.dropout_for(RULE, passes) == rate


def test_the_first_rate_holds_below_the_first_threshold():
    assert regularisation.dropout_for(((2, 0.05), (6, 0.3)), 1.0) == 0.05


def test_budget_dropout_is_validated():
    TrainConfig(budget_dropout=RULE)
    for bad in (((4, 0.1), (0, 0.0)), ((0, 1.0),), ((0,),)):
        with pytest.raises(ValueError, match="budget_dropout"):
            TrainConfig(budget_dropout=bad)


def _state(total_steps, sequences):
    state = TrainState(model=None, optimizer=None, schedule=None, step=0,
                       total_steps=total_steps)
    state.stats = {"sequences": sequences}
    return state


def test_the_hook_decides_once_after_measuring(capsys):
    applied = []
    hook = regularisation.DropoutPlan(RULE, examples=1000, apply=applied.append, current=0.0,
                                      measure_after=3)
    state = _state(total_steps=400, sequences=20.0)  # 400 x 20 / 1000 = 8 passes
    for _ in range(2):
        hook.after_step(state)
    assert applied == [] and capsys.readouterr().out == ""
    hook.after_step(state)
    assert applied == [0.2]
    assert "plan: 8.0 passes over the 1,000 training pairs planned (400 steps x 20 pairs): " \
           "dropout 0.2" in capsys.readouterr().out
    state.total_steps = 10  # a later re-plan does not change it again
    hook.after_step(state)
    assert applied == [0.2]


def test_the_hook_leaves_an_unchanged_rate_alone(capsys):
    applied = []
    hook = regularisation.DropoutPlan(RULE, examples=1000, apply=applied.append, current=0.0,
                                      measure_after=1)
    hook.after_step(_state(total_steps=100, sequences=20.0))  # 2 passes: 0.0, as now
    assert applied == [] and "dropout 0 " in capsys.readouterr().out


def _model(dropout):
    config = ModelConfig(num_layers=2, d_model=16, d_ff=32, num_heads=2, dropout=dropout)
    return Transformer(config, 30)


def test_set_dropout_switches_every_p_drop_layer():
    model = _model(0.4)
    # Inputs and targets, both the embeddings' dropout and each of 2 x 2 + 2 x 3 sub-layers.
    assert len(model.dropout_layers()) == 2 + 2 * 2 + 2 * 3
    batch = {"inputs": tf.constant([[5, 6, 7, 1]]), "targets": tf.constant([[8, 9, 1, 0]])}
    inference = model(batch, training=False).numpy()
    model.set_dropout(0.0)
    np.testing.assert_allclose(model(batch, training=True).numpy(), inference, rtol=1e-5,
                               atol=1e-5)
    model.set_dropout(0.4)
    assert not np.allclose(model(batch, training=True).numpy(), inference, atol=1e-3)


def test_a_model_built_without_dropout_cannot_get_it():
    with pytest.raises(ValueError, match="built without dropout"):
        _model(0.0).set_dropout(0.1)


@pytest.mark.slow
def test_a_budgeted_run_switches_dropout_at_its_plan(tmp_path, capsys):
    """A real tiny run: the plan's passes choose the rate, the step is traced again with it and
    the run goes on; configs.json keeps the rule and reads back."""
    from t2t_lite.data import datagen
    from t2t_lite.model_dir import files
    from t2t_lite.training.trainer import TrainOptions, train

    params = ["max_length=8", "train_samples=300", "eval_samples=50"]
    data_dir, model_dir = str(tmp_path / "data"), str(tmp_path / "model")
    datagen.run("algorithmic_reverse", data_dir, problem_params=params)
    train(TrainOptions(
        problem="algorithmic_reverse", problem_params=params, data_dir=data_dir,
        model_dir=model_dir, hparams_set="tiny", train_steps=30, bleu_sentences=0,
        eval_batches=1, log_every=10,
        gin_params=["TrainConfig.budget_schedule = True", "ModelConfig.dropout = 0.0",
                    "TrainConfig.budget_dropout = ((0, 0.0), (2, 0.3))",
                    "TrainConfig.batch_tokens = 512", "TrainConfig.max_tokens_per_replica = 512"]))
    out = capsys.readouterr().out
    # 300 pairs, 512-token batches of 9-token pairs: 30 steps are many passes.
    line = next(line for line in out.splitlines() if "passes over the 300 training" in line)
    assert line.endswith("dropout 0.3 (TrainConfig.budget_dropout)"), line
    assert "stopped at step 30" in out
    assert files.load_configs(model_dir)[1].budget_dropout == ((0, 0.0), (2, 0.3))


def test_small_cpu_has_no_dropout_up_to_the_passes_measured():
    """The AVX2 machine's 20 minutes plan ~400 steps, 4 passes of the gettext pairs; 1,600 steps
    are 16: the measured rule gives neither dropout."""
    from t2t_lite import hparams

    rule = hparams.load("small_cpu")[1].budget_dropout
    assert regularisation.dropout_for(rule, 400 * 352 / 35195) == 0.0
    assert regularisation.dropout_for(rule, 1600 * 352 / 35195) == 0.0
