"""Regularisation fitted to the planned passes: the rule, the hook, the model's dropout switch
and real runs."""
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
    assert regularisation.rate_for(RULE, passes) == rate


def test_the_first_rate_holds_below_the_first_threshold():
    assert regularisation.rate_for(((2, 0.05), (6, 0.3)), 1.0) == 0.05


@pytest.mark.parametrize("setting", ["budget_dropout", "budget_label_smoothing",
                                     "budget_subword_sampling"])
def test_the_rules_are_validated(setting):
    TrainConfig(**{setting: RULE})
    for bad in (((4, 0.1), (0, 0.0)), ((0, 1.0),), ((0,),)):
        with pytest.raises(ValueError, match=setting):
            TrainConfig(**{setting: bad})
    with pytest.raises(ValueError, match="subword_sampling must be in"):
        TrainConfig(subword_sampling=1.0)


def _state(total_steps, sequences):
    state = TrainState(model=None, optimizer=None, schedule=None, step=0,
                       total_steps=total_steps)
    state.stats = {"sequences": sequences}
    return state


def _dropout(applied, rule=RULE):
    return regularisation.Regulariser("dropout", "budget_dropout", rule, 0.0, applied.append)


def test_the_hook_decides_once_after_measuring(capsys):
    dropout, sampling = [], []
    hook = regularisation.RegularisationPlan(
        [_dropout(dropout), regularisation.Regulariser(
            "subword sampling", "budget_subword_sampling", ((0, 0.0), (6, 0.1)), 0.0,
            sampling.append)], examples=1000, measure_after=3)
    state = _state(total_steps=400, sequences=20.0)  # 400 x 20 / 1000 = 8 passes
    for _ in range(2):
        hook.after_step(state)
    assert dropout == sampling == [] and capsys.readouterr().out == ""
    hook.after_step(state)
    assert dropout == [0.2] and sampling == [0.1]
    assert hook.chosen == regularisation.RegularisationChoice(
        8.0, {"dropout": 0.2, "subword sampling": 0.1})
    assert capsys.readouterr().out == (
        "plan: 8.0 passes over the 1,000 training pairs planned (400 steps x 20 pairs): "
        "dropout 0.2 (TrainConfig.budget_dropout), "
        "subword sampling 0.1 (TrainConfig.budget_subword_sampling)\n")
    state.total_steps = 10  # a later re-plan does not change it again
    hook.after_step(state)
    assert dropout == [0.2] and sampling == [0.1]


def test_the_hook_leaves_an_unchanged_rate_alone(capsys):
    applied = []
    hook = regularisation.RegularisationPlan([_dropout(applied)], examples=1000, measure_after=1)
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


def _budgeted_tiny_run(tmp_path, problem, params, gin_params):
    """30 steps of `tiny` under a budget plan on 512-token batches; returns the model_dir."""
    from t2t_lite import problems
    from t2t_lite.data import datagen
    from t2t_lite.training.trainer import TrainOptions, train

    data_dir, model_dir = str(tmp_path / "data"), str(tmp_path / "model")
    datagen.run(problems.build(problem, params), data_dir)
    train(TrainOptions(
        problem=problem, problem_params=params, data_dir=data_dir, model_dir=model_dir,
        hparams_set="tiny", train_steps=30, bleu_sentences=0, eval_batches=1, log_every=10,
        gin_params=["TrainConfig.budget_schedule = True", "TrainConfig.batch_tokens = 512",
                    "TrainConfig.max_tokens_per_replica = 512", *gin_params]))
    return model_dir


@pytest.mark.slow
def test_a_budgeted_run_switches_dropout_at_its_plan(tmp_path, capsys):
    """A real tiny run: the plan's passes choose the rate, the step is traced again with it and
    the run goes on; configs.json keeps the rule and reads back."""
    from t2t_lite.model_dir import files

    model_dir = _budgeted_tiny_run(
        tmp_path, "algorithmic_reverse", ["max_length=8", "train_samples=300", "eval_samples=50"],
        ["ModelConfig.dropout = 0.0", "TrainConfig.budget_dropout = ((0, 0.0), (2, 0.3))"])
    out = capsys.readouterr().out
    # 300 pairs, 512-token batches of 9-token pairs: 30 steps are many passes.
    line = next(line for line in out.splitlines() if "passes over the 300 training" in line)
    assert line.endswith("dropout 0.3 (TrainConfig.budget_dropout)"), line
    assert "stopped at step 30" in out
    assert files.load_configs(model_dir)[1].budget_dropout == ((0, 0.0), (2, 0.3))


