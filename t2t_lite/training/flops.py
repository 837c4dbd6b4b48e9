"""Model FLOPs of the Transformer, counted from its matmuls (multiply-add = 2 FLOPs).

Used for the training-cost estimate (paper Table 2 style) and for model-FLOPs utilisation in the
benchmarks. Training is counted as 3x the forward pass (forward + two backward matmuls).
"""


def forward_flops(config, vocab_size, source_length, target_length):
    """Forward FLOPs for one sentence pair of the given (padded) lengths."""
    d, h, k, v, f = (config.d_model, config.num_heads, config.key_dim, config.value_dim,
                     config.d_ff)
    s, t = source_length, target_length
    projections = lambda n_query, n_source: 2 * (n_query * d * h * k + n_source * d * h * (k + v)
                                                 + n_query * h * v * d)
    scores = lambda n_query, n_source: 2 * n_query * n_source * h * (k + v)
    feed_forward = lambda n: 2 * n * 2 * d * f
    encoder = projections(s, s) + scores(s, s) + feed_forward(s)
    decoder = (projections(t, t) + scores(t, t) + projections(t, s) + scores(t, s)
               + feed_forward(t))
    logits = 2 * t * d * vocab_size
    return config.num_layers * (encoder + decoder) + logits


def training_flops(config, vocab_size, source_length, target_length):
    return 3 * forward_flops(config, vocab_size, source_length, target_length)
