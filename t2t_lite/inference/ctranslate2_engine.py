"""CTranslate2 as the file decoder's search engine (`t2t-lite-decoder --engine=ctranslate2`).

`CTranslate2Translator` offers the interface batch_decode.py drives (`settings`, `tokenize`,
`translate_ids`), so the decoder's guarantees hold unchanged: every line tokenized once, one line
out per line in, input order, counts of empty / truncated / invalid lines, problem postprocessing.
Text becomes ids and back with the model's own in-graph tokenizer (the vocabulary file the folder
carries), exactly as in the TensorFlow path; only the search runs in CTranslate2, through
`translate_tokens` (t2t_lite's length limits and GNMT scores).

The folder is one written by `t2t-lite-exporter --format=ctranslate2`
(export/ctranslate2_export.py).
`compute_type` is CTranslate2's: "default" runs the folder's own precision, "int8" quantizes
float32 weights while loading.
"""
import json
import os

import numpy as np
import tensorflow as tf

from t2t_lite import cpu, formats
from t2t_lite.config import DecodeConfig, ModelConfig
from t2t_lite.data.tokenizers import load_tokenizer, vocabulary_tokens
from t2t_lite.decoding.beam_search import length_penalty
from t2t_lite.decoding.translate import clamp_to_limit
from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_ID, EOS_TOKEN, PAD_ID, UNK_ID
from t2t_lite.inference.saved_model import METADATA_NAME
from t2t_lite.inference.translation_module import ids_with_eos
from t2t_lite.inference.translator import DecodeSettings
from t2t_lite.model_dir import limits


def read_settings(folder):
    path = os.path.join(folder, METADATA_NAME)  # beside model.bin; CTranslate2 ignores it
    if not (os.path.isfile(path) and os.path.isfile(os.path.join(folder, "model.bin"))):
        raise UserError(f"{folder} is not a CTranslate2 folder written by t2t-lite-exporter "
                        f"--format=ctranslate2 (model.bin and {METADATA_NAME} missing)")
    try:
        with open(path, encoding="utf-8") as f:
            settings = json.load(f)
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: cannot read ({error})") from None
    if not isinstance(settings, dict):  # before any setting is read or overridden
        limits.check_settings(settings, path)  # says it holds no settings
    formats.check_version(settings, formats.CTRANSLATE2, path)
    return settings


def import_ctranslate2(purpose="--engine=ctranslate2"):
    """The ctranslate2 module, or a UserError saying how to install it for `purpose`."""
    # CTranslate2's OpenMP threads spin long before they sleep, which stalls them badly when other
    # processes share the cores; a short spin avoids that and costs nothing idle. A user's own
    # GOMP_SPINCOUNT or OMP_WAIT_POLICY wins.
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "1000"
    try:
        import ctranslate2
    except ImportError:
        raise UserError(f"{purpose} needs the ctranslate2 package: "
                        "pip install 't2t_lite[ctranslate2]'") from None
    return ctranslate2


