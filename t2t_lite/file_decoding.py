"""A file (or stdin) translated as t2t-lite-decoder does it, as one library call.

    stats = decode_file(DecodeOptions(export_dir=E, decode_from_file="in.en",
                                      decode_to_file="out.de"))
    print(stats.summary())

DecodeOptions holds the decoder's settings under its flags' names, and its defaults are the
flags'. `decode_file` refuses settings that do not fit together before anything is read, opens
the input (line_input.py) and the output (resumable file or stream, resume.py), resolves what
the machine-chosen settings (`auto` precision, `auto`/`default` compute type) become, or what
the run being resumed chose, loads the model (model_source.py) and translates chunk by chunk
(batch_decode.decode_stream). It returns the run's DecodeStats; progress goes to `progress`.

TensorFlow's threads are set for the parallel searches only where TensorFlow has run no op yet
in this process (parallel_search.configure_tensorflow); elsewhere they stay as they are.
"""
import dataclasses
import os
import sys
from typing import Optional

from t2t_lite import model_source
from t2t_lite.errors import UserError
from t2t_lite.inference import constraints, line_input, protected_spans, records, resume


@dataclasses.dataclass
class DecodeOptions:
    """t2t-lite-decoder's settings; each field is the flag of the same name (see its --help)."""
    model_dir: Optional[str] = None
    export_dir: Optional[str] = None
    checkpoint_path: Optional[str] = None
    decode_from_file: Optional[str] = None  # None: stdin
    decode_to_file: Optional[str] = None  # None: stdout
    beam_size: Optional[int] = None  # None: the model's (an export's is fixed)
    alpha: Optional[float] = None
    extra_length: Optional[int] = None
    no_repeat_ngram_size: Optional[int] = None  # None: the model's (an export's is fixed)
    nbest: int = 1
    print_scores: bool = False
    split_sentences: str = "auto"
    batch_tokens: int = 4096
    chunk_lines: int = 10000
    start_over: bool = False
    num_shards: int = 1
    shard_index: int = 0
    parallel_searches: int = 0  # 0: one per CPU core (at most 4), 1 on a GPU
    decode_precision: str = "float32"
    engine: str = "tensorflow"
    compute_type: str = "default"
    constraints_file: Optional[str] = None  # one constraint line per input line
    glossary: Optional[str] = None  # source term<TAB>target term[|alternative...] rows
    glossary_ignore_case: bool = False
    protect: str = "auto"  # auto, none, or a comma list of protected_spans.KINDS
    output_format: str = "text"  # text, or jsonl: one JSON record per line (records.py)
    eos_until_met: bool = False  # constrained search: no EOS before every phrase is met


# Settings that change what is written: a resumed run must use the same values. (The number of
# parallel searches is not one: the outputs are the same, so a resume may use other cores.)
OUTPUT_SETTINGS = ("engine", "compute_type", "decode_precision", "beam_size", "alpha",
                   "extra_length", "nbest", "print_scores", "split_sentences", "batch_tokens",
                   "chunk_lines", "num_shards", "shard_index", "glossary_ignore_case", "protect",
                   "output_format", "eos_until_met", "no_repeat_ngram_size")


def decode_file(options, progress=sys.stderr):
    """Translates options.decode_from_file into options.decode_to_file (see the module
    docstring); a killed run called again with the same options continues after its last
    finished chunk. Returns this run's batch_decode.DecodeStats."""
    from t2t_lite.data import sentences

    check_options(options)
    sentences.splitting_for(None, options.split_sentences)  # a bad language fails before any work
    source = line_input.open_input(options.decode_from_file, num_shards=options.num_shards,
                                   shard_index=options.shard_index)
    texts = _read_once(options, source)
    glossary = options.glossary and constraints.Glossary.load(
        options.glossary, options.glossary_ignore_case, data=texts["glossary"])
    file_constraints = _constraint_lines(options, source, texts["constraints_file"])
    chosen = model_source.ModelSource.from_options(options)
    with resume.open_output(options.decode_to_file, inputs=source.described_statuses()) as output:
        # The model first: a model_dir or an export that is none is refused before TensorFlow
        # loads (the searches' set-up brings it).
        model = chosen.identity()
        searches = _parallel_searches(options, options.chunk_lines if source.total_lines is None
                                      else min(options.chunk_lines, source.total_lines))
        precision, compute_type = _precision(options, output), _compute_type(options, output)
        # Before the model loads: a run that cannot resume says so at once.
        output.begin({"input": source.identity(), "model": model,
                      "settings": _settings(options, precision, compute_type, texts)},
                     start_over=options.start_over)
        translator = chosen.load(precision=precision, compute_type=compute_type,
                                 searches=searches)
        from t2t_lite.inference import batch_decode  # here: it loads TensorFlow

        if options.engine == "ctranslate2" and output.identity:
            # What `auto` / `default` became on this machine is what a resume must reuse.
            output.identity["settings"]["compute_type"] = translator.compute_type
        defaults = translator.settings
        protect = protected_spans.resolve(options.protect, defaults.problem, po=False)
        line_constraints, glossary_counts = _line_constraints(
            translator, file_constraints, glossary, options, source.first_line, protect)
        stats = batch_decode.decode_stream(
            translator, source, output, options.chunk_lines,
            alpha=defaults.alpha if options.alpha is None else options.alpha,
            # translate_texts clamps it to the model's max_length (huge values stay in int32).
            extra_length=defaults.extra_length if options.extra_length is None
            else options.extra_length,
            nbest=options.nbest, print_scores=options.print_scores,
            batch_tokens=options.batch_tokens, parallel_searches=searches, stream=progress,
            splitting=batch_decode.sentence_splitting(defaults.problem,
                                                      options.split_sentences),
            line_constraints=line_constraints, protect=protect,
            output_format=options.output_format)
        stats.glossary_terms = glossary_counts["applied"]
        stats.glossary_terms_dropped = glossary_counts["dropped"]
        return stats


