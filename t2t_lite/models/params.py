"""Parameter counts: analytic (from the config alone) and built (from a real Keras model)."""
from t2t_lite.config import ModelConfig


def analytic_parameter_count(config: ModelConfig, vocab_size: int) -> int:
    """Counts the paper's architecture term by term, without building anything."""
    d, h, k, v = config.d_model, config.num_heads, config.key_dim, config.value_dim
    bias = 1 if config.attention_bias else 0
    attention = 2 * (d * h * k + bias * h * k) + d * h * v + bias * h * v + h * v * d + bias * d
    feed_forward = d * config.d_ff + config.d_ff + config.d_ff * d + d
    layer_norm = 2 * d
    encoder_layer = attention + feed_forward + 2 * layer_norm
    decoder_layer = 2 * attention + feed_forward + 3 * layer_norm
    total = config.num_layers * (encoder_layer + decoder_layer)
    total += vocab_size * d  # one matrix: source, target embeddings and pre-softmax projection
    if config.position_encoding == "learned":
        total += config.max_length * d
    if config.norm_position == "pre":
        total += 2 * layer_norm  # final norms of the encoder and decoder stacks
    return total


def built_parameter_count(config: ModelConfig, vocab_size: int) -> int:
    """Builds the Keras model and counts its variables (slow for big sets, exact by construction)."""
    from t2t_lite import models

    return models.build(config, vocab_size).count_params()


def describe(name: str, config: ModelConfig, vocab_size: int) -> str:
    count = analytic_parameter_count(config, vocab_size)
    return (f"{name}: {count:,} parameters ({count / 1e6:.1f}M) at vocabulary {vocab_size:,}: "
            f"N={config.num_layers} d_model={config.d_model} d_ff={config.d_ff} "
            f"h={config.num_heads} d_k={config.key_dim} d_v={config.value_dim}")
