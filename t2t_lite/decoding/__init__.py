"""Model-agnostic decoding: beam search, greedy decoding and sampling over tokens_to_logits."""
from t2t_lite.decoding.beam_search import beam_search, length_penalty
from t2t_lite.decoding.sampling import greedy_decode, sample_decode

__all__ = ["beam_search", "length_penalty", "greedy_decode", "sample_decode"]
