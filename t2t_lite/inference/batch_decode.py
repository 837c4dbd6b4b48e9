"""File-level batch decoding: lines in, exactly one output line per input line, in input order.

Works with anything that has the TranslationModule interface (`tokenize`, `translate_ids`, and
its `settings`, or a loaded SavedModel's `describe`): a module built from a checkpoint or a
loaded SavedModel. Every line is tokenized once
(`tokenize`); the ids are sorted by length (longest first, so memory trouble shows up at once),
grouped into batches of about `batch_tokens` source tokens, translated (`translate_ids`), and
written back in input order. A batch is also held to the bytes a step of its search really holds,
the constrained search's state included (batching.py: search_budget, plan_batches); one line too
big for a step alone ends in one error naming the setting to change. After the search each line
goes through line_checks.py: its protected spans repaired, its constraints counted.

Whatever a line holds, it yields one output line: bytes that are not UTF-8 are replaced (U+FFFD)
and counted, a carriage return inside a line is a space, an empty or blank line gives an empty
line, and sources longer than the model's limit are truncated (and counted) inside the graph.

Output format: the best translation per line; with nbest=N, N hypotheses separated by tabs, and
with print_scores each hypothesis preceded by its score and a tab ("score\\thyp\\tscore\\thyp...").
Tabs, carriage returns and newlines inside hypotheses are written as spaces.

A long line of several sentences can be split into its sentences first (t2t_lite.data.sentences,
by default in the problem's source language): they are translated beside the other lines and their
translations joined into the line's one output line (best translations only: with nbest > 1 every
line is translated whole, as a reranker of whole-line hypotheses needs).

Each hypothesis first goes through its problem's `postprocess_output(source, output)` (the problem
named in the model's metadata): identity for translation, a bracketed tree over the source words
for parsing problems. An empty or blank line still gives an empty line.

`decode_stream` runs this over an input of any size a chunk of lines at a time (sorting and
batching within the chunk), appending each finished chunk to its output: memory depends on the
chunk, not the file, and a resumable output lets a killed run continue (resume.py).
"""
import dataclasses
import sys
import time

import numpy as np
import tensorflow as tf

from t2t_lite import problems  # noqa: F401  (registers the built-in problems a model names)
from t2t_lite import registry
from t2t_lite.data import sentences
from t2t_lite.data.lines import without_line_end
from t2t_lite.decoding.translate import clamp_to_limit
from t2t_lite.errors import UserError
from t2t_lite.ids import PAD_ID
from t2t_lite.inference import batching, line_checks, parallel_search, records, streaming
from t2t_lite.model_dir import limits
from t2t_lite.progress_line import counted

TOKENIZE_CHUNK = 4096  # lines per `tokenize` call


@dataclasses.dataclass
class DecodeStats:
    lines: int = 0
    empty: int = 0
    truncated: int = 0
    invalid_utf8: int = 0
    split: int = 0  # lines translated sentence by sentence
    bom_stripped: int = 0  # a UTF-8 byte-order mark at the input's start
    seconds: float = 0.0
    max_source_tokens: int = 0
    constrained: int = 0  # lines with constraints (a file's, a glossary's)
    constraints_unmet: int = 0  # of those, lines whose output does not keep them as words
    glossary_terms: int = 0  # glossary entries applied, over all lines
    glossary_terms_dropped: int = 0  # matched, not applied: no room, or a contradiction
    protected: int = 0  # lines with protected spans (format specifiers, tags)
    protect_repaired: int = 0  # of those, lines whose spans the restore step fixed

    @property
    def lines_per_second(self):
        return self.lines / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self):
        return dict(dataclasses.asdict(self), lines_per_second=round(self.lines_per_second, 2))

    def summary(self):
        rate = self.lines_per_second
        return (f"decoded {counted(self.lines, 'line')} in {self.seconds:.1f}s ({rate:.1f} "
                f"lines/s); {self.empty} empty, {self.truncated} truncated to "
                f"{self.max_source_tokens} tokens, {self.invalid_utf8} with invalid UTF-8 "
                f"replaced, {self.split} split into sentences"
                + (f", {self.bom_stripped} UTF-8 byte-order mark dropped"
                   if self.bom_stripped else "") + self._constraint_summary())

    def _constraint_summary(self):
        parts = []
        if self.glossary_terms:
            parts.append(f"{counted(self.glossary_terms, 'glossary term')} applied")
        if self.glossary_terms_dropped:
            from t2t_lite.inference.constraints import MAX_LINE_TOKENS, MAX_PHRASES

            parts.append(f"{counted(self.glossary_terms_dropped, 'glossary term')} not applied "
                         f"(no room in their lines for more than {MAX_PHRASES} phrases or "
                         f"{MAX_LINE_TOKENS} tokens, or they contradict a line's own phrases)")
        if self.constrained:
            parts.append(f"{counted(self.constrained, 'line')} constrained, "
                         f"{self.constrained - self.constraints_unmet} met all their phrases, "
                         f"{self.constraints_unmet} could not, "
                         f"{self.lines - self.constrained} not constrained")
        if self.protected:
            parts.append(f"{counted(self.protected, 'line')} with protected spans, "
                         f"{self.protect_repaired} of them repaired")
        return "".join(f"; {part}" for part in parts)


