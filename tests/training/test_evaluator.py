"""The trainer's dev Evaluator on a real tiny problem."""
import pytest

from t2t_lite import hparams, models, problems
from t2t_lite.data import datagen
from t2t_lite.training.evaluation import Evaluator


@pytest.mark.slow  # datagen and two dev evaluations of a real problem: the whole suite runs it
def test_each_dev_evaluation_reads_the_same_batches(tmp_path):
    """The dev batches are built once and read from the start at every evaluation: unchanged
    weights give the same loss the second time, and the same as a fresh evaluator's."""
    params = ["max_length=8", "train_samples=200", "eval_samples=120"]
    problem = problems.build("algorithmic_reverse", params)
    datagen.run(problem, str(tmp_path))
    tokenizer = problem.tokenizer(str(tmp_path))
    configs = hparams.load("tiny")
    model = models.build(configs[0], tokenizer.vocab_size)

    def evaluator():
        return Evaluator(model, problem, str(tmp_path), tokenizer, *configs, max_batches=3,
                         bleu_sentences=0, batch_tokens=128)

    once = evaluator()
    first = once.loss_metrics()
    assert first["loss"] > 0 and 0 <= first["token_accuracy"] <= 1
    assert once.loss_metrics() == first == evaluator().loss_metrics()
