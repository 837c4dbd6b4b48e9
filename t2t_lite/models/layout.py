"""A model's variables described from its config alone: the one description the checks, the
parameter count and the FLOP count are derived from.

Each registered model class offers `layout(config, vocab_size) -> Layout` (models.layout_of finds
it). A Layout lists every weight under its checkpoint name with its shape and, for a weight used
as a matmul, which tokens pass through it (a source or a target position); the attention blocks
with their query and key sides; and the constants a built model holds besides its weights (a
sinusoid table). From it:
- `shapes()`: {checkpoint name under model/: shape}, compared with a checkpoint's index before
  anything is built (model_dir/limits.py);
- `parameter_count()`: the sum over the weights' shapes;
- `forward_flops(source_length, target_length)`: 2 FLOPs per multiply-add of every matmul weight
  over the tokens that pass through it, plus each attention's scores and weighted sums;
- `by_role()`: {Role: Weight}, what each weight is in the model whatever its name: the CTranslate2
  converter (export/ctranslate2_export.py) maps roles onto CTranslate2's names and reads each
  array along the name given here, so renaming a variable means changing the model and its layout
  only.

A Weight's name is also the path a built model holds it at (`model.encoder_layer_0.feed_forward.
inner._kernel`), a constant's too (`positions/table` for sinusoids).
"""
import dataclasses
import math
from typing import NamedTuple, Optional

SOURCE, TARGET = "source", "target"

# Role vocabulary. Stacks; sub-layers of a stack's layer, and its final norm (pre-norm only).
ENCODER, DECODER = "encoder", "decoder"
SELF_ATTENTION, CROSS_ATTENTION, FEED_FORWARD = "self_attention", "cross_attention", "feed_forward"
FINAL_NORM = "final_norm"
# Parts of a model as a whole.
EMBEDDING, POSITIONS = "embedding", "positions"


class Role(NamedTuple):
    """What a weight is:
      Role(part=EMBEDDING)                     the shared embedding and pre-softmax [vocab, d_model]
      Role(part=POSITIONS)                     the position table [max_length, d_model], learned
                                               (a weight) or sinusoids (a constant)
      Role(stack, sublayer=FINAL_NORM, part=)  "gamma" / "beta" of a stack's final layer norm
      Role(stack, layer, sublayer, part)       an attention sub-layer's "query_kernel",
                                               "query_bias" (likewise key, value, output), a
                                               feed-forward's "inner_kernel", "inner_bias",
                                               "outer_kernel", "outer_bias", and either's residual
                                               layer norm, "norm_gamma" / "norm_beta"
    """
    stack: str = ""  # ENCODER / DECODER
    layer: Optional[int] = None  # the layer's index in its stack
    sublayer: str = ""  # SELF_ATTENTION / CROSS_ATTENTION / FEED_FORWARD / FINAL_NORM
    part: str = ""


@dataclasses.dataclass(frozen=True)
class Weight:
    name: str  # the checkpoint's path under model/, and the built model's attribute path
    shape: tuple
    tokens: str = ""  # SOURCE / TARGET: a matmul each such position goes through once; "": none
    role: Optional[Role] = None  # what it is in the model (Role); None: a part no format maps


@dataclasses.dataclass(frozen=True)
class Attention:
    queries: str  # SOURCE / TARGET
    keys: str
    width: int  # heads × (d_k + d_v): the scores' and the weighted sum's multiply-adds per pair


@dataclasses.dataclass
class Layout:
    weights: list
    attention: list = dataclasses.field(default_factory=list)
    constants: list = dataclasses.field(default_factory=list)  # Weight entries that are no weights

    def shapes(self):
        return {f"model/{w.name}": list(w.shape) for w in self.weights}

    def parameter_count(self):
        return sum(math.prod(w.shape) for w in self.weights)

    def element_count(self):
        """Numbers a built model holds: its weights and its constants."""
        return self.parameter_count() + sum(math.prod(c.shape) for c in self.constants)

    def forward_flops(self, source_length, target_length):
        """Forward FLOPs of one sentence pair of these (padded) lengths."""
        length = {SOURCE: source_length, TARGET: target_length}
        matmuls = sum(2 * length[w.tokens] * math.prod(w.shape) for w in self.weights if w.tokens)
        return matmuls + sum(2 * length[a.queries] * length[a.keys] * a.width
                             for a in self.attention)

    def by_role(self):
        """{Role: Weight} of the weights and constants that have a role."""
        return {w.role: w for w in self.weights + self.constants if w.role is not None}
