"""Evaluation on the dev split during training: loss, perplexity, token accuracy and a metric
on decoded dev sentences, chosen by the problem's `dev_metric`:

  * "bleu" (translation): sacreBLEU and chrF on detokenized beam (or greedy, beam 1) translations
    of the first `bleu_sentences` dev pairs (long lines split into sentences as the decoder
    splits them), exactly what t2t-lite-bleu would report for the decoder's output;
  * "parseval" (parsing): labelled bracket F1 / precision / recall (EVALB conventions) of the
    trees the decoder would write for the first `bleu_sentences` dev sentences, against the gold.

The `Evaluation` hook runs it in the training loop, keeps the best weights and stops early.
"""
import math
import time

import numpy as np
import tensorflow as tf

from t2t_lite.data import sentences, trees
from t2t_lite.errors import UserError
from t2t_lite.inference import batch_decode, parallel_search, translation_module
from t2t_lite.metrics import parseval
from t2t_lite.metrics.bleu import corpus_scores
from t2t_lite.model_dir import dev_history
from t2t_lite.training.hooks import Hook, decide_and_act, decide_before_the_first_step
from t2t_lite.training.loss import batch_statistics


class Evaluator:
    """Dev-split evaluation of a model while it trains.

    Args:
      model: the model being trained (its current weights are evaluated).
      problem: the Problem whose dev split and `dev_metric` are used.
      data_dir: where the problem's data is.
      tokenizer: the problem's tokenizer.
      model_config, train_config, decode_config: the run's configs (max_length, label smoothing,
        the decode settings dev translations use).
      max_batches: dev batches for the loss, perplexity and token accuracy.
      bleu_sentences: dev sentences decoded for the metric (0: loss only).
      beam_size: beam for dev decoding (default: the DecodeConfig's; the trainer passes 1).
      batch_tokens: tokens per dev batch.
    """

    def __init__(self, model, problem, data_dir, tokenizer, model_config, train_config,
                 decode_config, max_batches=50, bleu_sentences=200, beam_size=None,
                 batch_tokens=4096):
        self.model, self.problem, self.data_dir = model, problem, data_dir
        self.tokenizer = tokenizer
        self.label_smoothing = train_config.label_smoothing
        self.max_length = model_config.max_length
        self.max_batches, self.bleu_sentences = max_batches, bleu_sentences
        self.decode_config = decode_config
        self.beam_size = beam_size or decode_config.beam_size
        self.batch_tokens = batch_tokens
        self._statistics = tf.function(self._batch_statistics, reduce_retracing=True,
                                       autograph=False)
        # Dev translations go through the decoder's own text path (tokenize once, sort, batch).
        self._module = translation_module.TranslationModule(
            model, tokenizer, beam_size=self.beam_size, alpha=decode_config.alpha,
            extra_length=decode_config.extra_length)
        # The decoder's default: long lines in the problem's source language go by sentence.
        self._splitting = sentences.splitting_for(getattr(problem, "source_language", None))
        self._pairs = None
        self._dev_batches = None  # the dev batches of the loss (loss_metrics)

    def _batch_statistics(self, batch):
        return batch_statistics(self.model, batch, False, self.label_smoothing)

    def loss_metrics(self):
        if self._dev_batches is None:  # built once: each evaluation reads it from the start
            self._dev_batches = self.problem.dataset(
                "dev", self.data_dir, batch_tokens=self.batch_tokens, max_length=self.max_length,
                drop_long=True).take(self.max_batches)
        sums = {}
        for batch in self._dev_batches:
            for key, value in self._statistics(batch).items():
                sums[key] = sums.get(key, 0.0) + float(value)
        tokens = max(sums.get("tokens", 0.0), 1.0)
        nll = sums.get("nll", 0.0) / tokens
        return {"loss": sums.get("loss", 0.0) / tokens, "perplexity": math.exp(min(nll, 50.0)),
                "token_accuracy": sums.get("correct", 0.0) / tokens}

    def translations(self, sources):
        """Detokenized best translations of source strings, in order ("" for an empty one)."""
        # One search per core, as in the decoder: training waits while it evaluates.
        searches = parallel_search.resolve(0, on_gpu=parallel_search.tensorflow_on_gpu())
        results = batch_decode.translate_texts(
            self._module, list(sources), self.decode_config.alpha,
            self.decode_config.extra_length, batch_tokens=self.batch_tokens,
            parallel_searches=searches, splitting=self._splitting)
        return [hypotheses[0][0] if hypotheses else "" for hypotheses in results]

    def _dev_pairs(self):
        if self._pairs is None:
            pairs = self.problem.eval_text_pairs(self.data_dir, "dev")
            self._pairs = pairs[:self.bleu_sentences]
        return self._pairs

    def bleu(self):
        """sacreBLEU and chrF of the first bleu_sentences dev translations."""
        pairs = self._dev_pairs()
        if not pairs:
            return {}
        sources = [s for s, _ in pairs]
        references = [t for _, t in pairs]
        scores = corpus_scores(self.translations(sources), references)
        return {"bleu": scores["bleu"], "chrf": scores["chrf"]}

    def parseval(self):
        """Bracket F1 of the decoder's trees for the first bleu_sentences dev sentences.

        The gold tree is the dev target read back over the source words (exact for a well-formed
        linearisation); outputs go through the problem's postprocess_output as in the decoder.
        Targets carry no POS tags, so punctuation is recognised by its word form
        (trees.PUNCTUATION_TAGS): close to, not exactly, EVALB on the treebank's own trees, which
        t2t-lite-parseval --gold=<treebank trees> gives.
        """
        pairs = self._dev_pairs()
        if not pairs:
            return {}
        sources = [s for s, _ in pairs]
        gold = [trees.delinearise(target, source.split())[0] for source, target in pairs]
        test = [parseval.read_test_line(self.problem.postprocess_output(source, output))
                for source, output in zip(sources, self.translations(sources))]
        scores = parseval.evaluate(gold, test).all.scores()
        return {"f1": scores["f1"], "bracket_precision": scores["precision"],
                "bracket_recall": scores["recall"]}

    def evaluate(self, with_bleu=True):
        metrics = self.loss_metrics()
        if with_bleu and self.bleu_sentences:
            metric = getattr(self.problem, "dev_metric", "bleu")
            if metric not in DEV_METRICS:
                raise UserError(f"problem {self.problem.name}: unknown dev_metric {metric!r}; "
                                f"known: {', '.join(DEV_METRICS)}")
            metrics.update(getattr(self, metric)())
        return metrics


