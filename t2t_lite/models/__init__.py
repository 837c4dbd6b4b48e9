"""Models: `build(config, vocab_size)` constructs the one ModelConfig names (registry.py)."""
from t2t_lite.models.registry import build, layout_of, register_model

__all__ = ["build", "layout_of", "register_model"]
