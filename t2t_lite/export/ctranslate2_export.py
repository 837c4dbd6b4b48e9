"""A CTranslate2 model folder from a t2t_lite model_dir (`t2t-lite-exporter --format=ctranslate2`).

CTranslate2 (OpenNMT's C++ inference engine) runs the same Transformer with its own fused kernels,
int8 weights if asked, and no Python per step. The folder written here loads with
`ctranslate2.Translator(folder)` and reproduces t2t_lite's translations (tested token for token,
greedy and beam 4, on a trained model):

    folder/model.bin                 weights (float32, or quantized with `quantization`)
    folder/config.json               tokens and layer norm epsilon, read by CTranslate2
    folder/shared_vocabulary.json    one token per id (source, target and softmax share it)
    folder/<vocabulary file>         the model_dir's SentencePiece / WordPiece / symbol file
    folder/t2t_lite.json             the folder's format version (formats.CTRANSLATE2), beam size,
                                     alpha, extra length, max length, vocabulary file, provenance
                                     (CTranslate2 ignores it)

How each part of t2t_lite maps onto CTranslate2's TransformerSpec:

| t2t_lite | CTranslate2 |
|---|---|
| post-norm LayerNorm(x + f(x)) / pre-norm x + f(LayerNorm(x)) + final norms | `pre_norm=False` / `pre_norm=True` (its final encoder/decoder norms) |
| one embedding matrix, times sqrt(d_model) | the same array as encoder embeddings, decoder embeddings and the decoder's output projection (stored once), `scale_embeddings=True` |
| sinusoids, interleaved (paper) or [sin, cos] (t2t), or learned positions | the position table itself (`position_encodings.encodings`), so every layout converts exactly |
| Q, K, V kernels [d, H, d_k], output [H, d_v, d], biases optional | fused QKV (self) / Q + fused KV (cross) linears [out, in], biases when the model has them |
| feed-forward inner/outer Dense, ReLU | `ffn.linear_0` / `linear_1`, RELU |
| layer_norm_epsilon | config `layer_norm_epsilon` |
| ids 0 = pad (the decoder start symbol), 1 = EOS, 2 = unk; EOS appended to every source | `decoder_start_token="<pad>"`, `eos_token="</s>"`, `unk_token="<unk>"`, `add_source_eos=True` |
| GNMT length penalty ((5 + len) / 6)^alpha, len counting EOS | no equivalent: CTranslate2 4.x divides by len^alpha; `inference/ctranslate2_engine.translate_tokens` re-ranks its n-best with GNMT's penalty |

The mapping names no variable of the model: it asks the model's layout (models/layout.py) for each
weight by role (`Role(DECODER, 0, CROSS_ATTENTION, "query_kernel")`) and reads it from the model
under the checkpoint name the layout gives (`layout_arrays`), so the conversion takes the very
variables the model_dir's checks count, and a variable renamed in the model and its layout converts
unchanged. A weight the mapping leaves unused is refused rather than dropped.

Refused with a UserError (CTranslate2 has one head size for queries, keys and values): d_k != d_v.
A checkpoint the model_dir cannot load, and an existing non-empty output folder, are UserErrors too.

Beam search differs in one detail: CTranslate2 retires a beam that ends in EOS (the beam narrows)
while t2t_lite keeps K alive beams from the top 2K candidates, and a hypothesis that reaches the
length limit keeps no EOS in CTranslate2 (t2t_lite forces EOS there and counts its probability).
Best translations agree whenever the best hypothesis ends with its own EOS, as for a trained model.
"""
import dataclasses
import functools
import json
import os
import shutil
import tempfile

import numpy as np

from t2t_lite import formats
from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_TOKEN, PAD_TOKEN, UNK_TOKEN
from t2t_lite.inference.ctranslate2_engine import import_ctranslate2
from t2t_lite.inference.saved_model import METADATA_NAME
from t2t_lite.models import layout_of
from t2t_lite.models.layout import (
    CROSS_ATTENTION, DECODER, EMBEDDING, ENCODER, FEED_FORWARD, FINAL_NORM, POSITIONS,
    SELF_ATTENTION, Role)


def _specs():
    import_ctranslate2("--format=ctranslate2")
    from ctranslate2 import specs

    return specs


def check_convertible(config):
    """Raises UserError when CTranslate2 cannot express the model described by `config`."""
    if config.key_dim != config.value_dim:
        raise UserError(
            f"cannot convert to CTranslate2: d_k={config.key_dim} differs from d_v="
            f"{config.value_dim}, and CTranslate2 has one head size for queries, keys and values")


