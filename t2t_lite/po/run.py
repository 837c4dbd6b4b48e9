"""A gettext catalog (PO or POT) translated as t2t-lite-po does it, as one library call.

    stats = translate_catalog(PoOptions(export_dir=E, input="x.pot", output="de.po"))
    print(stats.summary())

What it promises, by construction:
- every entry it writes passes msgfmt's own reading of it: the directives of a `c-format`,
  `python-format` or `python-brace-format` msgstr are those msgfmt finds in the msgid, a msgid's
  single accelerator mark (`_` or `&`) is in the msgstr once, the newline structure is the
  msgid's; every translation then passes translate-toolkit's checks (pofilter's, po/review.py)
  unless its source fails them too; an entry for which no hypothesis passes is left untranslated
  and counted (by check), and the whole catalog is judged by msgfmt itself (po/judge.py) before
  it is written;
- what it does not translate stays byte for byte (po/catalog_file.py): the header except the
  fields po/header.py sets, comments, flags, contexts, obsolete entries, wrapping, escapes;
- a catalog msgfmt would refuse (a syntax error, a duplicate msgid, a bad escape or charset) is
  refused in one line naming the file and line, before a model is loaded;
- the input is read once, at the start, and every step uses those bytes (a pipe, a FIFO or
  /dev/stdin gives them once; a file may change under a long run);
- the output is never the input, has one writer (a lock beside it, taken before TensorFlow
  loads), and is replaced atomically when complete; a killed run re-run with the same command
  continues (po/work_folder.py).

Which entries and which hypothesis: po/entries.py. The model: po/engine.py, loaded once per run;
its attempts go from the decoder's 1-best to the beam's n-best to a search with the line's
protected spans forced, each asked only for the lines whose hypotheses so far broke a format.
"""
import collections
import dataclasses
import functools
import hashlib
import os
import re
import sys
import time
from typing import Dict, Optional, Sequence

from t2t_lite import atomic, file_lock
from t2t_lite.errors import UserError
from t2t_lite.inference import protected_spans, resume, span_finding
from t2t_lite.model_source import ModelSource
from t2t_lite.po import (accelerators, catalog_file, engine as engine_lib, entries, format_base,
                         formats, header, judge, review)
from t2t_lite.po.compose import LEFT_CHARSET, judged
from t2t_lite.po.work_folder import SUFFIX as WORK_SUFFIX, WorkFolder
from t2t_lite.progress_line import counted

# Why an entry was left untranslated, as the summary says it.
LEFT_FORMAT = "their formats or accelerators could not be kept"
LEFT_EMPTY = "the model gave no translation"
LEFT_UNJUDGED = ("its format is one msgfmt checks and t2t-lite-po cannot read, and msgfmt is "
                 "not installed")


@dataclasses.dataclass
class PoOptions:
    """t2t-lite-po's settings; each field is the flag of the same name (see its --help)."""
    input: Optional[str] = None
    output: Optional[str] = None
    model_dir: Optional[str] = None
    export_dir: Optional[str] = None
    checkpoint_path: Optional[str] = None
    target_language: Optional[str] = None  # None: the model's, else the catalog's Language
    protect: str = "auto"
    no_fuzzy: bool = False
    translate_fuzzy: bool = False
    start_over: bool = False
    beam_size: Optional[int] = None
    no_repeat_ngram_size: Optional[int] = None  # None: the model's rule against loops
    batch_tokens: int = 4096
    chunk_lines: int = 500  # lines per journal record: a killed run resumes after its last one
    decode_precision: str = "float32"
    engine: str = "tensorflow"