def clean_line(raw):
    """bytes -> (text, had_invalid_utf8). The line's end is dropped (data/lines.py: the "\\r" of
    a "\\r\\n" too), other \\r become spaces."""
    raw = without_line_end(raw)
    try:
        text, invalid = raw.decode("utf-8"), False
    except UnicodeDecodeError:
        text, invalid = raw.decode("utf-8", errors="replace"), True
    return text.replace("\r", " "), invalid


def tokenize_texts(translator, texts):
    """list of str -> (per text, its ids as the model reads them: truncated, EOS-terminated;
    per text, its token count before truncation). One `tokenize` call per chunk of lines."""
    source_ids, counts = [], []
    for start in range(0, len(texts), TOKENIZE_CHUNK):
        result = translator.tokenize(tf.constant(texts[start:start + TOKENIZE_CHUNK], tf.string))
        ids, chunk_counts = result["ids"].numpy(), result["token_counts"].numpy()
        width = ids.shape[1]
        for row, count in zip(ids, chunk_counts.tolist()):
            source_ids.append(row[:min(count + 1, width)])  # the tokens kept and EOS
            counts.append(count)
    return source_ids, counts


def _pad(rows):
    batch = np.full([len(rows), max(len(r) for r in rows)], PAD_ID, np.int32)
    for i, row in enumerate(rows):
        batch[i, :len(row)] = row
    return tf.constant(batch)


def _trimmed(array):
    """A 0-padded array cut to the extent its nonzero entries use along every axis but the
    first (at least 1), so a part's constraints are as wide as its own longest."""
    index = [slice(None)]
    for axis in range(1, array.ndim):
        other = tuple(a for a in range(array.ndim) if a != axis)
        used = np.flatnonzero(array.any(axis=other)) if array.size else []
        index.append(slice(0, max(int(used[-1]) + 1 if len(used) else 0, 1)))
    return array[tuple(index)]


def encode_constraints(translator, lines):
    """Constraint lines -> {"positive", "negative"} numpy id arrays (the translator's
    encode_constraints), or None when no line has any."""
    if not any(line.strip() for line in lines):
        return None
    if not translator.supports_constraints:
        raise UserError("this export has no constrained search (an older t2t_lite wrote it); "
                        "re-export it with t2t-lite-exporter")
    result = translator.encode_constraints(tf.constant(lines, tf.string))
    return {name: value.numpy() for name, value in result.items()}