# Problem.dev_metric -> the Evaluator method computing it.
DEV_METRICS = ("bleu", "parseval")
class Evaluation(Hook):
    """Dev evaluation in the training loop, the best weights kept in `best_dir`, early stopping.

    `when` picks the one policy a run follows:
      an integer N: every N steps (--eval_every_steps);
      "plan": at the steps another hook asks for (Decisions.evaluation_due: the budget plan's);
      "checkpoints": after each checkpoint save.
    Under a cluster the chief decides one step ahead and evaluates at the step every worker
    saves at (hooks.Decisions).
    The final weights are evaluated at the end unless that step was just evaluated. With
    `early_stopping_evals` N, N evaluations in a row without a better one stop the run. Each
    evaluation is appended to `history_dir`'s dev history, which the averager reads.
    """

    def __init__(self, evaluator, best_dir, when, early_stopping_evals=None, history_dir=None):
        if not (when in ("plan", "checkpoints") or (isinstance(when, int) and when > 0)):
            raise ValueError(f"evaluation policy {when!r}: an integer > 0, 'plan' or "
                             "'checkpoints'")
        self.evaluator, self.when = evaluator, when
        self.history_dir = history_dir  # where dev_evaluations.jsonl goes (model_dir/dev_history)
        self.early_stopping_evals = early_stopping_evals
        self.best_keeper = tf.train.CheckpointManager(tf.train.Checkpoint(model=evaluator.model),
                                                      best_dir, max_to_keep=1)
        self.evals_without_improvement = 0
        self.evaluated_step = None  # the step last evaluated (the end does not repeat it)

    def begin(self, state):
        # A resumed run goes on with the best evaluation and the early-stopping count its
        # history holds up to the restored step (later ones are of steps trained again).
        history = {}
        if state.step and self.history_dir:
            history = {step: metrics for step, metrics
                       in dev_history.read(self.history_dir).items() if step <= state.step}
        for step in sorted(history):
            if dev_history.is_better(history[step], state.best_metrics):
                state.best_metrics = dict(history[step], step=step)
                self.evals_without_improvement = 0
            else:
                self.evals_without_improvement += 1
            self.evaluated_step = step
        decide_before_the_first_step(state, self._decide)

    def _decide(self, state):
        """Whether to evaluate at state.deciding_step (hooks.Decisions)."""
        deciding = state.deciding
        if self.when == "plan":
            deciding.evaluate = deciding.evaluation_due
        elif self.when == "checkpoints":
            deciding.evaluate = deciding.save
        else:
            deciding.evaluate = state.deciding_step % self.when == 0

    def after_step(self, state):
        return decide_and_act(state, self._decide, self._evaluate_if_decided)

    def _evaluate_if_decided(self, state):
        """Evaluates when this step's Decisions say so; "early_stopping" when that was the
        last evaluation early stopping allows without improvement."""
        if not state.decided.evaluate:
            return None
        self._evaluate(state)
        if (self.early_stopping_evals
                and self.evals_without_improvement >= self.early_stopping_evals):
            return "early_stopping"
        return None

    def end(self, state):
        # A signal's grace period has no time for a dev evaluation: the resumed run makes it.
        if state.signal:
            return
        if state.step > 0 and self.evaluated_step != state.step:
            print(f"final dev evaluation of step {state.step} (a signal now skips it; the "
                  f"checkpoint is written)", flush=True)
            self._evaluate(state)

    def _evaluate(self, state):
        start = time.monotonic()
        metrics = self.evaluator.evaluate()
        state.evaluation_seconds.append(time.monotonic() - start)
        state.dev_metrics = metrics
        self.evaluated_step = state.step
        print(f"dev at step {state.step}: {format_metrics(metrics)}", flush=True)
        if self.history_dir:
            dev_history.append(self.history_dir, state.step, metrics)
        if dev_history.is_better(metrics, state.best_metrics):
            state.best_metrics = dict(metrics, step=state.step)
            self.evals_without_improvement = 0
            self.best_keeper.save(checkpoint_number=state.step)
        else:
            self.evals_without_improvement += 1


def format_metrics(metrics):
    return "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in metrics.items() if isinstance(v, (int, float, np.floating)))
