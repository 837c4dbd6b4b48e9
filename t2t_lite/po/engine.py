"""The model as t2t-lite-po's translator: loaded once per run, hypotheses in process, a journal of
finished chunks so that a killed run continues where it was.

    engine = ModelEngine(options, journal_path)
    engine.translate(lines, kinds, attempt)  ->  per line, its hypotheses (best first)

Attempts, from the cheapest: "best" (the decoder's 1-best, long lines sentence by sentence),
"nbest" (every hypothesis of the beam, the line whole) and "forced" (the beam with the line's
protected spans as positive constraints). t2t-lite-po asks for the next attempt only for the
lines whose hypotheses broke a format. TensorFlow is imported when the first line is
translated, never before: a refused flag or catalog costs no TensorFlow import.
"""
import json
import os
import sys

from t2t_lite import process_end
from t2t_lite.inference import constraints as constraints_lib
from t2t_lite.progress_line import counted

ATTEMPTS = ("best", "nbest", "forced")
# What the progress line says each attempt does.
_DOING = {"best": "translated", "nbest": "retried with the beam's other hypotheses",
          "forced": "retried with their spans forced"}


class Journal:
    """Append-only JSON lines {"key": [attempt, kinds, line], "hyps": [...]}: the hypotheses of
    finished chunks, each chunk on disk (fsync) before the next starts. A record is whole when
    its line ends in "\n" and parses; a torn one (a kill or a full disk mid-write, cut anywhere,
    inside a UTF-8 character too) is dropped and said, every whole record before and after it
    kept, and a torn tail is cut off before the next record is appended, so that a second
    interruption loses nothing already done."""

    def __init__(self, path, progress=sys.stderr):
        self.path = path
        self.done = {}
        if path and os.path.isfile(path):
            self._read(progress)

    def _read(self, progress):
        with open(self.path, "rb") as f:
            data = f.read()
        whole = data.rfind(b"\n") + 1  # the bytes after the last "\n": a torn tail
        torn = [number for number, line in enumerate(data[:whole].splitlines(), 1)
                if not self._take(line)]
        if whole < len(data):
            torn.append(data.count(b"\n") + 1)
            self._cut(whole)
        if torn:
            print(f"t2t-lite-po: {self.path}: dropped {counted(len(torn), 'torn record')} (an "
                  f"interrupted write; line {', '.join(map(str, torn))}); its lines are "
                  f"translated again, the {counted(len(self.done), 'whole record')} kept",
                  file=progress, flush=True)

    def _take(self, line):
        try:
            record = json.loads(line.decode("utf-8"))
            self.done[tuple(record["key"])] = record["hyps"]
            return True
        except (ValueError, KeyError, TypeError):
            return False

    def _cut(self, size):
        try:
            os.truncate(self.path, size)
        except OSError as error:
            raise process_end.write_failed(error, f"the journal {self.path}") from None

    def add(self, items):
        """items: [(key, hypotheses)]."""
        for key, hyps in items:
            self.done[key] = hyps
        if not self.path or not items:
            return
        data = "".join(json.dumps({"key": list(key), "hyps": hyps}, ensure_ascii=False) + "\n"
                       for key, hyps in items).encode("utf-8")
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            if not process_end.is_write_failure(error):
                raise
            raise process_end.write_failed(
                error, f"the journal {self.path}", "the translations it holds are kept; "
                "re-run the same command to continue") from None


def group_name(kinds):
    return "+".join(sorted(kinds)) or "none"


def forced_line(spans):
    """The constraint line forcing a source's protected spans (those a constraint line can
    hold, within its caps), "" for none. A character is counted as a token (a piece of the
    vocabulary holds one or more): a span of more than MAX_PHRASE_TOKENS characters, or one past
    MAX_LINE_TOKENS characters in all (a long URL), is left to the repair."""
    phrases, size = [], 0
    for text in spans:
        if (text.strip() == text and text and "\t" not in text
                and constraints_lib.ALTERNATIVES not in text
                and not text.startswith(constraints_lib.NEGATIVE)
                and len(text) <= constraints_lib.MAX_PHRASE_TOKENS
                and size + len(text) <= constraints_lib.MAX_LINE_TOKENS):
            phrases.append((False, [text]))
            size += len(text)
    return constraints_lib.join_line(phrases[:constraints_lib.MAX_PHRASES])


class ModelEngine:
    """translate(lines, kinds, attempt) through one model loaded on first use (model_source)."""

    def __init__(self, options, journal_path=None, progress=sys.stderr):
        self.options, self.progress = options, progress
        self.journal = Journal(journal_path, progress)
        self.resumed = 0  # lines whose hypotheses an earlier, interrupted run left
        self._translator = None
        self.searches = 1

    @property
    def can_force(self):
        return self.options.engine == "tensorflow"

    def _load(self):
        if self._translator is not None:
            return self._translator
        from t2t_lite.inference import parallel_search
        from t2t_lite.model_source import ModelSource

        options = self.options
        on_gpu = options.engine == "tensorflow" and parallel_search.tensorflow_on_gpu()
        self.searches = parallel_search.resolve(0, on_gpu)
        parallel_search.configure_tensorflow(self.searches)
        precision = options.decode_precision
        if precision == "auto" and options.engine == "tensorflow" and options.model_dir:
            from t2t_lite.decoding import precision as precision_lib

            precision = precision_lib.choose(precision)[0]
        self._translator = ModelSource.from_options(options).load(precision=precision,
                                                                  searches=self.searches)
        return self._translator

    def translate(self, lines, kinds, attempt="best", spans_of=None):
        """Per line, its hypotheses (best first; [] for a line the attempt does not cover).
        spans_of(line) -> the line's protected span texts, for the "forced" attempt."""
        name = group_name(kinds)
        keys = [(attempt, name, line) for line in lines]
        todo = list(dict.fromkeys(k for k in keys if k not in self.journal.done))
        self.resumed += len(set(keys)) - len(todo)
        chunk = max(self.options.chunk_lines, 1)
        for start in range(0, len(todo), chunk):
            part = todo[start:start + chunk]
            texts = [line for _, _, line in part]
            self.journal.add(list(zip(part, self._search(texts, attempt, spans_of))))
            print(f"t2t-lite-po: {_DOING[attempt]}: {min(start + chunk, len(todo))}/{len(todo)} "
                  f"lines (protected: {name})", file=self.progress, flush=True)
        return [self.journal.done[key] for key in keys]

    def _search(self, texts, attempt, spans_of):
        from t2t_lite.inference import batch_decode

        translator = self._load()
        fixed = translator.settings
        nbest = 1 if attempt == "best" else fixed.beam_size
        constraints = None
        if attempt == "forced":
            constraints = [forced_line(spans_of(text)) if spans_of else "" for text in texts]
        splitting = (batch_decode.sentence_splitting(fixed.problem, "auto")
                     if attempt == "best" else None)
        translations = batch_decode.translation_records(
            translator, texts, fixed.alpha, fixed.extra_length, nbest=nbest,
            batch_tokens=self.options.batch_tokens, parallel_searches=self.searches,
            splitting=splitting, constraints=constraints)
        return [[text for text, _ in record.hypotheses] for record in translations]
