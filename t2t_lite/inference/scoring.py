"""Scoring given translations: log P(target | source) and the beam search's normalised score.

Works with anything that has the TranslationModule's `tokenize`, `score` and `settings` (a
module built from a checkpoint), or a loaded SavedModel (whose `describe` gives the settings and
whose `score` signature this calls), so the numbers are the export's own. Pairs are read a
chunk at a time, tokenized once to learn their lengths, sorted and batched by length within the
chunk (each batch's logits held to their share of batch_tokens, see batching.logits_budget),
scored, and written back in input order:
one output line per pair, "log_prob<TAB>score", where score = log_prob / ((5 + length) / 6)^alpha
with the length counting EOS, as the beam search ranks hypotheses.

Whatever a pair holds, it gets its line: a missing side (a TSV line without a tab, or the shorter
of two parallel files) is scored as empty, an empty target as the probability of translating to
nothing (EOS first), invalid UTF-8 is replaced (U+FFFD), a side longer than the model's limit is
truncated to it; each of these is counted in the summary. A TSV line of more than two columns is
an error naming its line (`paste src out` over n-best output with scores is not a pair), and so
are two parallel files of different line counts unless padding is asked for (line_input.py).
"""
import dataclasses
import time

import numpy as np
import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.inference import batch_decode, batching, streaming


@dataclasses.dataclass
class ScoreStats:
    pairs: int = 0
    missing_side: int = 0
    empty_target: int = 0
    bom_stripped: int = 0
    invalid_utf8: int = 0
    truncated: int = 0
    seconds: float = 0.0

    def summary(self):
        rate = self.pairs / self.seconds if self.seconds > 0 else 0.0
        return (f"scored {self.pairs} pairs in {self.seconds:.1f}s ({rate:.1f} pairs/s); "
                f"{self.missing_side} with a missing side, {self.empty_target} with an empty "
                f"target, {self.truncated} truncated, {self.invalid_utf8} with invalid UTF-8 "
                f"replaced" + (f", {self.bom_stripped} UTF-8 byte-order mark dropped"
                               if self.bom_stripped else ""))


def split_tsv(raw, stats, line_number):
    """A TSV line (bytes) -> (source, target) texts; counts what it had to mend."""
    columns = raw.split(b"\t")
    if len(columns) < 2:
        stats.missing_side += 1
        columns.append(b"")
    elif len(columns) > 2:
        raise UserError(f"line {line_number:,} of the pairs has {len(columns)} tab-separated "
                        "columns, not 2 (source<TAB>target)")
    return _clean(columns[0], stats), _clean(columns[1], stats)


def split_parallel(pair, stats, line_number=None):
    """A (source line, target line) of two parallel files, None past the shorter file's end ->
    (source, target) texts; a missing side is counted and scored as empty."""
    if None in pair:
        stats.missing_side += 1
    return tuple(_clean(side or b"", stats) for side in pair)


def _clean(raw, stats):
    text, invalid = batch_decode.clean_line(raw)
    stats.invalid_utf8 += invalid
    return text


def _token_counts(translator, texts):
    counts = []
    for start in range(0, len(texts), batch_decode.TOKENIZE_CHUNK):
        chunk = tf.constant(texts[start:start + batch_decode.TOKENIZE_CHUNK], tf.string)
        counts.extend(translator.tokenize(chunk)["token_counts"].numpy().tolist())
    return counts


def score_pairs(translator, pairs, batch_tokens=4096, stats=None):
    """[(source, target) texts] -> [(log_prob, score)] in the same order."""
    stats = stats if stats is not None else ScoreStats()
    fixed = translator.settings
    limit = fixed.max_source_tokens
    sources, targets = [p[0] for p in pairs], [p[1] for p in pairs]
    source_counts = _token_counts(translator, sources)
    target_counts = _token_counts(translator, targets)
    stats.pairs += len(pairs)
    stats.empty_target += sum(1 for c in target_counts if c == 0)
    stats.truncated += sum(1 for s, t in zip(source_counts, target_counts) if max(s, t) > limit)
    lengths = [min(max(s, t), limit) for s, t in zip(source_counts, target_counts)]
    results = [None] * len(pairs)
    fits = batching.logits_budget(batch_tokens, fixed.vocab_size)
    for batch in batching.plan_batches(lengths, batch_tokens, fits=fits):
        scored = translator.score(tf.constant([sources[i] for i in batch], tf.string),
                                  tf.constant([targets[i] for i in batch], tf.string))
        log_probs = np.asarray(scored["log_prob"], np.float64)
        scores = np.asarray(scored["score"], np.float64)
        for row, index in enumerate(batch):
            results[index] = (float(log_probs[row]), float(scores[row]))
    return results


def format_score(log_prob, score):
    return f"{log_prob:.6f}\t{score:.6f}"


def score_stream(translator, pair_input, output, chunk_lines, batch_tokens=4096):
    """Scores `pair_input` chunk by chunk into `output` (see streaming.run_chunks): a
    line_input.LineInput of TSV lines or a line_input.ParallelInput. Returns ScoreStats."""
    stats = ScoreStats()
    first_line = [output.lines_done + 1]

    def score_chunk(items, progress):
        start = time.monotonic()
        split = split_parallel if items and isinstance(items[0], tuple) else split_tsv
        pairs = [split(item, stats, first_line[0] + i) for i, item in enumerate(items)]
        first_line[0] += len(items)
        results = score_pairs(translator, pairs, batch_tokens=batch_tokens, stats=stats)
        stats.seconds += time.monotonic() - start
        progress(len(items))
        return [format_score(*result) for result in results]

    streaming.run_chunks(pair_input, output, chunk_lines, score_chunk, "scored", "pairs")
    stats.bom_stripped = pair_input.bom_stripped
    return stats
