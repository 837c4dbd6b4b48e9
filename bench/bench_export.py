"""Text-in/text-out decoding throughput: checkpoint module vs exported SavedModel, and what sorting
by length buys the file decoder.

    TF_ENABLE_ONEDNN_OPTS=1 TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python bench/bench_export.py \
        [--hparams_set=tiny --sentences=256 --batch_tokens=2048 --extra_length=10]

A model_dir with random weights and a symbol vocabulary is built in a temporary folder. Random
weights rarely emit EOS, so every sentence decodes to its limit (input length + extra_length).
Reported: sentences/s and target tokens/s for
  checkpoint   - TranslationModule built from the checkpoint (what t2t-lite-decoder --model_dir runs)
  savedmodel   - the same module exported and loaded with tf.saved_model.load (--export_dir)
  unsorted     - the SavedModel on batches in input order (same batch count), for comparison with
                 the decoder's length-sorted token batches.
"""
import argparse
import os
import random

import harness

harness.tensorflow_env()

import tensorflow as tf  # noqa: E402

from t2t_lite.export import saved_model_versions  # noqa: E402
from t2t_lite.inference import batch_decode, batching, translation_module  # noqa: E402


def random_sentences(count, vocab_size, max_words, seed=0):
    rng = random.Random(seed)
    return [" ".join(f"w{rng.randrange(vocab_size - 3)}" for _ in range(rng.randint(1, max_words)))
            for _ in range(count)]


def timed(translate_batches, texts, repeats=2):
    """(sentences/s, target tokens/s) of the fastest of `repeats` runs."""
    seconds, outputs = harness.fastest(translate_batches, repeats, texts)
    tokens = sum(len(text.split()) + 1 for text in outputs)  # symbols + EOS
    return len(texts) / seconds, tokens / seconds


def run(args, root):
    model_dir, _ = harness.random_model_dir(root, args.hparams_set, args.vocab_size)
    texts = random_sentences(args.sentences, args.vocab_size, args.max_words)
    alpha, extra = 0.6, args.extra_length

    def sorted_batches(module):
        def translate(items):
            hyps = batch_decode.translate_texts(module, items, alpha, extra,
                                                batch_tokens=args.batch_tokens)
            return [h[0][0] for h in hyps]
        return translate

    def input_order_batches(module, num_batches):
        def translate(items):
            size = -(-len(items) // num_batches)
            outputs = []
            for start in range(0, len(items), size):
                result = module.translate_with_settings(
                    tf.constant(items[start:start + size]), tf.constant(alpha),
                    tf.constant(extra))
                outputs += [t.decode() for t in result["outputs"][:, 0].numpy()]
            return outputs
        return translate

    module = translation_module.from_model_dir(model_dir, beam_size=args.beam_size)
    sorted_batches(module)(texts[:8])  # trace once
    results = {"checkpoint": timed(sorted_batches(module), texts)}

    loaded = tf.saved_model.load(saved_model_versions.save(module, os.path.join(root, "export")))
    sorted_batches(loaded)(texts[:8])
    results["savedmodel"] = timed(sorted_batches(loaded), texts)
    lengths = [len(t.split()) for t in texts]
    num_batches = len(batching.plan_batches(lengths, args.batch_tokens))
    results["unsorted"] = timed(input_order_batches(loaded, num_batches), texts)

    print(f"{args.hparams_set}, beam {args.beam_size}, {args.sentences} sentences of 1-"
          f"{args.max_words} words, extra_length {extra}, {num_batches} batches")
    base = results["savedmodel"][0]
    for name, (sentences, tokens) in results.items():
        print(f"  {name:<11} {sentences:8.1f} sentences/s {tokens:9.1f} target tokens/s  "
              f"({sentences / base:.2f}x savedmodel)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hparams_set", default="tiny")
    parser.add_argument("--vocab_size", type=int, default=1000)
    parser.add_argument("--sentences", type=int, default=256)
    parser.add_argument("--max_words", type=int, default=40)
    parser.add_argument("--beam_size", type=int, default=4)
    parser.add_argument("--extra_length", type=int, default=10)
    parser.add_argument("--batch_tokens", type=int, default=2048)
    with harness.scratch_dir("bench_export_") as root:
        run(parser.parse_args(), root)


if __name__ == "__main__":
    main()