def check_options(options):
    """UserError for settings that cannot work, named as the decoder's flags."""
    source = model_source.ModelSource.from_options(options)
    source.check()
    if options.nbest < 1:
        raise UserError(f"--nbest must be >= 1, got {options.nbest}")
    if options.nbest > 1:  # the beam as the model or export records it, before TensorFlow loads
        beam_size = source.recorded_beam_size()
        if beam_size is not None and options.nbest > beam_size:
            raise UserError(f"--nbest must be between 1 and the beam size {beam_size}, "
                            f"got {options.nbest}")
    protected_spans.parse_setting(options.protect)
    if options.output_format not in records.OUTPUT_FORMATS:
        raise UserError(f"--output_format must be one of {', '.join(records.OUTPUT_FORMATS)}, "
                        f"got {options.output_format!r}")
    if options.engine == "ctranslate2":
        for flag in ("constraints_file", "glossary"):
            if getattr(options, flag):
                raise UserError(f"--{flag} needs --engine=tensorflow: CTranslate2 has no "
                                "constrained search")
    for name in ("chunk_lines", "num_shards", "batch_tokens"):
        value = getattr(options, name)
        if value is not None and value < 1:
            raise UserError(f"--{name} must be >= 1, got {value}")
    from t2t_lite.inference.translator import check_overrides

    check_overrides(alpha=options.alpha)


def _parallel_searches(options, num_lines):
    """The searches run at once, TensorFlow's threads set for them where it has not started.
    Never more searches than lines: a single line keeps every core for its one search."""
    from t2t_lite.inference import parallel_search

    on_gpu = options.engine == "tensorflow" and parallel_search.tensorflow_on_gpu()
    searches = min(parallel_search.resolve(options.parallel_searches, on_gpu), max(num_lines, 1))
    parallel_search.configure_tensorflow(searches)
    return searches


def _recorded(output, name):
    """A setting as the unfinished run beside the output resolved it, or None."""
    return ((output.recorded_run or {}).get("settings") or {}).get(name)


def _precision(options, output):
    """decode_precision as it will run: `auto` becomes what the run being resumed chose, or what
    the probe chooses now."""
    if options.decode_precision not in resume.MACHINE_CHOICES \
            or options.engine != "tensorflow" or not options.model_dir:
        return options.decode_precision
    recorded = None if options.start_over else _recorded(output, "decode_precision")
    if recorded in ("float32", "bfloat16"):
        return recorded
    from t2t_lite.decoding import precision

    return precision.choose(options.decode_precision)[0]


def _compute_type(options, output):
    """compute_type to load with: `auto` / `default` become what the run being resumed resolved
    them to (CTranslate2 resolves them by the machine and the folder)."""
    if options.compute_type not in resume.MACHINE_CHOICES or options.start_over:
        return options.compute_type
    return _recorded(output, "compute_type") or options.compute_type


def _settings(options, precision, compute_type, texts):
    settings = {name: getattr(options, name) for name in OUTPUT_SETTINGS}
    settings.update(decode_precision=precision, compute_type=compute_type,
                    constraints_sha256=constraints.digest(options.constraints_file,
                                                          texts["constraints_file"]),
                    glossary_sha256=constraints.digest(options.glossary, texts["glossary"]))
    return settings


def _read_once(options, source):
    """{"constraints_file", "glossary": the file's bytes or None}, each read once, at the start:
    a pipe, a FIFO or /dev/stdin gives its bytes once, and a file may change under a long run.
    One that is the input (stdin read twice) or the other one is refused in one line first."""
    texts = {}
    seen = [(f"the input {what}", status) for what, status in source.described_statuses()]
    for name in ("constraints_file", "glossary"):
        path = getattr(options, name)
        texts[name] = None
        if not path:
            continue
        flag = f"--{name}"
        try:
            status = os.stat(path)
        except OSError:
            status = None  # read_once says why
        for what, other in seen:
            if status and other and (status.st_dev, status.st_ino) == (other.st_dev,
                                                                        other.st_ino):
                raise UserError(f"{flag} {path} is also {what}: one file cannot be read as "
                                "both; give each its own file")
        texts[name] = constraints.read_once(path, flag)
        seen.append((f"{flag} {path}", status))
    return texts