def _check_tokens(tokens, vocab_size):
    if len(tokens) != vocab_size:
        raise UserError(f"the vocabulary has {len(tokens)} tokens but the model {vocab_size}")
    if tuple(tokens[:3]) != (PAD_TOKEN, EOS_TOKEN, UNK_TOKEN):
        raise UserError(f"cannot convert to CTranslate2: the vocabulary must start with "
                        f"{PAD_TOKEN} {EOS_TOKEN} {UNK_TOKEN} (ids 0, 1, 2), got {tokens[:3]}")
    seen = {}
    for i, token in enumerate(tokens):
        if token in seen:
            raise UserError(f"cannot convert to CTranslate2: token {token!r} appears twice in "
                            f"the vocabulary (ids {seen[token]} and {i}); CTranslate2 takes "
                            "tokens as strings")
        seen[token] = i


# ---- weights ----------------------------------------------------------------------------------
def layout_arrays(model):
    """{Role: float32 array} of every weight and constant the model's layout lists
    (models/layout.py), read from the built model along the name the layout gives
    (`encoder_layer_0/self_attention/query_kernel`). A weight without a role has no place in
    CTranslate2's Transformer: refused."""
    layout = layout_of(model.config, model.vocab_size)
    unmapped = [weight.name for weight in layout.weights if weight.role is None]
    if unmapped:
        raise _no_counterpart(unmapped)
    arrays = {}
    for role, weight in layout.by_role().items():
        value = _array(functools.reduce(getattr, weight.name.split("/"), model))
        assert value.shape == tuple(weight.shape), (weight.name, value.shape, weight.shape)
        arrays[role] = value
    return arrays


def _no_counterpart(weight_names):
    return UserError(f"cannot convert to CTranslate2: the model's weights "
                     f"{', '.join(weight_names)} have no counterpart in CTranslate2's Transformer")


def _array(variable):
    return np.asarray(variable, dtype=np.float32)


def _qkv(arrays, role):
    """[(kernel [d, H*k], bias [H*k] or None)] for query, key and value of one attention layer;
    role(part) is the layer's Role of a part."""
    result = []
    for name in ("query", "key", "value"):
        kernel = arrays.pop(role(f"{name}_kernel"))
        bias = arrays.pop(role(f"{name}_bias"), None)  # absent without attention_bias
        result.append((kernel.reshape(kernel.shape[0], -1),
                       None if bias is None else bias.reshape(-1)))
    return result


def _set_linear(spec, kernel, bias=None):
    """Keras kernels are [in, out]; CTranslate2 linears are [out, in]."""
    spec.weight = np.ascontiguousarray(kernel.T)
    if bias is not None:
        spec.bias = np.ascontiguousarray(bias)


def _set_fused(spec, parts):
    _set_linear(spec, np.concatenate([k for k, _ in parts], axis=1),
                None if parts[0][1] is None else np.concatenate([b for _, b in parts]))


def _set_layer_norm(spec, arrays, gamma, beta):
    spec.gamma = arrays.pop(gamma)
    spec.beta = arrays.pop(beta)


def _set_attention(spec, arrays, stack, index, kind):
    """One attention sub-layer (e.g. DECODER layer 0's CROSS_ATTENTION) and its residual's layer
    norm."""
    role = functools.partial(Role, stack, index, kind)
    query, key, value = _qkv(arrays, role)
    if kind == SELF_ATTENTION:
        _set_fused(spec.linear[0], [query, key, value])
    else:
        _set_linear(spec.linear[0], *query)
        _set_fused(spec.linear[1], [key, value])
    output = arrays.pop(role("output_kernel"))
    _set_linear(spec.linear[-1], output.reshape(-1, output.shape[-1]),
                arrays.pop(role("output_bias"), None))
    _set_layer_norm(spec.layer_norm, arrays, role("norm_gamma"), role("norm_beta"))


def _set_feed_forward(spec, arrays, stack, index):
    role = functools.partial(Role, stack, index, FEED_FORWARD)
    _set_linear(spec.linear_0, arrays.pop(role("inner_kernel")), arrays.pop(role("inner_bias")))
    _set_linear(spec.linear_1, arrays.pop(role("outer_kernel")), arrays.pop(role("outer_bias")))
    _set_layer_norm(spec.layer_norm, arrays, role("norm_gamma"), role("norm_beta"))


def _set_final_norm(spec, arrays, stack):
    _set_layer_norm(spec, arrays, Role(stack, sublayer=FINAL_NORM, part="gamma"),
                    Role(stack, sublayer=FINAL_NORM, part="beta"))


