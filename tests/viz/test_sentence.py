"""Attention of a tiny (untrained) Transformer on one sentence, as bin/attention_plot uses it."""
import dataclasses

import numpy as np
import pytest

from t2t_lite import hparams
from t2t_lite.data.tokenizers import SymbolTokenizer
from t2t_lite.ids import RESERVED_TOKENS
from t2t_lite.errors import UserError
from t2t_lite.models.transformer import Transformer
from t2t_lite.viz import attention, sentence

SYMBOLS = ["the", "cat", "sat", "die", "Katze", "saß"]


@pytest.fixture(scope="module")
def model_and_tokenizer(tmp_path_factory):
    vocab = tmp_path_factory.mktemp("vocab") / "toy.symbols.txt"
    vocab.write_text("\n".join(RESERVED_TOKENS + tuple(SYMBOLS)) + "\n", encoding="utf-8")
    tokenizer = SymbolTokenizer(str(vocab))
    config = dataclasses.replace(hparams.load("tiny")[0], max_length=12)
    return Transformer(config, vocab_size=tokenizer.vocab_size), tokenizer


def test_forced_target_gives_weights_shaped_like_the_tokens(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    result = sentence.sentence_attention(model, tokenizer, "the cat sat", target="die Katze")
    assert result["source_tokens"] == ["the", "cat", "sat", "</s>"]
    assert result["target_tokens"] == ["die", "Katze", "</s>"]
    assert result["translation"] == "die Katze"
    weights = result["weights"]
    layers, heads = model.config.num_layers, model.config.num_heads
    assert [len(weights[k]) for k in attention.KINDS] == [layers] * 3
    assert weights["encoder_self"][0].shape == (heads, 4, 4)
    assert weights["decoder_self"][0].shape == (heads, 3, 3)
    assert weights["encoder_decoder"][0].shape == (heads, 3, 4)
    for layer in weights["encoder_decoder"] + weights["encoder_self"]:
        np.testing.assert_allclose(layer.sum(-1), 1.0, atol=1e-5)
    # Decoder self-attention is causal: nothing attends to a later position.
    assert np.all(np.triu(weights["decoder_self"][1], k=1) < 1e-6)
    attention.check_weights(weights, result["source_tokens"], result["target_tokens"])


def test_without_target_the_model_translates_and_ends_with_eos(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    result = sentence.sentence_attention(model, tokenizer, "the cat", beam_size=2, extra_length=3)
    targets = result["target_tokens"]
    assert targets[-1] == "</s>" and "</s>" not in targets[:-1]
    assert 1 <= len(targets) <= 2 + 1 + 3  # source (with EOS) + extra_length
    assert result["weights"]["encoder_decoder"][0].shape[1:] == (len(targets), 3)


def test_long_source_is_truncated_to_the_model_length(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    result = sentence.sentence_attention(model, tokenizer, " ".join(["cat"] * 40), target="die")
    assert len(result["source_tokens"]) == model.config.max_length


def test_empty_sentence_is_a_user_error(model_and_tokenizer):
    model, tokenizer = model_and_tokenizer
    with pytest.raises(UserError, match="source sentence is empty"):
        sentence.sentence_attention(model, tokenizer, "   ", target="die")