def test_small_cpu_has_no_dropout_up_to_the_passes_measured():
    """A 20-minute CPU budget plans some 400 steps, 4 passes of the gettext pairs; 1,600 steps
    are 16: the measured rule gives neither dropout."""
    from t2t_lite import hparams

    rule = hparams.load("small_cpu")[1].budget_dropout
    assert regularisation.rate_for(rule, 400 * 352 / 35195) == 0.0
    assert regularisation.rate_for(rule, 1600 * 352 / 35195) == 0.0


@pytest.mark.slow
def test_a_budgeted_run_switches_subword_sampling_at_its_plan(tmp_path, capsys):
    """A real tiny run on a SentencePiece problem: the plan turns sampling on and raises label
    smoothing, and training goes on over the resegmented pipeline."""
    from tests.conftest import sentences

    corpus = tmp_path / "corpus.tsv"
    corpus.write_text("".join(f"{s}\t{s.upper()}\n" for s in sorted(set(sentences(300)))),
                      encoding="utf-8")
    _budgeted_tiny_run(
        tmp_path, "translate_text_files", [f"train={corpus}", "vocab_size=80"],
        ["MAX_LENGTH = 64", "TrainConfig.budget_subword_sampling = ((0, 0.0), (2, 0.3))",
         "TrainConfig.budget_label_smoothing = ((0, 0.1), (2, 0.2))"])
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "passes over the" in line)
    assert line.endswith("label smoothing 0.2 (TrainConfig.budget_label_smoothing), "
                         "subword sampling 0.3 (TrainConfig.budget_subword_sampling)"), line
    assert "stopped at step 30" in out


def test_sampling_needs_a_sentencepiece_vocabulary(tmp_path):
    from t2t_lite import registry
    from t2t_lite.errors import UserError

    problem = registry.problem("algorithmic_reverse", max_length=8, train_samples=50,
                               eval_samples=10)
    problem.generate_data(str(tmp_path))
    with pytest.raises(UserError, match="subword sampling needs a SentencePiece vocabulary"):
        problem.dataset("train", str(tmp_path), batch_tokens=64, max_length=8,
                        subword_sampling=0.1)


@pytest.mark.slow
def test_a_retraced_step_trains_with_the_new_label_smoothing():
    """What the plan's label smoothing switch does: the step traced again uses the new eps."""
    from t2t_lite import hparams
    from t2t_lite.training.loss import token_statistics
    from t2t_lite.training.schedule import make_schedule, optimizer_with
    from t2t_lite.training.steps import TrainSteps

    model_config, train_config, _ = hparams.load("tiny", ["ModelConfig.dropout = 0.0"])
    model = Transformer(model_config, 30)
    optimizer = optimizer_with(make_schedule(model_config, train_config), train_config)
    steps = TrainSteps(tf.distribute.get_strategy(), model, optimizer, 0.0, 1)
    batch = {"inputs": tf.constant([[5, 6, 7, 1]]), "targets": tf.constant([[9, 10, 1]])}
    plain = steps.final_step(batch)
    np.testing.assert_allclose(float(plain["loss"]), float(plain["nll"]), rtol=1e-6)
    steps.label_smoothing = 0.3
    steps.retrace()
    expected = token_statistics(model(batch, training=True), batch["targets"], 0.3)
    smoothed = steps.final_step(batch)
    np.testing.assert_allclose(float(smoothed["loss"]), float(expected["loss"]), rtol=1e-5)
    assert abs(float(expected["loss"]) - float(expected["nll"])) > 1e-3


def test_small_cpu_smooths_labels_more_for_long_runs():
    from t2t_lite import hparams

    rule = hparams.load("small_cpu")[1].budget_label_smoothing
    assert regularisation.rate_for(rule, 400 * 352 / 35195) == 0.05
    assert regularisation.rate_for(rule, 1600 * 352 / 35195) == 0.1