@dataclasses.dataclass
class PoStats:
    entries: int = 0  # entries of the catalog (obsolete ones not counted)
    translated: int = 0  # entries given a new translation
    plural: int = 0  # of them, plural entries
    kept: int = 0  # entries already translated, kept as they were
    fuzzy_kept: int = 0  # fuzzy entries left as they were
    fuzzy_marked: int = 0  # new translations marked fuzzy
    obsolete: int = 0
    accelerators: int = 0  # new translations given their msgid's accelerator mark
    left_untranslated: Dict[str, int] = dataclasses.field(default_factory=dict)  # why -> count
    lines: int = 0  # distinct lines translated
    lines_retried: int = 0  # of them, lines that needed more than the 1-best
    lines_resumed: int = 0  # hypotheses an interrupted run had left in the work folder
    repaired: int = 0  # translations whose protected spans the repair changed
    msgfmt: str = "not run"  # "accepted", "not installed", or the input's own errors it kept
    header_filled: Sequence[str] = ()  # header fields written for the target language
    target_language: Optional[str] = None
    seconds: float = 0.0

    def as_dict(self):
        return dataclasses.asdict(self)

    @property
    def left(self):
        return sum(self.left_untranslated.values())

    def summary(self):
        parts = [f"translated {self.translated} of {self.entries} entries ({self.plural} plural)"
                 f" in {self.seconds:.1f}s", f"{self.kept} already translated kept",
                 f"{self.fuzzy_kept} fuzzy kept", f"{self.fuzzy_marked} marked fuzzy"]
        parts += [f"{counted(count, 'entry', 'entries')} left untranslated: {why}"
                  for why, count in sorted(self.left_untranslated.items())] or \
            ["0 entries left untranslated"]
        parts.append(f"{counted(self.lines, 'line')} decoded"
                     + (f" ({self.lines_retried} retried)" if self.lines_retried else "")
                     + (f" ({self.lines_resumed} by the interrupted run resumed)"
                        if self.lines_resumed else ""))
        parts.append(f"{self.repaired} with format specifiers repaired")
        if self.accelerators:
            parts.append(f"{self.accelerators} accelerators placed")
        parts.append(f"msgfmt: {self.msgfmt}")
        if self.header_filled:
            parts.append(f"header: {', '.join(self.header_filled)} set for "
                         f"{self.target_language}")
        return "; ".join(parts)


# ---- settings -----------------------------------------------------------------------------------

def check_options(options):
    """UserError for settings that cannot work, named as the tool's flags; imports no
    TensorFlow (a refusal costs well under a second)."""
    for name in ("input", "output"):
        if not getattr(options, name):
            raise UserError(f"--{name} is required")
    if not (options.model_dir or options.export_dir):
        raise UserError("give --model_dir or --export_dir")
    for flag in ("model_dir", "export_dir"):
        path = getattr(options, flag)
        if path and not os.path.isdir(path):
            raise UserError(f"--{flag} {path} is not a folder")
    ModelSource.from_options(options).check()
    for name in ("chunk_lines", "batch_tokens"):
        value = getattr(options, name)
        if value is not None and value < 1:
            raise UserError(f"--{name} must be >= 1, got {value}")
    protected_spans.parse_setting(options.protect)


def _kinds_resolver(setting):
    """(an entry's format flags) -> the kinds protected in it: --protect's own, or for auto those
    of the formats msgfmt checks the entry as (formats.protected_kinds)."""
    setting = protected_spans.parse_setting(setting)  # a bad --protect fails before any work
    if setting == "auto":
        return functools.lru_cache(maxsize=None)(formats.protected_kinds)
    kinds = protected_spans.resolve(setting, po=True)
    return lambda flags: kinds


# ---- choosing translations ----------------------------------------------------------------------

class _Candidates:
    """Per (kinds, line): the hypotheses of the attempts so far, each repaired and as written."""

    def __init__(self):
        self.by_line = collections.defaultdict(list)
        self.repaired = set()  # (kinds, line, candidate) that the repair changed

    def add(self, kinds, line, hypotheses):
        known = self.by_line[(kinds, line)]
        for hypothesis in hypotheses:
            fixed = protected_spans.restore(line, hypothesis, kinds)
            for candidate in (fixed.text, hypothesis):
                if candidate not in known:
                    known.append(candidate)
            if fixed.changed:
                self.repaired.add((kinds, line, fixed.text))

    def of(self, kinds, final, msgid):
        def candidates(core):
            found = self.by_line[(kinds, core)]
            # A msgid of one word the model leaves empty (a program's name) is its own
            # translation; only once every attempt gave nothing better.
            if final and core == msgid.strip() and not core.split()[1:] and core not in found:
                return found + [core]
            return found
        return candidates


# A program's identifier (metadata_csum, ext2fs_read_inode): never translated, and its `_`
# counts for msgfmt --check-accelerators=_ where it is the msgid's only one.
_IDENTIFIER = re.compile(r"(?<![\w%])[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+")


def _spans_of(flags_of_line):
    """line -> what the "forced" attempt forces: its protected spans, the directives msgfmt
    reads for its flags, and its identifiers."""
    def spans(line):
        kinds, flags = flags_of_line[line]
        texts = [span.text for span in span_finding.find_spans(line, kinds)]
        texts += [d.text for d in entries.directives(line, flags)
                  if d.text not in texts and d.conversion != "%"]
        # An identifier inside a span (`%(model_name)s`) is forced with it, not again alone.
        for identifier in _IDENTIFIER.finditer(line):
            if not any(identifier.group() in text for text in texts):
                texts.append(identifier.group())
        # A single `&` that marks no key (`Font & Colors`): msgfmt --check-accelerators holds
        # the msgstr to one.
        if accelerators.count(line, "&") == 1 and not any("&" in text for text in texts):
            texts.append("&")
        return texts
    return spans


