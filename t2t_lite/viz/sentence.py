"""The attention weights a trained model puts on one sentence pair, ready for t2t_lite.viz.attention.

The target is either given (forced decoding: how does the model attend while reading this
translation?) or the model's own beam-search translation of the source (the paper's Figures 3-5
show a model's attention on its own inputs).
"""
import numpy as np
import tensorflow as tf

from t2t_lite.config import DecodeConfig
from t2t_lite.decoding.translate import translate
from t2t_lite.errors import UserError
from t2t_lite.inference import translation_module
from t2t_lite.ids import EOS_ID, EOS_TOKEN, PAD_ID, PAD_TOKEN

SPECIAL_TOKENS = {PAD_ID: PAD_TOKEN, EOS_ID: EOS_TOKEN}


def token_strings(tokenizer, ids):
    """One display string per id: each id decoded on its own, specials named."""
    ids = [int(i) for i in ids]
    pieces = translation_module.token_strings(tokenizer, tf.constant([ids or [PAD_ID]], tf.int32))
    pieces = pieces.numpy()[0]
    return [SPECIAL_TOKENS.get(i) or piece.decode("utf-8", errors="replace") or f"<{i}>"
            for i, piece in zip(ids, pieces)]


def _ids_with_eos(module, text, what):
    """The ids the model reads for `text`, through the decoder's own text path."""
    result = module.tokenize(tf.constant([text], tf.string))
    if int(result["token_counts"][0]) == 0:
        raise UserError(f"the {what} sentence is empty after tokenization")
    ids = np.asarray(result["ids"])[0].tolist()
    return ids[:ids.index(EOS_ID) + 1]


def translate_ids(model, source_ids, beam_size=DecodeConfig.beam_size, alpha=DecodeConfig.alpha,
                  extra_length=DecodeConfig.extra_length):
    """The best beam-search hypothesis for one source (ids ending with EOS), EOS included."""
    sequences, _ = translate(model, tf.constant([source_ids], tf.int32), beam_size=beam_size,
                             alpha=alpha, extra_length=extra_length)
    best = np.asarray(sequences)[0, 0].tolist()
    return best[:best.index(EOS_ID) + 1] if EOS_ID in best else best + [EOS_ID]


def sentence_attention(model, tokenizer, source, target=None, beam_size=DecodeConfig.beam_size,
                       alpha=DecodeConfig.alpha, extra_length=DecodeConfig.extra_length):
    """Attention weights of `model` on one sentence pair.

    Args:
      model: a Transformer (t2t_lite.models.transformer) with `attention_weights`.
      tokenizer: the model's t2t_lite.data.tokenizers.Tokenizer.
      source: the source sentence (str).
      target: its translation (str) to force, or None to use the model's beam-search output.

    Returns:
      dict with "weights" (kind -> list over layers of numpy [H, q, k], as
      t2t_lite.viz.attention takes them), "source_tokens", "target_tokens" (display strings,
      EOS included) and "translation" (the target text).
    """
    module = translation_module.TranslationModule(model, tokenizer, beam_size=beam_size,
                                                  alpha=alpha, extra_length=extra_length)
    source_ids = _ids_with_eos(module, source, "source")
    if target is None:
        target_ids = translate_ids(model, source_ids, beam_size, alpha, extra_length)
    else:
        target_ids = _ids_with_eos(module, target, "target")
    weights = model.attention_weights(tf.constant([source_ids], tf.int32),
                                      tf.constant([target_ids], tf.int32))
    translation = tokenizer.decode(tf.constant([target_ids], tf.int32)).numpy()[0]
    return {
        "weights": {kind: [np.asarray(layer)[0] for layer in layers]
                    for kind, layers in weights.items()},
        "source_tokens": token_strings(tokenizer, source_ids),
        "target_tokens": token_strings(tokenizer, target_ids),
        "translation": translation.decode("utf-8", errors="replace"),
    }


def plot_sentence(model_dir, source, output_dir, target=None, checkpoint_path=None,
                  beam_size=None, alpha=None, extra_length=None):
    """t2t-lite-attention-plot: a model_dir's attention on one sentence, as PNGs and HTML.

    Decoding settings default to the model_dir's DecodeConfig. Returns a short report (str):
    the translation and the files written.
    """
    from t2t_lite.model_dir import loaded
    from t2t_lite.viz import attention

    run = loaded.load(model_dir, checkpoint_path)
    model, tokenizer, decode_config, path = run.model, run.tokenizer, run.decode_config, run.checkpoint
    result = sentence_attention(
        model, tokenizer, source, target=target,
        beam_size=decode_config.beam_size if beam_size is None else beam_size,
        alpha=decode_config.alpha if alpha is None else alpha,
        extra_length=decode_config.extra_length if extra_length is None else extra_length)
    written = attention.write_attention(result["weights"], result["source_tokens"],
                                        result["target_tokens"], output_dir,
                                        title=f"Attention: {source}")
    return "\n".join([f"checkpoint: {path}",
                      f"{'target' if target is not None else 'translation'}: "
                      f"{result['translation']}",
                      f"html: {written['html']}",
                      f"png: {len(written['pngs'])} files in {output_dir}"])