def translate_parts(translator, rows, parts, alpha, extra_length, pool=None, constraints=None):
    """Translates id rows (1-D int arrays, EOS-terminated) part by part: parts are lists of
    indices into rows, each one batch padded to its own width. Yields (part, texts bytes
    [len(part), K], scores [len(part), K], unmet [len(part), K] or None) numpy, in the parts'
    order. constraints: encode_constraints' arrays for the rows (None: none); a part whose rows
    have none runs the plain search.

    With a pool (parallel_search.thread_pool) every part is queued at once, so a search that
    finishes early takes the next part instead of waiting for the others (a trained model's
    sentences stop early, each at its own step)."""

    def translate_part(part):
        ids = _pad([rows[i] for i in part])
        if constraints is not None:
            positive = constraints["positive"][part]
            negative = constraints["negative"][part]
            if positive.any() or negative.any():
                result = translator.translate_constrained_ids(
                    ids, tf.constant(_trimmed(positive)), tf.constant(_trimmed(negative)),
                    alpha, extra_length)
                return (part, result["outputs"].numpy(), result["scores"].numpy(),
                        result["unmet"].numpy())
        result = translator.translate_ids(ids, alpha, extra_length)
        return part, result["outputs"].numpy(), result["scores"].numpy(), None

    return parallel_search.map_parts(translate_part, parts, pool)


def translate_texts(translator, texts, alpha, extra_length, nbest=1, batch_tokens=4096,
                    progress=None, stats=None, parallel_searches=1, splitting=None,
                    constraints=None, facts=None):
    """list of str -> list (same order) of n-best lists [(text, score)] of length nbest.

    A text without tokens (empty or blank) is not translated; its list is empty.
    parallel_searches: each batch's sentences are split over that many searches run at once
    (see parallel_search.py; the process's TensorFlow threads should be set for it).
    splitting: a sentences.SentenceSplitting; with nbest 1, the long texts it splits are
    translated sentence by sentence, the translations joined (the score is their scores' sum).
    constraints: per text, a constraint line (constraints.py; "" for none). A constrained text
    is translated whole; line_checks.count_constraints counts what its output keeps.
    facts: a list of one dict per text, given "truncated" and "sentences" (for the records).
    """
    stats = stats if stats is not None else DecodeStats()
    constraints = constraints if constraints is not None else [""] * len(texts)
    if splitting is not None and nbest == 1:
        joined = _translate_sentences(translator, texts, alpha, extra_length, batch_tokens,
                                      progress, stats, parallel_searches, splitting,
                                      constraints, facts)
        if joined is not None:
            return joined
    fixed = translator.settings
    # A NaN or huge alpha (a flag, an edited setting) would rank hypotheses by nonsense.
    limits.check_bounds({"alpha": alpha}, "decoding")
    stats.max_source_tokens = fixed.max_source_tokens
    if not 1 <= nbest <= fixed.beam_size:
        raise UserError(f"--nbest must be between 1 and the beam size {fixed.beam_size}, "
                        f"got {nbest}")
    source_ids, counts = tokenize_texts(translator, texts)
    stats.empty += sum(1 for c in counts if c == 0)
    stats.truncated += sum(1 for c in counts if c > fixed.max_source_tokens)
    for fact, count in zip(facts or (), counts):
        fact.update(truncated=count > fixed.max_source_tokens, sentences=1)

    results = [[] for _ in texts]
    to_translate = [i for i, c in enumerate(counts) if c > 0]
    alpha = tf.constant(alpha, tf.float32)
    # Clamped in Python first: tf.constant would wrap a value past int32 silently.
    extra_length = clamp_to_limit(extra_length, fixed.max_length)
    fits = batching.search_budget(batch_tokens, fixed.beam_size, fixed.vocab_size,
                                  extra_length, fixed.max_length, **fixed.model_dims())
    extra_length = tf.constant(extra_length, tf.int32)
    lengths = [len(source_ids[i]) - 1 for i in to_translate]  # tokens kept, EOS not counted
    encoded = encode_constraints(translator, constraints)
    # A batch with constraints also holds the constrained search's state (batching.py).
    shapes = None
    if encoded is not None:
        every = batching.constraint_shapes(encoded["positive"], encoded["negative"])
        shapes = [every[i] for i in to_translate]
    # Each batch split into interleaved parts, one search each (parallel_search.py).
    parts = parallel_search.split_batches(
        [[to_translate[p] for p in positions]
         for positions in batching.plan_batches(lengths, batch_tokens, fits=fits,
                                                constraints=shapes)],
        parallel_searches)
    _search(translator, source_ids, parts, alpha, extra_length, encoded, nbest, results,
            len(texts) - len(to_translate), progress, parallel_searches)
    return results


