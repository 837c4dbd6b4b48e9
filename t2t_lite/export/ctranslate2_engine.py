"""CTranslate2 as the file decoder's search engine (`t2t-lite-decoder --engine=ctranslate2`).

`CTranslate2Translator` offers the interface batch_decode.py drives (`describe`, `tokenize`,
`translate_ids`), so the decoder's guarantees hold unchanged: every line tokenized once, one line
out per line in, input order, counts of empty / truncated / invalid lines, problem postprocessing.
Text becomes ids and back with the model's own in-graph tokenizer (the vocabulary file the folder
carries), exactly as in the TensorFlow path; only the search runs in CTranslate2, through
`ctranslate2_export.translate_tokens` (t2t_lite's length limits and GNMT scores).

The folder is one written by `t2t-lite-exporter --format=ctranslate2`, or converted from a model_dir
into a temporary folder on the fly. `compute_type` is CTranslate2's: "default" runs the folder's
own precision, "int8" quantizes float32 weights while loading.
"""
import json
import os
import tempfile

import numpy as np
import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.export import ctranslate2_export, parallel_search, serving_module
from t2t_lite.ids import EOS_ID, PAD_ID


def _read_settings(folder):
    path = os.path.join(folder, ctranslate2_export.METADATA_FILE)
    if not (os.path.isfile(path) and os.path.isfile(os.path.join(folder, "model.bin"))):
        raise UserError(f"{folder} is not a CTranslate2 folder written by t2t-lite-exporter "
                        "--format=ctranslate2 (model.bin and t2t_lite.json missing)")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as error:
        raise UserError(f"{path}: cannot read ({error})") from None


def _import_ctranslate2():
    # CTranslate2's OpenMP (libgomp) threads spin ~300k times before they sleep. When other
    # processes share the cores, that made the same batch take 15-50 s instead of 1-5 s. A short
    # spin keeps that away and is even faster idle (measured on 2 cores, 256 sentences, fp32: idle
    # 1.65 s default, 1.39 s short spin, 2.76 s passive waiting; three decoders at once 15 s,
    # 5-6 s, 4.2-4.4 s). A user's own GOMP_SPINCOUNT or OMP_WAIT_POLICY wins.
    if "GOMP_SPINCOUNT" not in os.environ and "OMP_WAIT_POLICY" not in os.environ:
        os.environ["GOMP_SPINCOUNT"] = "1000"
    try:
        import ctranslate2
    except ImportError:
        raise UserError("--engine=ctranslate2 needs the ctranslate2 package: "
                        "pip install 't2t_lite[ctranslate2]'") from None
    return ctranslate2


class CTranslate2Translator:
    """A CTranslate2 folder with the decoder's translator interface.

    searches: how many translate_ids calls may run at once (parallel_search.py), each on
    cores // searches threads: CTranslate2's inter_threads and intra_threads."""

    def __init__(self, folder, compute_type="default", beam_size=None, keep_alive=None,
                 searches=1):
        ctranslate2 = _import_ctranslate2()
        from t2t_lite.data import tokenizers

        self.settings = _read_settings(folder)
        if beam_size is not None:
            self.settings["beam_size"] = int(beam_size)  # a search setting in CTranslate2
        self.settings["engine"] = f"ctranslate2 ({compute_type})"
        vocab_file = self.settings.get("vocab_file")
        # A file name, never a path: a folder someone sends must not read files outside it.
        if (not isinstance(vocab_file, str) or os.path.basename(vocab_file) != vocab_file
                or not os.path.isfile(os.path.join(folder, vocab_file))):
            raise UserError(f"{folder} holds no vocabulary file named by t2t_lite.json's "
                            f"vocab_file ({vocab_file!r}, a file name in the folder)")
        self.tokenizer = tokenizers.load_tokenizer(os.path.join(folder, vocab_file))
        self.tokens = ctranslate2_export.vocabulary_tokens(os.path.join(folder, vocab_file))
        self.token_ids = {token: i for i, token in enumerate(self.tokens)}
        self.max_length = int(self.settings["max_length"])
        try:
            self.translator = ctranslate2.Translator(
                folder, device="cpu", compute_type=compute_type, inter_threads=searches,
                intra_threads=max(1, parallel_search.available_cores() // searches))
        except (RuntimeError, ValueError) as error:
            raise UserError(f"CTranslate2 cannot load {folder} with compute type "
                            f"{compute_type}: {error}") from None
        self._keep_alive = keep_alive  # a temporary folder that must outlive the translator

    def describe(self):
        """The settings as batch_decode.settings() reads them (a JSON string tensor)."""
        return tf.constant(json.dumps(self.settings, sort_keys=True))

    def tokenize(self, inputs):
        """strings [B] -> ids [B, W] (at most max_length - 1 tokens, EOS, 0-padded) and the token
        counts before truncation, as TranslationModule.tokenize."""
        pieces = self.tokenizer.encode(inputs)
        return {"ids": serving_module.ids_with_eos(pieces, self.max_length),
                "token_counts": tf.cast(pieces.row_lengths(), tf.int32)}

    def translate_ids(self, ids, alpha, extra_length):
        """ids [B, W] as `tokenize` gives them -> n-best texts [B, K] and scores [B, K]."""
        ids = np.asarray(ids)
        # Every real token id is above EOS (UNK included); CTranslate2 appends EOS itself.
        sources = [[self.tokens[i] for i in row if i > EOS_ID] for row in ids.tolist()]
        beam_size = int(self.settings["beam_size"])
        results = ctranslate2_export.translate_tokens(
            self.translator, sources, beam_size=beam_size, alpha=float(alpha),
            extra_length=int(extra_length), max_length=self.max_length, nbest=beam_size)
        width = max((len(tokens) for hyps in results for tokens, _ in hyps), default=0) + 1
        output_ids = np.full([len(sources) * beam_size, width], PAD_ID, np.int32)
        scores = np.full([len(sources), beam_size], -np.inf, np.float32)
        for row, (source, hypotheses) in enumerate(zip(sources, results)):
            if not source:  # as the TensorFlow path: "" with score 0 in every slot
                scores[row] = 0.0
                continue
            for k, (tokens, score) in enumerate(hypotheses):
                output_ids[row * beam_size + k, :len(tokens)] = [
                    self.token_ids.get(t, self.token_ids["<unk>"]) for t in tokens]
                scores[row, k] = score
        texts = tf.reshape(self.tokenizer.decode(tf.constant(output_ids)), [-1, beam_size])
        return {"outputs": texts, "scores": tf.constant(scores)}


def from_model_dir(model_dir, checkpoint_path=None, compute_type="default", beam_size=None,
                   searches=1):
    """Converts a model_dir's checkpoint into a temporary folder (removed at exit) and loads it."""
    _import_ctranslate2()  # before the conversion imports it
    folder = tempfile.TemporaryDirectory(prefix="t2t_lite_ct2_")
    output = os.path.join(folder.name, "model")
    ctranslate2_export.export(model_dir, output, checkpoint_path=checkpoint_path)
    return CTranslate2Translator(output, compute_type=compute_type, beam_size=beam_size,
                                 keep_alive=folder, searches=searches)