def choose_translations(jobs, engine, stats):
    """{job index: {msgstr index: text}} for the jobs whose every missing form has a
    translation that passes entries.entry_problem; counts the others into stats."""
    candidates = _Candidates()
    flags_of_line = {}
    needed = collections.defaultdict(dict)  # kinds -> ordered {line: None}
    for job in jobs:
        for line in job.lines():
            needed[job.kinds][line] = None
            flags_of_line.setdefault(line, (job.kinds, job.flags))
    stats.lines = sum(len(lines) for lines in needed.values())
    chosen, problems = {}, {}
    attempts = [a for a in engine_lib.ATTEMPTS if a != "forced" or engine.can_force]
    for number, attempt in enumerate(attempts):
        for kinds in sorted(needed, key=lambda k: (len(k), sorted(k))):
            lines = list(needed[kinds])
            if attempt == "forced":
                lines = [line for line in lines if _spans_of(flags_of_line)(line)]
            if number:
                stats.lines_retried += len(lines) if number == 1 else 0
            if not lines:
                continue
            outputs = engine.translate(lines, kinds, attempt, spans_of=_spans_of(flags_of_line))
            for line, hypotheses in zip(lines, outputs):
                candidates.add(kinds, line, hypotheses)
        final = number == len(attempts) - 1
        needed = collections.defaultdict(dict)
        for i, job in enumerate(jobs):
            if i in chosen:
                continue
            texts, problem = _translate_job(job, candidates.of(job.kinds, final,
                                                                job.entry.msgid))
            if texts is not None:
                chosen[i] = texts
                problems.pop(i, None)
                continue
            problems[i] = problem
            if problem[0] is not None:
                needed[job.kinds][problem[0]] = None
        if not needed:
            break
    stats.lines_resumed = engine.resumed
    for i, (_, why) in problems.items():
        if i not in chosen:
            stats.left_untranslated[why] = stats.left_untranslated.get(why, 0) + 1
    for i, texts in chosen.items():
        job = jobs[i]
        stats.repaired += any((job.kinds, core, part) in candidates.repaired
                              for source in job.sources.values()
                              for core, part in zip(entries.cores(source),
                                                    entries.cores(texts[_first(texts)])))
    return chosen


def _first(texts):
    return next(iter(texts))


def _translate_job(job, candidates_of):
    """({index: text}, None) or (None, (a line to try again or None, why))."""
    texts = {}
    for index, source in job.sources.items():
        parts, failed = entries.choose_parts(job, source, candidates_of,
                                             lambda t: entries.protected_ranges(job, t))
        if parts is None:
            line, problem = failed
            return None, (line, _left_because(problem))
        text = entries.with_accelerator(job, entries.rebuilt(source, parts),
                                        lambda t: entries.protected_ranges(job, t))
        if text is None:
            return None, (None, LEFT_FORMAT)
        texts[index] = text
    problem = entries.entry_problem(job, texts)
    if problem:
        return None, (None, _left_because(problem))
    return texts, None


def _left_because(problem):
    """The summary's reason for an entry whose every hypothesis had `problem`."""
    if problem in ("empty", "no hypothesis"):
        return LEFT_EMPTY
    if problem == entries.CHARSET:
        return LEFT_CHARSET
    return review.left_reason(problem) or LEFT_FORMAT


# ---- the whole run ------------------------------------------------------------------------------

def translate_catalog(options, engine=None, kinds_of=None, progress=sys.stderr):
    """Translates options.input into options.output (see the module docstring) and returns
    PoStats. engine: what translates the lines, None for the model of options (po/engine.py,
    with a work folder a killed run resumes from). A given engine is used as it is, with no model
    behind it: no model flag is read and the target language is options.target_language or the
    catalog's. It has translate(lines, kinds, attempt, spans_of) (per line, its hypotheses),
    can_force (whether the "forced" attempt is worth asking) and resumed (the lines it took from
    an earlier run). kinds_of (an entry's format flags) -> frozenset of protected kinds replaces
    --protect and formats.protected_kinds."""
    start = time.monotonic()
    if engine is None:
        check_options(options)
    elif not (options.input and options.output):
        raise UserError("--input and --output are required")
    target_path = _checked_output(options)
    # The input is read once, here: a pipe, a FIFO or /dev/stdin gives its bytes once, and a
    # file may change under a long run; everything after reads this copy.
    raw = catalog_file.read_bytes(options.input)
    catalog = catalog_file.parse(raw, options.input)
    if not catalog.entries:  # an empty pipe (a failed command before it) must not empty a file
        raise UserError(f"--input {options.input} holds no catalog entry ({len(raw)} bytes "
                        "read); nothing written")
    # The output's lock before anything imports TensorFlow: a second run is refused at once.
    lock = file_lock.FileLock(target_path + file_lock.LOCK_SUFFIX,
                              f"--output {target_path}").acquire()
    try:
        stats, data = _translated(options, engine, kinds_of, progress, raw, catalog,
                                  target_path)
    finally:
        lock.release()
    stats.seconds = time.monotonic() - start
    return stats


