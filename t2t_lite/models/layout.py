"""A model's variables described from its config alone: the one description the checks, the
parameter count and the FLOP count are derived from.

Each registered model class offers `layout(config, vocab_size) -> Layout` (models.layout_of finds
it). A Layout lists every weight under its checkpoint name with its shape and, for a weight used
as a matmul, which tokens pass through it (a source or a target position); the attention blocks
with their query and key sides; and the constants a built model holds besides its weights (a
sinusoid table). From it:
- `shapes()`: {checkpoint name under model/: shape}, compared with a checkpoint's index before
  anything is built (model_dir/check.py);
- `parameter_count()`: the sum over the weights' shapes;
- `forward_flops(source_length, target_length)`: 2 FLOPs per multiply-add of every matmul weight
  over the tokens that pass through it, plus each attention's scores and weighted sums.
"""
import dataclasses
import math

SOURCE, TARGET = "source", "target"


@dataclasses.dataclass(frozen=True)
class Weight:
    name: str  # the checkpoint's path under model/
    shape: tuple
    tokens: str = ""  # SOURCE / TARGET: a matmul each such position goes through once; "": none


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
