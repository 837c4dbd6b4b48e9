"""One record per translated line, and the writers that turn it into the output's line.

    Translation(source, hypotheses, truncated, sentences, spans_repaired, constraints_met)
    line_writer("text" | "jsonl", print_scores)(record) -> the output line, without its newline

The search and the line checks fill a Translation per input line
(batch_decode.translation_records): t2t-lite-po reads them in process (po/engine.py), and the
decoder (batch_decode.decode_lines) hands them to the writer chosen by --output_format: "text"
the best translation (n-best and scores tab-separated, as format_hypotheses writes them),
"jsonl" one JSON object per line with every field (docs/decoding.md lists them). Either way one
output line per input line, so resuming and sharding work alike.
"""
import dataclasses
import json
import math
from typing import List, Optional, Tuple

OUTPUT_FORMATS = ("text", "jsonl")


@dataclasses.dataclass
class Translation:
    """What became of one input line."""
    source: str  # the line as translated (invalid UTF-8 replaced, a carriage return a space)
    hypotheses: List[Tuple[str, float]]  # best first: (translation, score); [] for a blank line
    truncated: bool = False  # the source was longer than the model reads: its end was cut
    sentences: int = 1  # translated sentence by sentence when > 1, the translations joined
    spans_repaired: bool = False  # the protected-span repair changed the best translation
    constraints_met: Optional[bool] = None  # None: no constraints; else all phrases kept

    def __post_init__(self):
        # A beam slot no hypothesis reached scores -inf: it is no translation, and JSON has no
        # number for it.
        self.hypotheses = [(text, score) for text, score in self.hypotheses
                           if math.isfinite(score)]

    @property
    def best(self):
        return self.hypotheses[0][0] if self.hypotheses else ""

    def as_json(self):
        return {"source": self.source, "translation": self.best,
                "hypotheses": [{"text": text, "score": round(score, 6)}
                               for text, score in self.hypotheses],
                "truncated": self.truncated, "sentences": self.sentences,
                "spans_repaired": self.spans_repaired, "constraints_met": self.constraints_met}


def _one_line(text):
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def format_hypotheses(hypotheses, print_scores=False):
    """[(text, score), ...] -> the text format's line (without the newline)."""
    if print_scores:
        return "\t".join(f"{score:.6g}\t{_one_line(text)}" for text, score in hypotheses)
    return "\t".join(_one_line(text) for text, _ in hypotheses)


def line_writer(output_format="text", print_scores=False):
    """record -> output line for an --output_format."""
    if output_format == "jsonl":
        # ensure_ascii keeps U+2028 and friends, which some readers take for line ends, escaped.
        return lambda record: json.dumps(record.as_json(), ensure_ascii=True, allow_nan=False)
    if output_format == "text":
        return lambda record: format_hypotheses(record.hypotheses, print_scores)
    raise ValueError(f"output format must be one of {OUTPUT_FORMATS}, got {output_format!r}")