def _constraint_lines(options, source, data=None):
    """The constraint lines of this input's lines (a shard's own), checked; None without
    --constraints_file. data: the file's bytes (_read_once)."""
    if not options.constraints_file:
        return None
    if source.path is None:
        raise UserError("--constraints_file needs a regular file as the input (--decode_from_file"
                        " or stdin redirected from a file; a pipe or device is read as a stream): "
                        "its lines are matched to the input's by number")
    return constraints.read_constraints_file(options.constraints_file, source.first_line,
                                             source.total_lines, source.file_lines, data=data)


def _line_constraints(translator, file_constraints, glossary, options, first_line, protect):
    """(line_constraints(n, source) for decode_stream or None, glossary term counts: "applied",
    and "dropped": a term a line had no room for (constraints.MAX_PHRASES phrases or
    MAX_LINE_TOKENS tokens) or that contradicts the line's own phrases), after every phrase of
    the constraints file and the glossary is checked as it tokenizes (constraints.check_tokenized).
    first_line: the input's first line in the file (a shard's), for messages. protect: the
    protected_spans kinds no glossary term may match inside."""
    if file_constraints is None and not glossary:
        return None, {"applied": 0, "dropped": 0}
    line_tokens = _constraints_file_tokens(translator, file_constraints, options, first_line)
    entry_tokens = _glossary_entry_tokens(translator, glossary)
    counts = {"applied": 0, "dropped": 0}

    def line_constraints(number, source):
        phrases = constraints.split_line(file_constraints[number]) if file_constraints else []
        if glossary:
            # The line's own constraints first (read_constraints_file holds them to the caps),
            # then the glossary's terms while there is room; the summary counts the rest.
            tokens = line_tokens[number] if file_constraints else 0
            for negative, alternatives in glossary.phrases_for(source, protect):
                if _same_term(phrases, negative, alternatives):
                    continue  # the file gives it already: one phrase
                cost = entry_tokens.get(tuple(alternatives), 0)
                try:
                    constraints.split_line(constraints.join_line(
                        phrases + [(negative, alternatives)]))
                    fits = tokens + cost <= constraints.MAX_LINE_TOKENS
                except ValueError:  # too many phrases, or it contradicts the line's own
                    fits = False
                if fits:
                    phrases.append((negative, alternatives))
                    tokens += cost
                    counts["applied"] += 1
                else:
                    counts["dropped"] += 1
        return constraints.join_line(phrases)

    return line_constraints, counts


def _constraints_file_tokens(translator, file_constraints, options, first_line):
    """Each constraints file line's token count (constraints.token_count; 0 for every line
    when the translator tokenizes none), after checking its phrases tokenize."""
    from t2t_lite.inference import batch_decode

    line_tokens = [0] * len(file_constraints or ())
    if file_constraints:
        for start in range(0, len(file_constraints), batch_decode.TOKENIZE_CHUNK):
            chunk = file_constraints[start:start + batch_decode.TOKENIZE_CHUNK]
            encoded = batch_decode.encode_constraints(translator, chunk)
            if encoded is not None:
                constraints.check_tokenized(
                    chunk, encoded, lambda i: ("--constraints_file", options.constraints_file,
                                               first_line + start + i + 1))
                for i in range(len(chunk)):
                    line_tokens[start + i] = constraints.token_count(encoded, i)
    return line_tokens


def _glossary_entry_tokens(translator, glossary):
    """{a glossary entry's alternatives (tuple): its token count}, after checking each entry
    tokenizes; empty without a glossary or when the translator tokenizes none."""
    from t2t_lite.inference import batch_decode

    entry_tokens = {}
    if glossary:
        rows = [constraints.join_line([(e.negative, list(e.alternatives))])
                for e in glossary.entries]
        for start in range(0, len(rows), batch_decode.TOKENIZE_CHUNK):
            chunk = rows[start:start + batch_decode.TOKENIZE_CHUNK]
            encoded = batch_decode.encode_constraints(translator, chunk)
            if encoded is not None:
                constraints.check_tokenized(
                    chunk, encoded, lambda i: ("--glossary", glossary.path,
                                               glossary.entries[start + i].line))
                for i in range(len(chunk)):
                    entry_tokens[tuple(glossary.entries[start + i].alternatives)] = \
                        constraints.token_count(encoded, i)
    return entry_tokens


def _same_term(phrases, negative, alternatives):
    """A glossary phrase that a line's phrases give already: a positive one sharing an
    alternative with a positive phrase of the line, a negative one with the same
    alternatives (in normal form)."""
    alternatives = {constraints.normal_form(a) for a in alternatives}
    for other_negative, other in phrases:
        other = {constraints.normal_form(a) for a in other}
        if negative == other_negative and (alternatives & other if not negative
                                           else alternatives == other):
            return True
    return False
