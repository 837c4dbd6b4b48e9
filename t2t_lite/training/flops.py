"""Model FLOPs of a model, counted from the matmuls its layout lists (multiply-add = 2 FLOPs;
models/layout.py).

Used for the training-cost estimate (paper Table 2 style) and for model-FLOPs utilisation in the
benchmarks. Training is counted as 3x the forward pass (forward + two backward matmuls).
"""
from t2t_lite import models


def forward_flops(config, vocab_size, source_length, target_length):
    """Forward FLOPs for one sentence pair of the given (padded) lengths."""
    return models.layout_of(config, vocab_size).forward_flops(source_length, target_length)


def training_flops(config, vocab_size, source_length, target_length):
    return 3 * forward_flops(config, vocab_size, source_length, target_length)


def run_flops(model_config, vocab_size, progress):
    """A run's training cost, Table 2 style (`progress`: its Progress hook): 3x forward FLOPs per
    token pair, at the run's mean sentence length.

    Without per-sentence lengths, tokens are split into sentences of 25 target tokens (typical
    for WMT); FLOPs grow only slightly with length through the attention terms.
    """
    target_tokens = progress.total_target_tokens
    if not target_tokens:
        return 0.0
    sentence = 25
    ratio = progress.total_source_tokens / target_tokens
    per_sentence = training_flops(model_config, vocab_size, max(1, round(sentence * ratio)),
                                  sentence)
    return per_sentence * target_tokens / sentence
