"""Evaluation on the dev split during training: loss, perplexity, token accuracy and real BLEU.

BLEU is sacreBLEU on detokenized beam (or greedy, beam 1) translations of the first
`bleu_sentences` dev pairs, exactly what t2t-lite-bleu would report for them.
"""
import math

import numpy as np
import tensorflow as tf

from t2t_lite.decoding.translate import translate_fn
from t2t_lite.metrics.bleu import corpus_scores
from t2t_lite.training.loss import token_statistics


class Evaluator:
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
        self._statistics = tf.function(self._batch_statistics, reduce_retracing=True)
        self._translate = translate_fn(model, beam_size=self.beam_size)
        self._pairs = None

    def _batch_statistics(self, batch):
        logits = self.model(batch, training=False)
        return token_statistics(logits, batch["targets"], self.label_smoothing)

    def loss_metrics(self):
        dataset = self.problem.dataset("dev", self.data_dir, batch_tokens=self.batch_tokens,
                                       max_length=self.max_length, drop_long=True)
        sums = {}
        for batch in dataset.take(self.max_batches):
            for key, value in self._statistics(batch).items():
                sums[key] = sums.get(key, 0.0) + float(value)
        tokens = max(sums.get("tokens", 0.0), 1.0)
        nll = sums.get("nll", 0.0) / tokens
        return {"loss": sums.get("loss", 0.0) / tokens, "perplexity": math.exp(min(nll, 50.0)),
                "token_accuracy": sums.get("correct", 0.0) / tokens}

    def translations(self, sources, batch_size=64):
        """Detokenized best translations of source strings, in order."""
        outputs = []
        limit = self.max_length - 1  # room for EOS
        for start in range(0, len(sources), batch_size):
            chunk = sources[start:start + batch_size]
            ids = self.tokenizer.encode(tf.constant(chunk, dtype=tf.string))[:, :limit]
            eos = tf.RaggedTensor.from_tensor(tf.ones([len(chunk), 1], tf.int32))
            ids = tf.concat([ids, eos], axis=1).to_tensor(default_value=0)
            sequences, _ = self._translate(ids, tf.constant(self.decode_config.alpha, tf.float32),
                                           tf.constant(self.decode_config.extra_length, tf.int32))
            texts = self.tokenizer.decode(sequences[:, 0, :]).numpy()
            outputs.extend(t.decode("utf-8", errors="replace") for t in texts)
        return outputs

    def bleu(self):
        if self._pairs is None:
            pairs = self.problem.eval_text_pairs(self.data_dir, "dev")
            self._pairs = pairs[:self.bleu_sentences]
        if not self._pairs:
            return {}
        sources = [s for s, _ in self._pairs]
        references = [t for _, t in self._pairs]
        scores = corpus_scores(self.translations(sources), references)
        return {"bleu": scores["bleu"], "chrf": scores["chrf"]}

    def evaluate(self, with_bleu=True):
        metrics = self.loss_metrics()
        if with_bleu and self.bleu_sentences:
            metrics.update(self.bleu())
        return metrics


def is_better(metrics, best):
    """Higher BLEU wins when both have it; otherwise lower dev loss."""
    if best is None:
        return True
    if "bleu" in metrics and "bleu" in best:
        return metrics["bleu"] > best["bleu"]
    return metrics["loss"] < best["loss"]


def format_metrics(metrics):
    return "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}"
                     for k, v in metrics.items() if isinstance(v, (int, float, np.floating)))
