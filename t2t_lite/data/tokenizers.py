"""In-graph tokenizers shared by the tf.data pipeline, the decoder and the exported SavedModel.

Every tokenizer is a `tf.Module` whose `encode`/`decode` are tf.functions built from
tensorflow-text (or tf.lookup) ops, so the same vocabulary file tokenizes at training time and
inside a served model. Ids follow the project convention: 0 = <pad>, 1 = EOS, 2 = <unk>.

    tok = load_tokenizer("/data/translate_ende_gettext.spm.model")
    ids = tok.encode(tf.constant(["Hello world"]))      # tf.RaggedTensor int32, no EOS
    text = tok.decode(padded_ids_with_eos)               # tf.string [N], stops at first EOS/pad

The vocabulary file travels with a saved module as a `tf.saved_model.Asset` (`tok.vocab_asset`);
after tf.saved_model.load, the size is `loaded.saved_vocab_size` (an int32 variable).
"""
import os

import sentencepiece
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_ID, RESERVED_TOKENS, UNK_ID

SENTENCEPIECE_SUFFIX = ".spm.model"
WORDPIECE_SUFFIX = ".wordpiece.txt"
SYMBOLS_SUFFIX = ".symbols.txt"


class Tokenizer(tf.Module):
    """Strings <-> int32 ids, in graph. Subclasses implement `_tokenize` and `_detokenize`."""

    def __init__(self, vocab_path, vocab_size, name=None):
        super().__init__(name=name)
        self.vocab_asset = tf.saved_model.Asset(vocab_path)
        self.vocab_size = int(vocab_size)
        # Plain Python attributes do not survive tf.saved_model.save; a variable does.
        self.saved_vocab_size = tf.Variable(self.vocab_size, dtype=tf.int32, trainable=False,
                                            name="vocab_size")

    @property
    def vocab_path(self):
        """Local path of the vocabulary file (inside the SavedModel's assets once reloaded)."""
        return self.vocab_asset.asset_path.numpy().decode("utf-8")

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None], tf.string)])
    def encode(self, texts):
        """tf.string [N] -> tf.RaggedTensor int32 [N, (len)] of ids, without EOS."""
        return tf.cast(self._tokenize(texts), tf.int32)

    @tf.function(autograph=False, input_signature=[tf.TensorSpec([None, None], tf.int32)])
    def decode(self, ids):
        """int32 [N, L] -> tf.string [N]; each row is cut at its first EOS or pad."""
        keep = tf.math.cumprod(tf.cast(ids > EOS_ID, tf.int32), axis=1)
        ragged = tf.RaggedTensor.from_tensor(ids, lengths=tf.reduce_sum(keep, axis=1))
        return self._detokenize(ragged)

    def encode_batch(self, texts):
        """Eager helper: list of str -> list of lists of Python ints (used by datagen)."""
        ids = self.encode(tf.constant(texts, dtype=tf.string))
        flat = ids.flat_values.numpy().tolist()
        splits = ids.row_splits.numpy().tolist()
        return [flat[splits[i]:splits[i + 1]] for i in range(len(texts))]

    def resegmenter(self, alpha):
        """A function re-segmenting ragged int64 id rows (each ending in EOS) with subword
        sampling at rate `alpha` (a float or a tf.Variable, read at each call): training then sees
        a different segmentation of the same text on each pass (subword regularisation).
        Only SentencePiece vocabularies can sample."""
        raise UserError(f"subword sampling needs a SentencePiece vocabulary (.spm.model), "
                        f"not {os.path.basename(self.vocab_path)}")

    def _tokenize(self, texts):
        raise NotImplementedError

    def _detokenize(self, ragged_ids):
        raise NotImplementedError


