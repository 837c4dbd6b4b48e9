"""The text-in/text-out translation module: the one place where text becomes ids and back.

Tokenization, truncation, beam search and detokenization all run inside tf.functions, so the
checkpoint path (t2t-lite-decoder --model_dir), the SavedModel path (--export_dir, TF Serving),
dev BLEU during training (training/evaluation.py) and the attention plots (viz/sentence.py) run
the same code. Signatures (all take batches; the batch is the leading dimension of every output,
as TF Serving's row-format REST API requires):

    serving_default          inputs string [B]            -> outputs string [B], scores float [B]
    nbest                    inputs string [B]            -> outputs string [B, K], scores [B, K]
    translate_with_settings  inputs [B], alpha float [], extra_length int32 []
                                                          -> outputs string [B, K], scores [B, K]
    tokenize                 inputs string [B]            -> ids int32 [B, W] (EOS-terminated,
                                                             0-padded), token_counts int32 [B]
    translate_ids            ids int32 [B, W], alpha, extra_length
                                                          -> outputs string [B, K], scores [B, K]
    translate_constrained    inputs string [B], constraints string [B] (one constraint line
                             each, see encode_constraints)
                                                          -> outputs string [B], scores [B],
                                                             unmet int32 [B]
    score                    inputs [B], targets [B]      -> log_prob, score float [B],
                                                             target_length int32 [B]
    attention                inputs [B], targets [B]      -> encoder_self [B, N, H, S, S],
                             decoder_self [B, N, H, T, T], encoder_decoder [B, N, H, T, S],
                             source_tokens / target_tokens string [B, S] / [B, T]

Scores are log probability / GNMT length penalty ((5 + length) / 6) ** alpha, length counting EOS.
Every search signature (serving_default, nbest, translate_with_settings, translate_ids and the
constrained ones) runs the module's rule against loops, `no_repeat_ngram_size` (fixed when the
module is built, named in describe(); decoding/repeats.py): no output repeats an n-gram of
tokens, except where a constraint's phrase needs it.
The text-in translation signatures (serving_default, nbest, translate_with_settings,
translate_constrained) keep the protected spans of each source (format specifiers, brace fields,
markup: `protect`, "auto" by default, fixed when the module is built and named in describe())
with graph_spans.repair, so a TF Serving client gets them intact; a score stays the searched
hypothesis's. translate_ids and translate_constrained_ids return the search's own texts: the file
decoder repairs those with protected_spans.restore.
A source with no tokens (empty or blank) translates to "" with score 0. The file decoder
(batch_decode.py) tokenizes once with `tokenize`, sorts and batches the ids, and translates them
with `translate_ids`: each line is tokenized exactly once.

Every tf.function here has autograph=False: the code writes its loops and branches as
tf.while_loop / tf.cond, so converting the source of every function a translation calls would
only slow the trace.
"""
import tensorflow as tf
import tensorflow_text as tf_text

from t2t_lite.config import DecodeConfig
from t2t_lite.decoding import precision as decode_precision
from t2t_lite.decoding.beam_search import length_penalty
from t2t_lite.decoding.translate import translate, translate_constrained
from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.inference import (graph_constraints, graph_prefixes, graph_spans, protected_spans,
                                word_pieces)
from t2t_lite.inference.translator import DecodeSettings

STRINGS = tf.TensorSpec([None], tf.string)
IDS = tf.TensorSpec([None, None], tf.int32)
ALPHA = tf.TensorSpec([], tf.float32)
EXTRA_LENGTH = tf.TensorSpec([], tf.int32)


def ids_with_eos(pieces, max_length):
    """ragged ids [B, (n)] -> int32 [B, W] as the model reads them: at most max_length - 1
    tokens, EOS, 0-padded (the decoder's other engines build their ids with it too)."""
    pieces = pieces[:, :max_length - 1]
    eos = tf.RaggedTensor.from_tensor(
        tf.fill([pieces.nrows(), 1], tf.constant(EOS_ID, pieces.dtype)))
    return tf.concat([pieces, eos], axis=1).to_tensor(default_value=PAD_ID)


def token_strings(tokenizer, ids):
    """int32 [B, W] -> string [B, W], each id decoded on its own ("" for pad and EOS)."""
    shape = tf.shape(ids)
    return tf.reshape(tokenizer.decode(tf.reshape(ids, [-1, 1])), shape)


class _Untracked:
    """Holds an object out of SavedModel tracking (tf.Module tracks attributes, not these)."""

    def __init__(self, value):
        self.value = value


