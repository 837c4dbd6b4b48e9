"""Model-agnostic beam search over tokens_to_logits, and translation with a Transformer."""
from t2t_lite.decoding.beam_search import beam_search, length_penalty

__all__ = ["beam_search", "length_penalty"]
