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