def _translate_sentences(translator, texts, alpha, extra_length, batch_tokens, progress, stats,
                         parallel_searches, splitting, constraints, facts):
    """translate_texts' results for texts that `splitting` splits into sentences: each
    sentence translated as a text of its own, a line's translations joined (_joined); None
    when no text is split, so that the texts are translated as they are."""
    # A constrained text stays whole: its phrases belong to the line, not to one sentence.
    pieces, spans = splitting.split_all(texts, whole=[line.strip() for line in constraints])
    piece_constraints = [constraints[i] for i, (start, end) in enumerate(spans)
                         for _ in range(start, end)]
    if len(pieces) <= len(texts):
        return None
    stats.split += sum(1 for start, end in spans if end - start > 1)
    piece_progress = progress and (
        lambda done, total: progress(done * len(texts) // total, len(texts)))
    piece_facts = [{} for _ in pieces]
    results = translate_texts(translator, pieces, alpha, extra_length,
                              batch_tokens=batch_tokens, progress=piece_progress,
                              stats=stats, parallel_searches=parallel_searches,
                              constraints=piece_constraints, facts=piece_facts)
    for i, (start, end) in enumerate(spans if facts is not None else ()):
        facts[i].update(sentences=end - start, truncated=any(
            f["truncated"] for f in piece_facts[start:end]))
    return [_joined(results[start:end]) for start, end in spans]


def _search(translator, source_ids, parts, alpha, extra_length, encoded, nbest, results, done,
            progress, parallel_searches):
    """Fills results[index] with each searched line's nbest [(text, score)], part by part
    (translate_parts), reporting progress(done, len(results)) after each part; `done` lines
    (those without tokens) count as done from the start."""
    pool = parallel_search.thread_pool(parallel_searches)
    try:
        for part, outputs, scores, unmet in translate_parts(translator, source_ids, parts, alpha,
                                                            extra_length, pool, encoded):
            for row, index in enumerate(part):
                results[index] = [(outputs[row, k].decode("utf-8", errors="replace"),
                                   float(scores[row, k])) for k in range(nbest)]
            done += len(part)
            if progress:
                progress(done, len(results))
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)


def _joined(piece_results):
    """One line's 1-best [(text, score)] from its sentences' 1-best lists."""
    if len(piece_results) == 1:
        return piece_results[0]
    best = [hypotheses[0] for hypotheses in piece_results if hypotheses]
    return [(sentences.join_translations(text for text, _ in best),
             sum(score for _, score in best))]


def _problem_class(problem_name):
    """The class of the problem a model's metadata names; None for no name or a problem not
    registered in this process (a user module). The decoder knows only the name, not the
    parameters the problem was built with, so it reads class attributes and classmethods."""
    if not problem_name:
        return None
    try:
        return registry.problem_class(problem_name)
    except UserError:
        return None


def sentence_splitting(problem_name, setting="auto"):
    """The SentenceSplitting for a model's problem under a decoder setting
    (sentences.splitting_for); "auto" for an unregistered problem translates whole."""
    problem = _problem_class(problem_name)
    return sentences.splitting_for(problem and problem.source_language, setting)


def _unchanged(source, output):
    return output


def output_postprocessor(problem_name):
    """postprocess_output(source, output) of the named problem (a classmethod: it needs none of
    the data paths the metadata does not record); unchanged text without one."""
    problem = _problem_class(problem_name)
    return problem.postprocess_output if problem else _unchanged


def translation_records(translator, texts, alpha, extra_length, nbest=1, batch_tokens=4096,
                        progress=None, postprocess=None, parallel_searches=1, stats=None,
                        splitting=None, constraints=None, protect=frozenset()):
    """Texts -> one records.Translation per text (same order): the search (translate_texts,
    whose arguments these are), then the checks of line_checks (the span repair for the
    `protect` kinds, then the constraints' count), then postprocess(source, output) -> output
    (default: the translator's problem's hook) on every hypothesis. stats: a DecodeStats to add
    the counts to."""
    if postprocess is None:
        postprocess = output_postprocessor(translator.settings.problem)
    stats = stats if stats is not None else DecodeStats()
    facts = [{} for _ in texts]
    results = translate_texts(translator, texts, alpha, extra_length, nbest=nbest,
                              batch_tokens=batch_tokens, progress=progress, stats=stats,
                              parallel_searches=parallel_searches, splitting=splitting,
                              constraints=constraints, facts=facts)
    repaired = [False] * len(texts)
    if protect:
        results = line_checks.repair_spans(texts, results, protect, stats, repaired)
    met = line_checks.count_constraints(stats, constraints, results)
    return [records.Translation(
        text, [(postprocess(text, output), score) for output, score in hyps],
        truncated=fact.get("truncated", False), sentences=fact.get("sentences", 1),
        spans_repaired=repaired[i], constraints_met=met[i])
        for i, (text, hyps, fact) in enumerate(zip(texts, results, facts))]


def decode_lines(translator, raw_lines, alpha, extra_length, nbest=1, print_scores=False,
                 batch_tokens=4096, progress=None, postprocess=None, parallel_searches=1,
                 stats=None, splitting=None, line_constraints=None, first_line=0,
                 protect=frozenset(), output_format="text"):
    """Byte lines -> (output lines as str without newlines, DecodeStats); len(out) == len(in).

    Each line's text (clean_line) becomes a records.Translation (translation_records, whose
    arguments the others are), written as output_format's writer writes it
    (records.line_writer). line_constraints(n, source text) -> line n's constraint line, n
    counted from first_line.
    """
    stats = stats if stats is not None else DecodeStats()
    stats.lines += len(raw_lines)
    start = time.monotonic()
    texts = []
    for raw in raw_lines:
        text, invalid = clean_line(raw)
        stats.invalid_utf8 += invalid
        texts.append(text)
    constraints = None if line_constraints is None else [
        line_constraints(first_line + i, text) for i, text in enumerate(texts)]
    write = records.line_writer(output_format, print_scores)
    outputs = [write(record) for record in translation_records(
        translator, texts, alpha, extra_length, nbest=nbest, batch_tokens=batch_tokens,
        progress=progress, postprocess=postprocess, parallel_searches=parallel_searches,
        stats=stats, splitting=splitting, constraints=constraints, protect=protect)]
    stats.seconds += time.monotonic() - start
    assert len(outputs) == len(raw_lines)
    return outputs, stats


def decode_stream(translator, line_input, output, chunk_lines, alpha, extra_length, nbest=1,
                  print_scores=False, batch_tokens=4096, parallel_searches=1, stream=sys.stderr,
                  splitting=None, line_constraints=None, protect=frozenset(),
                  output_format="text"):
    """Translates `line_input` (line_input.LineInput) chunk by chunk into `output`
    (resume.ResumableOutput or resume.StreamOutput), continuing where `output` says a previous
    run stopped. Each chunk is tokenized, sorted and batched by length on its own, and its lines
    are appended in input order once all are done, so memory depends on the chunk, not the file.
    Progress over the whole input goes to `stream`. Returns this run's DecodeStats.

    line_constraints(line number in this input, source text) -> the line's constraint line
    (None: no constraints); protect: see decode_lines."""
    postprocess = output_postprocessor(translator.settings.problem)
    stats = DecodeStats()
    next_line = [output.lines_done]  # the chunk's first line in this input

    def decode_chunk(lines, progress):
        outputs, _ = decode_lines(translator, lines, alpha, extra_length, nbest=nbest,
                                  print_scores=print_scores, batch_tokens=batch_tokens,
                                  progress=lambda done, _: progress(done), postprocess=postprocess,
                                  parallel_searches=parallel_searches, stats=stats,
                                  splitting=splitting, line_constraints=line_constraints,
                                  first_line=next_line[0], protect=protect,
                                  output_format=output_format)
        next_line[0] += len(lines)
        return outputs

    streaming.run_chunks(line_input, output, chunk_lines, decode_chunk, "decoded", "lines",
                         stream=stream)
    stats.bom_stripped = line_input.bom_stripped
    return stats