class CTranslate2Translator:
    """A CTranslate2 folder with the decoder's translator interface.

    searches: how many translate_ids calls may run at once (parallel_search.py), each on
    cores // searches threads: CTranslate2's inter_threads and intra_threads."""

    supports_constraints = False

    def __init__(self, folder, compute_type="default", beam_size=None, keep_alive=None,
                 searches=1, no_repeat_ngram_size=None):
        ctranslate2 = import_ctranslate2()
        values = read_settings(folder)
        # Search settings in CTranslate2, taken per call: a flag's value replaces the folder's.
        if beam_size is not None:
            values["beam_size"] = int(beam_size)
        if no_repeat_ngram_size is not None:
            values["no_repeat_ngram_size"] = int(no_repeat_ngram_size)
        values["engine"] = f"ctranslate2 ({compute_type})"
        # The folder is data someone may have sent: its settings are held to a model_dir's
        # bounds before CTranslate2 loads it.
        self.settings = DecodeSettings.from_values(values, os.path.join(folder, METADATA_NAME))
        vocab_file = values.get("vocab_file")
        # A file name, never a path: a folder someone sends must not read files outside it.
        if (not isinstance(vocab_file, str) or os.path.basename(vocab_file) != vocab_file
                or not os.path.isfile(os.path.join(folder, vocab_file))):
            raise UserError(f"{folder} holds no vocabulary file named by {METADATA_NAME}'s "
                            f"vocab_file ({vocab_file!r}, a file name in the folder)")
        self.tokenizer = load_tokenizer(os.path.join(folder, vocab_file))
        self.tokens = vocabulary_tokens(os.path.join(folder, vocab_file))
        self.token_ids = {token: i for i, token in enumerate(self.tokens)}
        self.max_length = self.settings.max_length
        try:
            self.translator = ctranslate2.Translator(
                folder, device="cpu", compute_type=compute_type, inter_threads=searches,
                intra_threads=max(1, cpu.available_cores() // searches))
        except (RuntimeError, ValueError) as error:
            raise UserError(f"CTranslate2 cannot load {folder} with compute type "
                            f"{compute_type}: {error}") from None
        self._keep_alive = keep_alive  # a temporary folder that must outlive the translator

    @property
    def compute_type(self):
        """The compute type CTranslate2 runs, `auto` / `default` resolved for this machine."""
        return self.translator.compute_type

    def tokenize(self, inputs):
        """strings [B] -> ids [B, W] (at most max_length - 1 tokens, EOS, 0-padded) and the token
        counts before truncation, as TranslationModule.tokenize."""
        pieces = self.tokenizer.encode(inputs)
        return {"ids": ids_with_eos(pieces, self.max_length),
                "token_counts": tf.cast(pieces.row_lengths(), tf.int32)}

    def translate_ids(self, ids, alpha, extra_length):
        """ids [B, W] as `tokenize` gives them -> n-best texts [B, K] and scores [B, K]."""
        ids = np.asarray(ids)
        # Every real token id is above EOS (UNK included); CTranslate2 appends EOS itself.
        sources = [[self.tokens[i] for i in row if i > EOS_ID] for row in ids.tolist()]
        beam_size = self.settings.beam_size
        results = translate_tokens(
            self.translator, sources, beam_size=beam_size, alpha=float(alpha),
            extra_length=int(extra_length), max_length=self.max_length, nbest=beam_size,
            no_repeat_ngram_size=self.settings.no_repeat_ngram_size)
        width = max((len(tokens) for hyps in results for tokens, _ in hyps), default=0) + 1
        output_ids = np.full([len(sources) * beam_size, width], PAD_ID, np.int32)
        scores = np.full([len(sources), beam_size], -np.inf, np.float32)
        for row, (source, hypotheses) in enumerate(zip(sources, results)):
            if not source:  # as the TensorFlow path: "" with score 0 in every slot
                scores[row] = 0.0
                continue
            for k, (tokens, score) in enumerate(hypotheses):
                output_ids[row * beam_size + k, :len(tokens)] = [
                    self.token_ids.get(t, UNK_ID) for t in tokens]
                scores[row, k] = score
        texts = tf.reshape(self.tokenizer.decode(tf.constant(output_ids)), [-1, beam_size])
        return {"outputs": texts, "scores": tf.constant(scores)}


def decode_limits(source_tokens, extra_length, max_length):
    """CTranslate2 `max_decoding_length` for a source of `source_tokens` tokens (EOS not counted)
    that matches t2t_lite's limit: at most source + 1 + extra_length output tokens counting EOS,
    and at most max_length; CTranslate2 counts generated tokens without a final EOS. extra_length
    is clamped as t2t_lite clamps it (decoding/translate.py's step budget)."""
    extra_length = clamp_to_limit(extra_length, max_length)
    return max(1, min(source_tokens + 1 + extra_length, max_length) - 1)


def translate_tokens(translator, sources, beam_size=DecodeConfig.beam_size,
                     alpha=DecodeConfig.alpha, extra_length=DecodeConfig.extra_length,
                     max_length=ModelConfig.max_length, nbest=1, max_batch_size=64,
                     no_repeat_ngram_size=DecodeConfig.no_repeat_ngram_size):
    """t2t_lite's translations of token lists through a ctranslate2.Translator.

    Args:
      translator: a ctranslate2.Translator on a folder written by t2t-lite-exporter
        --format=ctranslate2.
      sources: list of source token lists (strings, without EOS; the model adds it).
      beam_size, alpha, extra_length: as t2t_lite's decoder (alpha is the GNMT exponent).
      max_length: the model's max_length (t2t_lite.json's), which bounds every output.
      nbest: hypotheses to return per source (<= beam_size).
      no_repeat_ngram_size: the rule against loops, CTranslate2's own (t2t_lite's beam search
        counts and normalises as it does: decoding/repeats.py); 0: off.

    Returns:
      list (same order) of n-best lists [(target tokens without EOS, score)], best first, where
      score = log P(target + EOS | source) / ((5 + length) / 6) ** alpha, length counting EOS,
      as t2t_lite's beam search scores. An empty source gives [([], 0.0)].

    CTranslate2 takes one length limit per call, and t2t_lite one per sentence (its length +
    extra_length): sentences are grouped by length so each gets its own limit. CTranslate2 4.x
    normalises finished hypotheses by length ** alpha rather than GNMT's penalty, so the beam's
    n-best (scores recovered as log probabilities) is re-ranked with the GNMT penalty here. A
    hypothesis cut by the length limit ends without EOS in CTranslate2, its score then lacks the
    EOS probability t2t_lite counts. `min_decoding_length=0`: t2t_lite may translate to nothing
    (EOS first), while CTranslate2's default of 1 forbids EOS at the first step.
    """
    nbest = max(1, min(int(nbest), int(beam_size)))
    results = [None] * len(sources)
    by_length = {}
    for index, source in enumerate(sources):
        if not source:
            results[index] = [([], 0.0)]
        else:
            source = list(source)[:max_length - 1]
            by_length.setdefault(len(source), []).append((index, source))
    ct2_alpha = float(alpha) if beam_size > 1 else 0.0
    for length, items in sorted(by_length.items()):
        outputs = translator.translate_batch(
            [source for _, source in items], beam_size=int(beam_size),
            num_hypotheses=int(beam_size), length_penalty=ct2_alpha,
            max_decoding_length=decode_limits(length, extra_length, max_length),
            min_decoding_length=0, return_scores=True, return_end_token=True,
            max_batch_size=max_batch_size, no_repeat_ngram_size=int(no_repeat_ngram_size))
        lengths = np.array([len(tokens) for output in outputs for tokens in output.hypotheses])
        penalties = iter(length_penalty(lengths, alpha).numpy().tolist() if len(lengths) else [])
        for (index, _), output in zip(items, outputs):
            hypotheses = []
            for tokens, score in zip(output.hypotheses, output.scores):
                log_prob = score * len(tokens) ** ct2_alpha
                if tokens and tokens[-1] == EOS_TOKEN:
                    tokens = tokens[:-1]
                hypotheses.append((tokens, log_prob / next(penalties)))
            hypotheses.sort(key=lambda h: -h[1])
            results[index] = hypotheses[:nbest]
    return results
