"""Opt-in bfloat16 decoding: a twin of the model that computes in bfloat16.

float32 stays the default everywhere. On a CPU with bfloat16 units (AVX512_BF16, AMX) oneDNN runs
the decoder's matmuls in bfloat16 markedly faster; attention softmaxes, layer-norm statistics, the
logits' log-sum-exp and the beam scores stay float32 (the model's own float32 islands).
Translations can differ from float32's where two hypotheses are nearly tied.

The twin is a second model of the same config, built by models.build under Keras' "bfloat16"
policy, holding a bfloat16 copy of the weights taken when it is made (decoding serves a fixed
checkpoint or export). Weights stored in bfloat16 rather than cast from float32 at every use (the
mixed_bfloat16 policy) decode faster: a step would otherwise cast every kernel and the
[vocab, d_model] embedding again. The matmuls see the same bfloat16 weights either way; only the
layer norms' scale and offset are rounded to bfloat16 too.
"""
from t2t_lite import cpu, models

PRECISIONS = ("float32", "bfloat16", "auto")


def choose(requested):
    """(precision, why) for a requested decode precision: "float32", "bfloat16", or "auto"
    (bfloat16 only where the machine has bfloat16 units and a matmul probe runs faster:
    cpu.choose_precision)."""
    if requested not in PRECISIONS:
        raise ValueError(f"decode precision must be one of {PRECISIONS}, got {requested!r}")
    precision, why = cpu.choose_precision(requested, "bfloat16")
    return precision, why or "requested"


def twin(model, precision):
    """The model itself for "float32"; for "bfloat16" a copy under the bfloat16 policy."""
    if precision == "float32":
        return model
    if precision != "bfloat16":
        raise ValueError(f"decode precision must be float32 or bfloat16, got {precision!r}")
    copy = models.build(model.config, model.vocab_size, dtype_policy="bfloat16",
                        name=f"{model.name}_bfloat16")
    copy.set_weights(model.get_weights())
    return copy