def model_spec(model, tokens):
    """A ctranslate2 TransformerSpec holding the weights of a t2t_lite Transformer."""
    specs = _specs()
    config = model.config
    check_convertible(config)
    _check_tokens(tokens, model.vocab_size)
    pre_norm = config.norm_position == "pre"
    d_model = config.d_model
    head_dim = None if config.key_dim * config.num_heads == d_model else config.key_dim
    encoder = specs.TransformerEncoderSpec(config.num_layers, config.num_heads, pre_norm=pre_norm,
                                           head_dim=head_dim)
    decoder = specs.TransformerDecoderSpec(config.num_layers, config.num_heads, pre_norm=pre_norm,
                                           head_dim=head_dim)

    arrays = layout_arrays(model)
    embeddings = arrays.pop(Role(part=EMBEDDING))
    # Learned positions are a weight, sinusoids a constant of the layout: the table either way.
    positions = arrays.pop(Role(part=POSITIONS))
    for stack in (encoder, decoder):
        stack.scale_embeddings = True
        stack.position_encodings.encodings = positions
    encoder.embeddings[0].weight = embeddings
    decoder.embeddings.weight = embeddings
    decoder.projection.weight = embeddings  # the pre-softmax matrix, no bias

    for index, spec in enumerate(encoder.layer):
        _set_attention(spec.self_attention, arrays, ENCODER, index, SELF_ATTENTION)
        _set_feed_forward(spec.ffn, arrays, ENCODER, index)
    for index, spec in enumerate(decoder.layer):
        _set_attention(spec.self_attention, arrays, DECODER, index, SELF_ATTENTION)
        _set_attention(spec.attention, arrays, DECODER, index, CROSS_ATTENTION)
        _set_feed_forward(spec.ffn, arrays, DECODER, index)
    if pre_norm:
        _set_final_norm(encoder.layer_norm, arrays, ENCODER)
        _set_final_norm(decoder.layer_norm, arrays, DECODER)
    if arrays:  # roles the layout gives that this mapping does not place
        by_role = layout_of(config, model.vocab_size).by_role()
        raise _no_counterpart(by_role[role].name for role in arrays)

    spec = specs.TransformerSpec(encoder, decoder)
    spec.config.unk_token = UNK_TOKEN
    spec.config.bos_token = PAD_TOKEN  # t2t_lite has no BOS; the decoder starts from pad
    spec.config.eos_token = EOS_TOKEN
    spec.config.decoder_start_token = PAD_TOKEN
    spec.config.add_source_bos = False
    spec.config.add_source_eos = True
    spec.config.layer_norm_epsilon = float(config.layer_norm_epsilon)
    spec.register_source_vocabulary(tokens)
    spec.register_target_vocabulary(tokens)
    return spec


def convert(model, tokens, output_dir, vocab_path=None, quantization=None, metadata=None):
    """Writes `model` as a CTranslate2 folder at output_dir (must not exist or be empty).

    Written to a temporary sibling folder and renamed when complete. Returns output_dir.
    """
    spec = model_spec(model, tokens)
    if os.path.exists(output_dir) and (not os.path.isdir(output_dir) or os.listdir(output_dir)):
        raise UserError(f"{output_dir} exists and is not an empty directory; CTranslate2 exports "
                        "go to a new folder")
    metadata = dict(metadata or {})
    if vocab_path:
        spec.register_file(vocab_path)
        metadata["vocab_file"] = os.path.basename(vocab_path)
    metadata.update(quantization=quantization or "float32",
                    model_config=dataclasses.asdict(model.config), vocab_size=int(model.vocab_size))
    try:
        spec.validate()
        spec.optimize(quantization=quantization)
    except (ValueError, NotImplementedError) as error:
        raise UserError(f"cannot convert to CTranslate2: {error}") from None

    parent = os.path.dirname(os.path.abspath(output_dir))
    try:
        os.makedirs(parent, exist_ok=True)
        tmp_dir = tempfile.mkdtemp(prefix=".incomplete-", dir=parent)
    except OSError as error:
        raise _failed(error, output_dir) from None
    try:
        try:
            _save(spec, tmp_dir, metadata)
        except Exception as error:  # pylint: disable=broad-except  (re-raised unless a write)
            raise _failed(error, output_dir) from None
        if os.path.isdir(output_dir):
            os.rmdir(output_dir)  # empty, checked above
        os.rename(tmp_dir, output_dir)
    finally:
        shutil.rmtree(tmp_dir, ignore_errors=True)
    return output_dir


def _save(spec, folder, metadata):
    spec.save(folder)
    with open(os.path.join(folder, METADATA_NAME), "w", encoding="utf-8") as f:
        # The other keys sorted (nested ones too), the format first, as formats.stamped
        # promises: json's sort_keys would put it among them.
        json.dump(formats.stamped(json.loads(json.dumps(metadata, sort_keys=True)),
                                  formats.CTRANSLATE2), f, indent=2)
        f.write("\n")


def _failed(error, output_dir):
    """`error` itself unless it is a failed write (a full disk, a quota, EIO); then one line."""
    from t2t_lite import process_end

    if not process_end.write_failure_reason(error):
        return error
    return process_end.write_failed(error, output_dir, "nothing was written there (its temporary "
                                    "folder is removed); free some space and export again")
