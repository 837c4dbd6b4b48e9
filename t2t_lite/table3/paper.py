"""The paper's Table 3: its rows (one hparams set each, `table3/<row>`), its numbers, its
column values of a row's configs and its evaluation settings (beam 4, alpha 0.6)."""
import dataclasses
from typing import Optional

# Table 3's evaluation (section 6.2): beam search as in section 6.1, no checkpoint averaging.
BEAM_SIZE, ALPHA = 4, 0.6
GROUPS = ("base", "A", "B", "C", "D", "E")


@dataclasses.dataclass(frozen=True)
class PaperRow:
    """One row of the paper's Table 3 (arXiv 1706.03762v7): its set and the paper's numbers on
    newstest2013 after 100K steps (params None where the paper leaves the cell blank)."""
    name: str
    ppl: float
    bleu: float
    params: Optional[int] = None  # millions

    @property
    def group(self):
        return "base" if self.name == "base" else self.name[0]


PAPER = (
    PaperRow("base", 4.92, 25.8, 65),
    PaperRow("A_heads1_dk512", 5.29, 24.9),
    PaperRow("A_heads4_dk128", 5.00, 25.5),
    PaperRow("A_heads16_dk32", 4.91, 25.8),
    PaperRow("A_heads32_dk16", 5.01, 25.4),
    PaperRow("B_dk16", 5.16, 25.1, 58),
    PaperRow("B_dk32", 5.01, 25.4, 60),
    PaperRow("C_layers2", 6.11, 23.7, 36),
    PaperRow("C_layers4", 5.19, 25.3, 50),
    PaperRow("C_layers8", 4.88, 25.5, 80),
    PaperRow("C_dmodel256_dk32", 5.75, 24.5, 28),
    PaperRow("C_dmodel1024_dk128", 4.66, 26.0, 168),
    PaperRow("C_dff1024", 5.12, 25.4, 53),
    PaperRow("C_dff4096", 4.75, 26.2, 90),
    PaperRow("D_dropout0", 5.77, 24.6),
    PaperRow("D_dropout02", 4.95, 25.5),
    PaperRow("D_smoothing0", 4.67, 25.3),
    PaperRow("D_smoothing02", 5.47, 25.7),
    PaperRow("E_learned_positions", 4.92, 25.7),
)
PAPER_STEPS = 100_000
ROWS = tuple(row.name for row in PAPER)
PAPER_BY_ROW = {row.name: row for row in PAPER}
GROUP_LABELS = {"E": "positional embedding instead of sinusoids"}


def set_name(row):
    return f"table3/{row}"


def row_columns(configs):
    model, train, _ = configs
    return {"N": model.num_layers, "d_model": model.d_model, "d_ff": model.d_ff,
            "h": model.num_heads, "d_k": model.key_dim, "d_v": model.value_dim,
            "P_drop": model.dropout, "eps_ls": train.label_smoothing,
            "positions": model.position_encoding}
