"""Learning vocabulary files from a bounded text sample.

Each builder reads a plain-text file (one sentence per line, already sampled, so memory never
depends on corpus size) and writes one vocabulary file whose suffix tells `load_tokenizer` how to
apply it. All vocabularies reserve 0 = <pad>, 1 = EOS, 2 = <unk>.
"""
import collections
import io
import json
import os
import random

import sentencepiece as spm

from t2t_lite import atomic
from t2t_lite.data import tokenizers
from t2t_lite.ids import EOS_ID, PAD_ID, RESERVED_TOKENS, UNK_ID
from t2t_lite.errors import UserError


def reservoir_sample(items, k, seed=0):
    """Uniform sample of at most k items from a stream of unknown length (Algorithm R)."""
    rng = random.Random(seed)
    sample = []
    for i, item in enumerate(items):
        if i < k:
            sample.append(item)
        else:
            j = rng.randint(0, i)
            if j < k:
                sample[j] = item
    return sample


def train_sentencepiece(text_path, model_path, vocab_size, character_coverage=1.0,
                        model_type="bpe", split_by_unicode_script=True):
    """Trains a SentencePiece model (BPE by default) and writes it to model_path (.spm.model).

    split_by_unicode_script=False lets a piece mix scripts (punctuation and letters), e.g. a
    linearised tree's "(NP" as one piece rather than "(" + "NP"."""
    assert model_path.endswith(tokenizers.SENTENCEPIECE_SUFFIX), model_path
    # The model comes back as bytes (SentencePiece's own file writer says nothing when a disk is
    # full: it leaves an empty file), written whole or not at all, as every vocabulary is.
    model = io.BytesIO()
    _train_sentencepiece(text_path, model, vocab_size, character_coverage, model_type,
                         split_by_unicode_script)
    with atomic.open_atomic(model_path, "wb") as f:
        f.write(model.getvalue())
    return model_path


def _train_sentencepiece(text_path, model_writer, vocab_size, character_coverage, model_type,
                         split_by_unicode_script):
    spm.SentencePieceTrainer.train(
        input=text_path, model_writer=model_writer, vocab_size=vocab_size, model_type=model_type,
        pad_id=PAD_ID, eos_id=EOS_ID, unk_id=UNK_ID, bos_id=-1,
        pad_piece=RESERVED_TOKENS[0], eos_piece=RESERVED_TOKENS[1],
        unk_piece=RESERVED_TOKENS[2],
        character_coverage=character_coverage, split_by_unicode_script=split_by_unicode_script,
        # A small sample may not support the requested size; take what it supports.
        hard_vocab_limit=False,
        num_threads=os.cpu_count() or 1, minloglevel=2)


def train_wordpiece(text_path, vocab_path, vocab_size, max_unique_chars=1000):
    """Learns a WordPiece vocabulary over whitespace-split words with tensorflow_text's learner."""
    # Imported lazily: the learner pulls in extra modules that training never needs.
    from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

    assert vocab_path.endswith(tokenizers.WORDPIECE_SUFFIX), vocab_path
    counts = collections.Counter()
    with open(text_path, encoding="utf-8") as f:
        for line in f:
            counts.update(line.split())
    vocab = learner.learn(
        counts.items(), vocab_size=vocab_size, reserved_tokens=list(RESERVED_TOKENS),
        lower_thresh=1, max_unique_chars=max_unique_chars)
    _write_lines(vocab_path, vocab)
    return vocab_path


def write_symbol_vocab(vocab_path, symbols):
    """Writes a fixed symbol vocabulary (reserved tokens first) for SymbolTokenizer."""
    assert vocab_path.endswith(tokenizers.SYMBOLS_SUFFIX), vocab_path
    _write_lines(vocab_path, list(RESERVED_TOKENS) + list(symbols))
    return vocab_path


def _write_lines(path, lines):
    atomic.write_text(path, "".join(line + "\n" for line in lines))


def file_in_folder(folder, name, named_in, kind="model_dir"):
    """folder/name for a vocabulary `name` that `named_in` (a file) gives: a file name alone,
    since a path would read (and an export would ship) a file from outside the folder."""
    if not isinstance(name, str) or name in ("", ".", "..") or os.path.basename(name) != name:
        raise UserError(f"{named_in} names the vocabulary {name!r}; it must be a file name "
                        f"inside the {kind}")
    return os.path.join(folder, name)


def vocab_of(spec):
    """The vocabulary file `spec` names: the file itself, or a model_dir's copy (by run.json)."""
    if os.path.isfile(spec):
        return spec
    run_info = os.path.join(spec, "run.json")
    try:
        with open(run_info, encoding="utf-8") as f:
            name = json.load(f).get("vocab_file")
    except (OSError, ValueError, AttributeError) as error:
        raise UserError(f"vocab_from={spec} is neither a vocabulary file nor a model_dir with a "
                        f"readable run.json ({error})") from None
    path = file_in_folder(spec, name, run_info)
    if not os.path.isfile(path):
        raise UserError(f"vocab_from={spec}: its vocabulary {path} is missing")
    return path
