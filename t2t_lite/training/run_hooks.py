"""The hooks a run's settings call for, beside the ones every run has (divergence guard,
progress, checkpoints): the budget planner, the regularisation plan, and the chief's dev
evaluation and TensorBoard summaries. Each takes the trainer's run context (trainer._Run)."""
import os

from t2t_lite.training.budget import RATE_SKIP_STEPS, RATE_STEPS, BudgetPlanner
from t2t_lite.training.evaluation import Evaluation, Evaluator
from t2t_lite.training.progress import Summaries
from t2t_lite.training.regularisation import RegularisationPlan, Regulariser, train_examples
from t2t_lite.training.schedule import make_schedule, peak_learning_rate


def planner(run, parts, plan_variables):
    """The budget planner's hook, for a budgeted run; it writes its plan to `plan_variables`."""
    if not parts.plan_variables:
        return []
    config = run.train_config
    peak = peak_learning_rate(make_schedule(run.model_config, config), config)
    return [BudgetPlanner(config, config.train_steps, *plan_variables, peak,
                          log_every=config.log_every, eval_batches=config.eval_batches,
                          bleu_sentences=config.bleu_sentences, anchor=parts.anchor)]


def regularisation_plan(run, model, steps, sampling, planned):
    """The hook fitting dropout, label smoothing and subword sampling to the planned passes, for
    a budgeted run with a rule for any of them."""
    def set_dropout(rate):
        model.set_dropout(rate)
        steps.retrace()

    def set_label_smoothing(eps):
        steps.label_smoothing = eps
        steps.retrace()

    config = run.train_config
    # (name, TrainConfig rule, rate until the plan decides, how to change it). Sampling needs no
    # retrace: the pipeline reads its variable as it runs (batches already prefetched keep the
    # old segmentation).
    candidates = [
        ("dropout", "budget_dropout", run.model_config.dropout, set_dropout),
        ("label smoothing", "budget_label_smoothing", config.label_smoothing,
         set_label_smoothing),
        ("subword sampling", "budget_subword_sampling", config.subword_sampling,
         lambda rate: sampling.assign(rate)),
    ]
    regularisers = [Regulariser(name, setting, getattr(config, setting), current, apply)
                    for name, setting, current, apply in candidates
                    if getattr(config, setting)]
    if not (planned and regularisers):
        return []
    return [RegularisationPlan(regularisers, train_examples(run.problem, run.options.data_dir),
                               measure_after=RATE_SKIP_STEPS + RATE_STEPS)]


def evaluation(run, model):
    """The chief's dev evaluation and summaries hooks. Evaluation follows the budget plan in a
    budgeted run, else --eval_every_steps, else each checkpoint save."""
    if not run.chief:
        return []
    config, model_dir = run.train_config, run.options.model_dir
    evaluator = Evaluator(model, run.problem, run.options.data_dir, run.tokenizer,
                          run.model_config, config, run.decode_config,
                          max_batches=config.eval_batches,
                          bleu_sentences=config.bleu_sentences,
                          beam_size=config.eval_beam_size)
    when = "plan" if config.budget_schedule else config.eval_every_steps or "checkpoints"
    return [Evaluation(evaluator, os.path.join(model_dir, "best"), when,
                       early_stopping_evals=config.early_stopping_evals,
                       history_dir=model_dir),
            Summaries(os.path.join(model_dir, "train"))]