class SentencePieceTokenizer(Tokenizer):
    """SentencePiece (BPE) model applied with tensorflow_text.SentencepieceTokenizer."""

    def __init__(self, model_path, name=None):
        with tf.io.gfile.GFile(model_path, "rb") as f:
            model = f.read()
        self._sp = tf_text.SentencepieceTokenizer(model=model, out_type=tf.int32)
        super().__init__(model_path, int(self._sp.vocab_size().numpy()), name=name)
        self._model = model

    def encode_batch(self, texts):
        # Datagen encodes outside the graph; the sentencepiece library behind the tensorflow-text
        # op gives the same ids from the same model (tested) about twice as fast.
        if not hasattr(self, "_processor"):
            self._processor = sentencepiece.SentencePieceProcessor(model_proto=self._model)
        return self._processor.encode(list(texts))

    def resegmenter(self, alpha):
        # nbest_size=-1 samples from all segmentations: BPE-dropout for a BPE model (alpha: the
        # probability of skipping each merge), Kudo's subword regularisation for a unigram one
        # (alpha: the smoothing exponent). alpha 0 gives the plain segmentation.
        sampler = tf_text.SentencepieceTokenizer(model=self._model, out_type=tf.int32,
                                                 nbest_size=-1, alpha=alpha)

        def resegment(rows):
            text = self._detokenize(tf.cast(rows[:, :-1], tf.int32))  # without the EOS
            ids = tf.cast(sampler.tokenize(text), rows.dtype)
            eos = tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, rows.dtype))
            return tf.concat([ids, eos], axis=1)

        return resegment

    def _tokenize(self, texts):
        return self._sp.tokenize(texts)

    def _detokenize(self, ragged_ids):
        return self._sp.detokenize(ragged_ids)


class WordPieceTokenizer(Tokenizer):
    """WordPiece over whitespace-split words (tensorflow_text.FastWordpieceTokenizer).

    Words are split on whitespace only (punctuation stays inside words and is learned as
    pieces such as "##,"), so decode(encode(text)) gives back any text whose characters are in
    the vocabulary, up to runs of whitespace becoming one space.
    """

    def __init__(self, vocab_path, name=None):
        vocab = vocabulary_tokens(vocab_path)
        _check_reserved(vocab, vocab_path)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=vocab, suffix_indicator="##", unknown_token=RESERVED_TOKENS[UNK_ID],
            no_pretokenization=True, support_detokenization=True, token_out_type=tf.int32)
        super().__init__(vocab_path, len(vocab), name=name)

    def _tokenize(self, texts):
        words = tf.strings.split(texts)
        return self._wordpiece.tokenize(words).merge_dims(1, 2)

    def _detokenize(self, ragged_ids):
        return self._wordpiece.detokenize(ragged_ids)


class SymbolTokenizer(Tokenizer):
    """A fixed vocabulary of whitespace-separated symbols (one per line of the vocab file)."""

    def __init__(self, vocab_path, name=None):
        vocab = vocabulary_tokens(vocab_path)
        _check_reserved(vocab, vocab_path)
        self._table = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(
                tf.constant(vocab), tf.range(len(vocab), dtype=tf.int32)),
            default_value=UNK_ID)
        self._symbols = tf.constant(vocab)
        super().__init__(vocab_path, len(vocab), name=name)

    def _tokenize(self, texts):
        return tf.ragged.map_flat_values(self._table.lookup, tf.strings.split(texts))

    def _detokenize(self, ragged_ids):
        return tf.strings.reduce_join(
            tf.ragged.map_flat_values(tf.gather, self._symbols, ragged_ids), axis=1, separator=" ")


def _check_reserved(vocab, path):
    if tuple(vocab[:len(RESERVED_TOKENS)]) != RESERVED_TOKENS:
        raise ValueError(f"{path}: vocabulary must start with {RESERVED_TOKENS}, got {vocab[:3]}")


def vocabulary_tokens(vocab_path):
    """One token string per id, in id order, for a vocabulary file of any kind (by its suffix)."""
    if vocab_path.endswith(SENTENCEPIECE_SUFFIX):
        processor = sentencepiece.SentencePieceProcessor(model_file=vocab_path)
        return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]
    with tf.io.gfile.GFile(vocab_path, "r") as f:
        tokens = f.read().split("\n")
    if vocab_path.endswith(SYMBOLS_SUFFIX):
        return [t for t in tokens if t]
    if tokens and tokens[-1] == "":
        tokens.pop()
    return tokens


def load_tokenizer(vocab_path):
    """Builds the right Tokenizer for a vocabulary file, chosen by its suffix."""
    if vocab_path.endswith(SENTENCEPIECE_SUFFIX):
        return SentencePieceTokenizer(vocab_path)
    if vocab_path.endswith(WORDPIECE_SUFFIX):
        return WordPieceTokenizer(vocab_path)
    if vocab_path.endswith(SYMBOLS_SUFFIX):
        return SymbolTokenizer(vocab_path)
    raise ValueError(f"unknown vocabulary file type: {os.path.basename(vocab_path)}")