def _checked_output(options):
    """The output's resolved path, once it is known not to be a stream, a model's file or the
    input."""
    if resume.is_stream_path(options.output):
        raise UserError(f"--output {options.output} is not a regular file: t2t-lite-po "
                        "replaces its output whole when it is complete; write to a file")
    target_path = os.path.realpath(options.output)
    resume.check_output_path(target_path, "--output")
    if os.path.exists(options.input):
        resume.check_not_an_input(target_path, [(f"--input {options.input}",
                                                 os.stat(options.input))], "--output")
    return target_path


def _translated(options, engine, kinds_of, progress, raw, catalog, target_path):
    """(stats, the output's bytes) once the output is written, under its lock."""
    _, model_target = (ModelSource.from_options(options).problem_and_target_language()
                       if engine is None else (None, None))
    plan = _header_plan(catalog, raw, options.target_language or model_target)
    stats = PoStats(target_language=plan.target,
                    header_filled=tuple(plan.changes) if catalog.header is not None else ())
    kinds_of = kinds_of or _kinds_resolver(options.protect)
    stats.obsolete = sum(1 for entry in catalog.entries if entry.obsolete)
    reviewer = review.Reviewer.for_catalog(catalog.header_fields(), catalog.messages(),
                                           plan.target)
    jobs = _judgeable(entries.plan(catalog.messages(), plan.rule, options, kinds_of, stats,
                                   reviewer, catalog.can_hold), stats)
    work = None
    if engine is None:
        work = WorkFolder(target_path + WORK_SUFFIX, _run_identity(options, raw),
                          options.start_over)
        engine = engine_lib.ModelEngine(options, work.journal, progress)
    chosen = choose_translations(jobs, engine, stats) if jobs else {}
    data = judged(raw, options, plan, jobs, chosen, stats)
    try:
        with atomic.open_atomic(target_path, "wb", durable=True) as f:
            f.write(data)
    except OSError as error:
        raise UserError(f"--output {options.output}: cannot write "
                        f"({error.strerror})") from None
    if work is not None:
        work.remove()
    return stats, data


def _judgeable(jobs, stats):
    """The jobs whose formats a judge reads: without msgfmt, an entry in a format msgfmt checks
    and po/formats.py cannot read (sh-format, boost-format, ...) is left untranslated."""
    if judge.available():
        return jobs
    kept = []
    for job in jobs:
        if any(flag[:-len("-format")] not in format_base.LANGUAGES
               for flag in formats.format_flags(job.entry.flags)):
            stats.left_untranslated[LEFT_UNJUDGED] = \
                stats.left_untranslated.get(LEFT_UNJUDGED, 0) + 1
        else:
            kept.append(job)
    return kept


def _header_plan(catalog, raw, target_language):
    header_entry = catalog.header

    def where(field=None):
        """path:line of a header field (`Plural-Forms`), else of the header, else 1."""
        line = header_entry.msgid_line if header_entry else 1
        if header_entry is not None and field:
            start, end = header_entry.span
            found = re.search(rb'^\s*(msgstr\s+)?"' + re.escape(field.encode()) + rb":",
                              raw[start:end], re.MULTILINE)
            if found:
                line = raw.count(b"\n", 0, start + found.start()) + 1
        return f"{catalog.name}:{line}"

    plural_entries = [e for e in catalog.messages() if e.msgid_plural is not None]
    return header.plan(dict(catalog.header_fields()), bool(plural_entries),
                       plural_entries[0].line if plural_entries else None, target_language,
                       where, catalog.charset)


def _run_identity(options, raw):
    return {"input_sha256": hashlib.sha256(raw).hexdigest(),
            "model": ModelSource.from_options(options).identity(),
            "settings": {name: getattr(options, name) for name in (
                "target_language", "protect", "translate_fuzzy", "no_fuzzy", "beam_size",
                "batch_tokens", "decode_precision", "engine", "no_repeat_ngram_size")}}
