"""Parameter counts: analytic (from the config alone) and built (from a real Keras model)."""
from t2t_lite.config import ModelConfig


def analytic_parameter_count(config: ModelConfig, vocab_size: int) -> int:
    """The parameters the model's layout lists (models/layout.py), without building anything."""
    from t2t_lite.models.registry import layout_of

    return layout_of(config, vocab_size).parameter_count()


def built_parameter_count(config: ModelConfig, vocab_size: int) -> int:
    """Builds the Keras model and counts its variables (slow for big sets, exact by construction)."""
    from t2t_lite import models

    return models.build(config, vocab_size).count_params()


def describe(name: str, config: ModelConfig, vocab_size: int) -> str:
    count = analytic_parameter_count(config, vocab_size)
    return (f"{name}: {count:,} parameters ({count / 1e6:.1f}M) at vocabulary {vocab_size:,}: "
            f"N={config.num_layers} d_model={config.d_model} d_ff={config.d_ff} "
            f"h={config.num_heads} d_k={config.key_dim} d_v={config.value_dim}")
