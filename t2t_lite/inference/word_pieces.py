"""Where words begin and end, per token of a vocabulary: what lets the constrained search treat a
phrase as whole words (decoding/constrained_search.py) although it sees only subword ids.

    starts[v]  a word boundary lies before token v: a SentencePiece piece that starts with "▁",
               a WordPiece token without "##", a token whose first character is not a letter,
               mark or digit (punctuation, a symbol), EOS, and every reserved token;
    ends[v]    a word boundary lies after token v: its last character is not a letter, mark or
               digit ("»", ":", "▁" alone), and the reserved tokens (pad, the start token, is
               where a sentence begins).

Two tokens a, b stand in one word unless ends[a] or starts[b]. A symbol vocabulary's tokens are
whole words each: every token starts and ends one.

    surfaces[v]  the text token v writes, as SentencePiece writes it: "▁" where a space (a new
                 word) comes before it ("▁Datei", "format"; a WordPiece "Datei" is "▁Datei",
                 "##format" is "format"; a symbol is a word: "▁" and the symbol); "" for the
                 reserved, control and byte tokens. What a `*` prefix form's pieces are matched
                 on (graph_prefixes.py).
"""
import unicodedata

import numpy as np

from t2t_lite.data import tokenizers
from t2t_lite.ids import RESERVED_TOKENS

SENTENCEPIECE_SPACE = "\u2581"
WORDPIECE_CONTINUATION = "##"


def is_word_character(character):
    """A letter, a combining mark or a digit (as a reader sees a word: "Datei2" is one word,
    "Datei:" is the word "Datei" and a colon)."""
    return unicodedata.category(character)[0] in "LMN"


def _special(index, piece, kind):
    """A reserved token, or a SentencePiece control or byte piece ("<unk>", "<0x0A>"): no
    word's text, a boundary on both sides."""
    return index < len(RESERVED_TOKENS) or (kind == "sentencepiece" and piece.startswith("<")
                                            and piece.endswith(">") and len(piece) > 2)


def boundaries_of_pieces(pieces, kind):
    """(starts, ends) bool [V] for a vocabulary's piece strings in id order; kind:
    "sentencepiece", "wordpiece" or "symbols"."""
    size = len(pieces)
    starts, ends = np.ones(size, bool), np.ones(size, bool)
    if kind == "symbols":
        return starts, ends
    for i, piece in enumerate(pieces):
        if _special(i, piece, kind):
            continue
        if kind == "sentencepiece":
            marked = piece.startswith(SENTENCEPIECE_SPACE)
            body = piece.lstrip(SENTENCEPIECE_SPACE)
        else:
            marked = not piece.startswith(WORDPIECE_CONTINUATION)
            body = piece if marked else piece[len(WORDPIECE_CONTINUATION):]
        if not body:
            continue
        starts[i] = marked or not is_word_character(body[0])
        ends[i] = not is_word_character(body[-1])
    return starts, ends


def surfaces_of_pieces(pieces, kind):
    """surfaces [V] (see the module docstring) for a vocabulary's piece strings in id order."""
    surfaces = []
    for i, piece in enumerate(pieces):
        if _special(i, piece, kind):
            surfaces.append("")
        elif kind == "sentencepiece":
            surfaces.append(piece)
        elif kind == "wordpiece" and piece.startswith(WORDPIECE_CONTINUATION):
            surfaces.append(piece[len(WORDPIECE_CONTINUATION):])
        else:
            surfaces.append(SENTENCEPIECE_SPACE + piece)
    return surfaces


def surfaces(tokenizer):
    """surfaces [V] of a Tokenizer's vocabulary, one per id the model can produce ("" past the
    vocabulary file's end)."""
    path = tokenizer.vocab_path
    texts = surfaces_of_pieces(tokenizers.vocabulary_tokens(path), kind_of(path))
    size = tokenizer.vocab_size
    return (texts + [""] * size)[:size]


def kind_of(vocab_path):
    if vocab_path.endswith(tokenizers.SENTENCEPIECE_SUFFIX):
        return "sentencepiece"
    if vocab_path.endswith(tokenizers.WORDPIECE_SUFFIX):
        return "wordpiece"
    return "symbols"


def boundaries(tokenizer):
    """(starts, ends) bool [V] of a Tokenizer's vocabulary (see the module docstring)."""
    path = tokenizer.vocab_path
    starts, ends = boundaries_of_pieces(tokenizers.vocabulary_tokens(path), kind_of(path))
    # A vocabulary file longer or shorter than the model's (never, but cheap to hold): pad with
    # boundaries so every id the model can produce has an entry.
    size = tokenizer.vocab_size
    if len(starts) != size:
        starts = np.concatenate([starts, np.ones(max(size - len(starts), 0), bool)])[:size]
        ends = np.concatenate([ends, np.ones(max(size - len(ends), 0), bool)])[:size]
    return starts, ends


def glued_model(tokenizer):
    """A SentencePiece tokenizer's model proto (bytes) that writes a text as it is tokenized
    glued to what comes before it (no "▁" added at its start: "Ordner" in "»Ordner«"), or None
    for other vocabularies. A negative phrase is barred in this form too, after any token that
    ends a word."""
    if kind_of(tokenizer.vocab_path) != "sentencepiece":
        return None
    from sentencepiece import sentencepiece_model_pb2

    model = sentencepiece_model_pb2.ModelProto()
    with open(tokenizer.vocab_path, "rb") as f:
        model.ParseFromString(f.read())
    model.normalizer_spec.add_dummy_prefix = False
    return model.SerializeToString()