class TranslationModule(tf.Module):
    """A Transformer and its tokenizer with fixed beam size and default alpha / extra length.

    precision: the beam search's compute precision, "float32" (the default) or the opt-in
    "bfloat16" / "auto" (see t2t_lite/decoding/precision.py); scoring and attention plots always
    run the float32 model.
    protect: the --protect setting of the text-in signatures ("auto": every kind for a gettext
    problem named in metadata, none otherwise; "none"; or a comma list of protected_spans.KINDS).
    eos_until_met: the constrained search bars EOS until every phrase is met (off by default,
    docs/design.md); a Python setting of the module, not of an export's signatures.
    no_repeat_ngram_size: the rule against loops every search runs (decoding/repeats.py; 0: off),
    fixed in the traced searches and an export's describe().
    """

    def __init__(self, model, tokenizer, beam_size=DecodeConfig.beam_size, alpha=DecodeConfig.alpha,
                 extra_length=DecodeConfig.extra_length, metadata=None,
                 name="t2t_lite_translation", precision="float32", protect="auto",
                 eos_until_met=False, no_repeat_ngram_size=DecodeConfig.no_repeat_ngram_size):
        super().__init__(name=name)
        # Keras 3 variables wrap tf.Variables. Saving the Keras model itself records the wrappers,
        # whose restore never reaches the tf.Variables the traced graph reads: session-based
        # loaders (TF Serving, saved_model_cli run) then fail with "Could not find variable"
        # (keras-team/keras#20095). So the model stays untracked and the tf.Variables themselves
        # are tracked (tests/export runs serving_default through a TF1 session to keep it so).
        self._model = _Untracked(model)
        self.model_variables = [getattr(v, "value", v) for v in model.variables]
        self.precision, precision_reason = decode_precision.choose(precision)
        decoder = decode_precision.twin(model, self.precision)
        self._decoder = _Untracked(decoder)
        # A bfloat16 twin holds its own copy of the weights: tracked, so an export restores it.
        self.decoder_variables = ([] if decoder is model else
                                  [getattr(v, "value", v) for v in decoder.variables])
        metadata = dict(metadata or {})
        self.protect = protected_spans.resolve(protect, metadata.get("problem"), po=False)
        # The constrained search's EOS rule, fixed when the search is traced (an export keeps
        # the default; docs/design.md says why it is off).
        self.eos_until_met = bool(eos_until_met)
        if self.precision != "float32":
            metadata.update(decode_precision=self.precision,
                            decode_precision_reason=precision_reason)
        metadata["protect"] = sorted(self.protect)
        # Before the search is traced: a NaN alpha or a beam past the bounds (a flag, an edited
        # configs.json) is refused in one line.
        settings = DecodeSettings.for_model(model, beam_size, alpha, extra_length,
                                            no_repeat_ngram_size, metadata)
        self._settings = _Untracked(settings)  # untracked: tf.Module would wrap its dict
        self.tokenizer = tokenizer
        # Where target words begin and end, per token: a constrained phrase is whole words.
        starts, ends = word_pieces.boundaries(tokenizer)
        self._word_starts = _Untracked(tf.constant(starts))
        self._word_ends = _Untracked(tf.constant(ends))
        # The vocabulary without SentencePiece's added "▁": how a negative phrase is written
        # glued to punctuation ("»Ordner«"), barred too. Tracked: an export holds its op. Named:
        # a loaded export shares a SentencePiece model between ops of one name, so under the
        # default name it would write the glued form with the tokenizer's own model.
        glued = word_pieces.glued_model(tokenizer)
        self.glued_tokenizer = None if glued is None else tf_text.SentencepieceTokenizer(
            model=glued, out_type=tf.int32, name="glued_sentencepiece")
        # Which pieces write a word a `*` prefix form begins. Tracked: an export holds its tables.
        self.prefix_pieces = graph_prefixes.PrefixPieces(word_pieces.surfaces(tokenizer))
        self.beam_size, self.max_length = settings.beam_size, settings.max_length
        self.no_repeat_ngram_size = settings.no_repeat_ngram_size
        self.default_alpha, self.default_extra_length = settings.alpha, settings.extra_length
        # Python attributes are lost in a SavedModel; the constant describe() returns survives.
        self.metadata_json = settings.to_json()

    supports_constraints = True

    @property
    def settings(self):
        """The fixed settings and provenance describe() returns (translator.DecodeSettings)."""
        return self._settings.value

    @property
    def model(self):
        return self._model.value

    @property
    def decoder_model(self):
        """The model the beam search runs: `model`, or its bfloat16 twin."""
        return self._decoder.value

    # ---- preprocessing ------------------------------------------------------------------------
    @tf.function(autograph=False, input_signature=[STRINGS])
    def tokenize(self, inputs):
        """strings [B] -> ids int32 [B, W] as the model reads them (at most max_length - 1 tokens,
        then EOS, 0-padded) and token_counts int32 [B] (tokens before truncation, EOS not
        counted; 0 for an empty or blank text)."""
        pieces = self.tokenizer.encode(inputs)
        return {"ids": self._with_eos(pieces),
                "token_counts": tf.cast(pieces.row_lengths(), tf.int32)}

    def _with_eos(self, pieces):
        return ids_with_eos(pieces, self.max_length)

    def _ids_with_eos(self, texts):
        """strings [B] -> int32 [B, W] (see tokenize)."""
        return self._with_eos(self.tokenizer.encode(texts))

    # ---- translation --------------------------------------------------------------------------
    @tf.function(autograph=False, input_signature=[STRINGS, ALPHA, EXTRA_LENGTH])
    def translate_with_settings(self, inputs, alpha, extra_length):
        result = self.translate_ids(self._ids_with_eos(inputs), alpha, extra_length)
        return dict(result, outputs=self._protected(inputs, result["outputs"]))

    def _protected(self, inputs, outputs):
        """outputs string [B, K] with each source's protected spans kept (graph_spans.repair)."""
        if not self.protect:
            return outputs
        repaired, _ = graph_spans.repair(inputs, outputs, self.protect)
        return repaired

    @tf.function(autograph=False, input_signature=[IDS, ALPHA, EXTRA_LENGTH])
    def translate_ids(self, ids, alpha, extra_length):
        """ids as `tokenize` gives them (rows may carry extra 0 padding) -> n-best texts."""
        sequences, scores = translate(self.decoder_model, ids, beam_size=self.beam_size,
                                      alpha=alpha, extra_length=extra_length,
                                      no_repeat_ngram_size=self.no_repeat_ngram_size)
        return self._texts(ids, sequences, scores)

    def _texts(self, ids, sequences, scores):
        shape = tf.shape(sequences)  # [B, K, L]
        texts = self.tokenizer.decode(tf.reshape(sequences, [-1, shape[2]]))
        texts = tf.reshape(texts, shape[:2])
        # A source without tokens (EOS and padding only: every real token id is above EOS)
        # translates to "", read from the ids, so the text is not tokenized a second time.
        empty = tf.reduce_all(ids <= EOS_ID, axis=1, keepdims=True)
        return {"outputs": tf.where(empty, tf.constant(""), texts),
                "scores": tf.where(empty, 0.0, scores)}

    # ---- constrained translation ---------------------------------------------------------------
    @tf.function(autograph=False, input_signature=[STRINGS])
    def encode_constraints(self, constraints):
        """Constraint lines (constraints.py's text format: tab-separated phrases, `|` between a
        phrase's alternatives, `!` before a phrase that must not appear, `*` after a negative
        alternative for every word it begins; "" for none) -> target ids: positive int32
        [B, P, A, T] and negative int32 [B, Q, T], 0-padded, each alternative ending in
        phrase_matching.WORD_END where it must end a word, a prefix form in
        graph_prefixes.PREFIX_END (each alternative of a negative phrase is a negative phrase
        of its own), and errors string [B]: "" for a good line,
        else why it is refused (graph_constraints.encode)."""
        glued = self.glued_tokenizer and self.glued_tokenizer.tokenize
        return graph_constraints.encode(self.tokenizer, constraints, self._word_ends.value,
                                        glued)

    @tf.function(autograph=False, input_signature=[IDS, tf.TensorSpec([None, None, None, None],
                                                                      tf.int32),
                                                   tf.TensorSpec([None, None, None], tf.int32),
                                                   ALPHA, EXTRA_LENGTH])
    def translate_constrained_ids(self, ids, positive, negative, alpha, extra_length):
        """translate_ids under constraints as encode_constraints gives them; adds unmet int32
        [B, K], the positive phrases each hypothesis misses by the search's count (the file
        decoder counts what it writes, as words). A `*` prefix form's row (ending in
        graph_prefixes.PREFIX_END) also bars the pieces that write a word beginning with it."""
        negative, prefix_texts = self.prefix_pieces.texts(negative)
        sequences, scores, unmet = translate_constrained(
            self.decoder_model, ids, positive, negative, beam_size=self.beam_size, alpha=alpha,
            extra_length=extra_length, word_starts=self._word_starts.value,
            word_ends=self._word_ends.value, eos_until_met=self.eos_until_met,
            prefix_bars=(prefix_texts, self.prefix_pieces.barred),
            no_repeat_ngram_size=self.no_repeat_ngram_size)
        result = self._texts(ids, sequences, scores)
        result["unmet"] = unmet
        return result

    @tf.function(autograph=False, input_signature=[STRINGS, STRINGS])
    def translate_constrained(self, inputs, constraints):
        """The best translation of each input under its constraint line (see
        encode_constraints), with the export's alpha and extra length. A line past a cap, or
        malformed, fails the call with InvalidArgument naming its row and the reason. unmet:
        the phrases each output (as returned, after the span repair) does not keep as whole
        words, for every row."""
        encoded = self.encode_constraints(constraints)
        with tf.control_dependencies([graph_constraints.check(encoded["errors"])]):
            ids = tf.identity(self._ids_with_eos(inputs))
        result = self.translate_constrained_ids(ids, encoded["positive"],
                                                encoded["negative"], *self._defaults())
        result = {name: value[:, 0] for name, value in result.items()}
        result["outputs"] = self._protected(inputs, result["outputs"][:, None])[:, 0]
        result["unmet"] = graph_constraints.unmet(result["outputs"], constraints)
        return result

    def _defaults(self):
        return (tf.constant(self.default_alpha, tf.float32),
                tf.constant(self.default_extra_length, tf.int32))

    @tf.function(autograph=False, input_signature=[STRINGS])
    def nbest(self, inputs):
        return self.translate_with_settings(inputs, *self._defaults())

    @tf.function(autograph=False, input_signature=[STRINGS])
    def serve(self, inputs):
        result = self.translate_with_settings(inputs, *self._defaults())
        return {"outputs": result["outputs"][:, 0], "scores": result["scores"][:, 0]}

    # ---- forced decoding ----------------------------------------------------------------------
    @tf.function(autograph=False, input_signature=[STRINGS, STRINGS])
    def score(self, inputs, targets):
        source, target = self._ids_with_eos(inputs), self._ids_with_eos(targets)
        logits = self.model({"inputs": source, "targets": target}, training=False)
        token_log_probs = tf.gather(tf.nn.log_softmax(logits), target, batch_dims=2)
        real = tf.not_equal(target, PAD_ID)
        log_prob = tf.reduce_sum(tf.where(real, token_log_probs, 0.0), axis=1)
        length = tf.reduce_sum(tf.cast(real, tf.int32), axis=1)
        return {"log_prob": log_prob,
                "score": log_prob / length_penalty(length, self.default_alpha),
                "target_length": length}

    @tf.function(autograph=False, input_signature=[STRINGS, STRINGS])
    def attention(self, inputs, targets):
        source, target = self._ids_with_eos(inputs), self._ids_with_eos(targets)
        weights = self.model.attention_weights(source, target)
        result = {kind: tf.stack(layers, axis=1) for kind, layers in weights.items()}
        result["source_tokens"] = token_strings(self.tokenizer, source)
        result["target_tokens"] = token_strings(self.tokenizer, target)
        return result

    @tf.function(autograph=False, input_signature=[])
    def describe(self):
        """The export's fixed settings and provenance, as a JSON string."""
        return tf.constant(self.metadata_json)

    def signatures(self):
        """Concrete functions to pass as tf.saved_model.save(..., signatures=...)."""
        return {
            "serving_default": self.serve.get_concrete_function(),
            "nbest": self.nbest.get_concrete_function(),
            "translate_with_settings": self.translate_with_settings.get_concrete_function(),
            "score": self.score.get_concrete_function(),
            "attention": self.attention.get_concrete_function(),
            "tokenize": self.tokenize.get_concrete_function(),
            "translate_ids": self.translate_ids.get_concrete_function(),
            "translate_constrained": self.translate_constrained.get_concrete_function(),
        }


def from_model_dir(model_dir, checkpoint_path=None, beam_size=None, alpha=None,
                   extra_length=None, precision="float32", protect="auto", eos_until_met=False,
                   no_repeat_ngram_size=None):
    """A TranslationModule for a trained model_dir; settings default to its DecodeConfig.

    precision: "float32" (default), or the opt-in "bfloat16" / "auto" beam search.
    protect: what the text-in signatures keep exactly (see TranslationModule).
    eos_until_met: the constrained search bars EOS until every phrase is met (see
    constrained_search; off by default, docs/design.md). beam_size, alpha, extra_length,
    no_repeat_ngram_size: None for the model_dir's DecodeConfig."""
    from t2t_lite.model_dir import loaded

    run = loaded.load(model_dir, checkpoint_path)
    return TranslationModule(run.model, run.tokenizer,
                             **run.decode_config.settings(beam_size, alpha, extra_length,
                                                          no_repeat_ngram_size),
                             metadata=run.metadata(), precision=precision, protect=protect,
                             eos_until_met=eos_until_met)
