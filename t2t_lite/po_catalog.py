"""A gettext catalog (PO or POT) translated as t2t-lite-po does it, as one library call.

    stats = translate_catalog(PoOptions(export_dir=E, input="x.pot", output="de.po"))
    print(stats.summary())

The catalog is read with polib (never by hand) and written back through it, so comments, flags,
contexts (msgctxt), references, previous msgids, obsolete entries and the header stay as they
were. What is translated:
- an entry without a translation (not obsolete, not fuzzy): msgstr from msgid; a plural entry
  gets every msgstr[n] the target language's nplurals asks for (msgstr[0] from msgid, msgstr[n>=1]
  from msgid_plural; with nplurals=1, msgstr[0] from msgid_plural); forms a translator already
  filled are kept;
- a fuzzy entry only with `translate_fuzzy` (its old translation is a human's draft: by default
  it stays as it is);
- every new translation is marked fuzzy, so a human reviews it, unless `no_fuzzy`.
Entries already translated are kept byte for byte.

A msgid holding "\\n" goes to the decoder one line per part and comes back joined with "\\n";
a part's leading and trailing white space (indentation, the newline structure msgfmt checks)
is kept from the source, blank parts are not sent. Where the model returns an empty translation
for a part, the entry is left untranslated (an empty part would change the newline structure)
and counted.

The protection of format strings follows each entry's flags: protected_spans.resolve(protect,
problem, po_flags) gives the kinds for an entry (c-format / python-format /
python-brace-format), entries are grouped by those kinds and each group is decoded as a line
file of its own through file_decoding.decode_file(DecodeOptions(..., protect=...)).

The header: a catalog whose header lacks a Language, Plural-Forms or charset (a .pot, whose
header holds "CHARSET" and "nplurals=INTEGER") gets them for the target language: Language,
Plural-Forms from PLURAL_FORMS (gettext's plural forms of common languages), Content-Type
text/plain; charset=UTF-8; the header's fuzzy mark goes, as msginit does. PO-Revision-Date is
set when a translation was written. The target language is `target_language`, else the model's
(its problem's target language, from the model_dir's run.json or the export's t2t_lite.json),
else the catalog's own Language. A catalog in another language than the model's is refused.

The output is written like the decoder's: never the input (device and inode), one writer (a lock
beside it), replaced atomically when complete. The decoder's work (line files, its resumable
outputs and progress records) lies in OUTPUT.t2t-po-work/ beside the output, so a killed run
re-run with the same command continues its decodes; the folder goes when the output is written.
A broken catalog ends in one UserError line naming the file and line number, nothing written.
"""
import codecs
import dataclasses
import datetime
import json
import os
import re
import sys
import time
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence

from t2t_lite import atomic, file_lock
from t2t_lite.errors import UserError
from t2t_lite.inference import resume

# gettext's Plural-Forms for common languages (the GNU gettext manual, "Plural forms", and
# msginit's table), keyed by language code; a code with a region (pt_BR) is looked up whole
# first, then by its language.
PLURAL_FORMS = {
    **{code: "nplurals=1; plural=0;" for code in
       ("ja", "ko", "zh", "vi", "th", "id", "ms", "lo", "km", "my")},
    **{code: "nplurals=2; plural=(n != 1);" for code in
       ("en", "de", "nl", "sv", "da", "nb", "nn", "no", "fi", "et", "el", "eo", "it", "es",
        "pt", "hu", "bg", "ca", "eu", "gl", "he", "tr", "af", "sq", "hi", "bn", "ur", "fa",
        "ta", "te", "ml", "kn", "mr", "gu", "pa", "sw", "fy", "lb", "is")},
    **{code: "nplurals=2; plural=(n > 1);" for code in ("fr", "pt_BR", "oc", "br", "fil",
                                                         "tl", "ln", "wa")},
    **{code: ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && n%10<=4 && "
              "(n%100<10 || n%100>=20) ? 1 : 2);") for code in ("ru", "uk", "be", "sr", "hr",
                                                                 "bs")},
    "cs": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "sk": "nplurals=3; plural=(n==1) ? 0 : (n>=2 && n<=4) ? 1 : 2;",
    "pl": ("nplurals=3; plural=(n==1 ? 0 : n%10>=2 && n%10<=4 && (n%100<10 || n%100>=20) ? 1 "
           ": 2);"),
    "lt": ("nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n%10>=2 && (n%100<10 || "
           "n%100>=20) ? 1 : 2);"),
    "lv": "nplurals=3; plural=(n%10==1 && n%100!=11 ? 0 : n != 0 ? 1 : 2);",
    "ro": "nplurals=3; plural=(n==1 ? 0 : (n==0 || (n%100 > 0 && n%100 < 20)) ? 1 : 2);",
    "ga": "nplurals=5; plural=(n==1 ? 0 : n==2 ? 1 : n<7 ? 2 : n<11 ? 3 : 4);",
    "sl": "nplurals=4; plural=(n%100==1 ? 0 : n%100==2 ? 1 : n%100==3 || n%100==4 ? 2 : 3);",
    "ar": ("nplurals=6; plural=(n==0 ? 0 : n==1 ? 1 : n==2 ? 2 : n%100>=3 && n%100<=10 ? 3 "
           ": n%100>=11 ? 4 : 5);"),
}

WORK_SUFFIX = ".t2t-po-work"
_WORK_MARKER = "t2t-po-work.json"
_WORK_KIND = "t2t-lite-po work folder"
# The placeholders xgettext writes into a template's header.
_TEMPLATE_VALUES = ("LANGUAGE", "CHARSET", "INTEGER", "EXPRESSION")
_CHARSET = re.compile(rb'"?Content-Type:[^\n]*?charset=([\w_\-:.]+)', re.IGNORECASE)
_NPLURALS = re.compile(r"nplurals\s*=\s*(\d+)")
_POLIB_LINE = re.compile(r"\(line (\d+)\)(?::\s*(.*))?", re.DOTALL)
_FORMAT_FLAGS = ("-format",)

# translate(lines, kinds) -> one translation per line: the decoder, or a test's stand-in.
Translate = Callable[[List[str], FrozenSet[str]], List[str]]


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
    batch_tokens: int = 4096
    chunk_lines: int = 500  # the decoder's chunk: a killed run resumes after its last one
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
    left_empty: int = 0  # entries the model gave an empty translation: left untranslated
    obsolete: int = 0
    lines: int = 0  # distinct lines to translate
    lines_resumed: int = 0  # of them, translated by an earlier, interrupted run
    repaired: Optional[int] = None  # lines whose format specifiers needed the repair step
    header_filled: Sequence[str] = ()  # header fields written for the target language
    target_language: Optional[str] = None
    seconds: float = 0.0

    def as_dict(self):
        return dataclasses.asdict(self)

    def summary(self):
        parts = [f"translated {self.translated} of {self.entries} entries ({self.plural} plural)"
                 f" in {self.seconds:.1f}s", f"{self.kept} already translated kept",
                 f"{self.fuzzy_kept} fuzzy kept", f"{self.fuzzy_marked} marked fuzzy",
                 f"{self.left_empty} left untranslated (empty translation)",
                 f"{self.lines} lines decoded"
                 + (f" ({self.lines_resumed} by the interrupted run resumed)"
                    if self.lines_resumed else "")]
        if self.repaired is not None:
            parts.append(f"{self.repaired} with format specifiers repaired")
        if self.header_filled:
            parts.append(f"header: {', '.join(self.header_filled)} set for "
                         f"{self.target_language}")
        return "; ".join(parts)


# ---- reading a catalog ------------------------------------------------------------------------

def _line_of(raw, offset):
    return raw.count(b"\n", 0, offset) + 1


def _header_line(raw, field=None):
    """The line of a header field (`"Plural-Forms:`), else of the header entry, else 1."""
    if field:
        match = re.search(rb'^\s*(msgstr\s+)?"' + re.escape(field.encode()) + rb":", raw,
                          re.MULTILINE)
        if match:
            return _line_of(raw, match.start())
    match = re.search(rb'^msgid\s+""\s*$', raw, re.MULTILINE)
    return _line_of(raw, match.start()) if match else 1


def read_catalog(path):
    """(polib.POFile, raw bytes) of a PO or POT file; a UserError naming the file and line for
    what cannot be read: a missing file, a syntax error, an unknown or wrong charset."""
    import polib

    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError as error:
        raise UserError(f"--input {path}: cannot read ({error.strerror})") from None
    match = _CHARSET.search(raw)
    charset = match.group(1).decode("ascii", "replace") if match else None
    encoding = "utf-8"
    if charset and charset.upper() != "CHARSET":
        try:
            encoding = codecs.lookup(charset).name
        except LookupError:
            raise UserError(f"{path}:{_line_of(raw, match.start())}: unknown charset "
                            f"{charset!r} in the header's Content-Type") from None
    try:
        raw.decode(encoding)
    except UnicodeDecodeError as error:
        raise UserError(f"{path}:{_line_of(raw, error.start)}: not valid {encoding} (the "
                        f"header's charset is {charset or 'not given'})") from None
    try:
        catalog = polib.pofile(path, encoding=encoding, wrapwidth=78)
    except (OSError, ValueError) as error:
        message = " ".join(str(error).split())
        found = _POLIB_LINE.search(message)
        if found:
            detail = f": {found.group(2)}" if found.group(2) else ""
            raise UserError(f"{path}:{found.group(1)}: PO syntax error{detail}") from None
        raise UserError(f"{path}: not a PO catalog ({message[:200]})") from None
    return catalog, raw


def _field_value(value):
    value = (value or "").strip()
    return "" if not value or any(p in value for p in _TEMPLATE_VALUES) else value


def _plural_forms_for(language):
    if not language:
        return None
    code = language.replace("-", "_")
    return PLURAL_FORMS.get(code) or PLURAL_FORMS.get(code.split("_")[0].lower())


def _same_language(a, b):
    return a.replace("-", "_").split("_")[0].lower() == b.replace("-", "_").split("_")[0].lower()


def plan_header(catalog, raw, path, target_language):
    """(header fields to set, nplurals): Language, Plural-Forms and Content-Type where the
    catalog's header lacks them (UserError naming the line where it cannot work)."""
    metadata = catalog.metadata
    has_plurals = any(e.msgid_plural for e in catalog if not e.obsolete)
    language = _field_value(metadata.get("Language"))
    if language and target_language and not _same_language(language, target_language):
        raise UserError(f"{path}:{_header_line(raw, 'Language')}: the catalog is in "
                        f"{language!r}, but the translations would be in {target_language!r}; "
                        "translate it with a model into its language, or give "
                        "--target_language")
    target = target_language or language or None
    changes = {}
    if not language and target:
        changes["Language"] = target
    plural_forms = _field_value(metadata.get("Plural-Forms"))
    if plural_forms:
        found = _NPLURALS.search(plural_forms)
        if not found or not 1 <= int(found.group(1)) <= 10 or "plural=" not in plural_forms:
            raise UserError(f"{path}:{_header_line(raw, 'Plural-Forms')}: the header's "
                            f"Plural-Forms {plural_forms!r} lacks a valid nplurals=N and "
                            "plural=EXPRESSION")
        nplurals = int(found.group(1))
    else:
        plural_forms = _plural_forms_for(target)
        if plural_forms:
            changes["Plural-Forms"] = plural_forms
            nplurals = int(_NPLURALS.search(plural_forms).group(1))
        elif has_plurals:
            first = next(e for e in catalog if e.msgid_plural and not e.obsolete)
            where = (f"the catalog's language {target!r} is not in t2t-lite-po's table of "
                     "plural forms" if target else
                     "no target language is known (give --target_language)")
            raise UserError(f"{path}:{_header_line(raw, 'Plural-Forms')}: the header has no "
                            f"Plural-Forms, the entry at line {first.linenum} has plural forms, "
                            f"and {where}; add a Plural-Forms line to the header")
        else:
            nplurals = None
    content_type = metadata.get("Content-Type") or ""
    if "charset=" not in content_type or "CHARSET" in content_type:
        changes["Content-Type"] = "text/plain; charset=UTF-8"
        if not _field_value(metadata.get("Content-Transfer-Encoding")):
            changes["Content-Transfer-Encoding"] = "8bit"
    if not _field_value(metadata.get("MIME-Version")) and changes:
        changes["MIME-Version"] = "1.0"
    return changes, nplurals, target


# ---- what to translate ------------------------------------------------------------------------

@dataclasses.dataclass
class _Job:
    """One entry's missing translations: {msgstr index (None: msgstr) -> source text}."""
    entry: object
    sources: Dict[Optional[int], str]
    kinds: FrozenSet[str]
    retranslate: bool  # a fuzzy entry translated again
    forms: Optional[int] = None  # a plural entry's nplurals


def _parts(text):
    """[(leading, core, trailing)] of each "\\n"-separated part; core "" for a blank part."""
    parts = []
    for piece in text.split("\n"):
        core = piece.strip()
        if not core:
            parts.append((piece, "", ""))
            continue
        start = piece.index(core[0])
        parts.append((piece[:start], core, piece[start + len(core):]))
    return parts


def _lines_of(text):
    return [core for _, core, _ in _parts(text) if core]


def _rebuilt(text, translations):
    """text's parts with each core replaced by the next of `translations`; None when one of
    them is empty (left untranslated)."""
    out, it = [], iter(translations)
    for lead, core, trail in _parts(text):
        if not core:
            out.append(lead)
            continue
        translated = " ".join(next(it).split("\n")).strip()
        if not translated:
            return None
        out.append(lead + translated + trail)
    return "\n".join(out)


def _format_flags(entry):
    """The entry's format flags (c-format, no-python-format, ...), sorted: what decides its
    protection."""
    return tuple(sorted(flag for flag in entry.flags if flag.endswith(_FORMAT_FLAGS)))


def plan_jobs(catalog, nplurals, options, kinds_of, stats):
    """The entries to translate, as _Jobs; counts the others into stats."""
    jobs = []
    for entry in catalog:
        if entry.obsolete:
            stats.obsolete += 1
            continue
        stats.entries += 1
        retranslate = entry.fuzzy and options.translate_fuzzy
        if entry.fuzzy and not retranslate:
            stats.fuzzy_kept += 1
            continue
        if entry.msgid_plural:
            forms = nplurals or max(len(entry.msgstr_plural), 2)
            sources = {}
            for n in range(forms):
                if retranslate or not entry.msgstr_plural.get(n):
                    sources[n] = entry.msgid_plural if (n >= 1 or forms == 1) else entry.msgid
        else:
            sources = {None: entry.msgid} if retranslate or not entry.msgstr else {}
        if not sources or not any(_lines_of(text) for text in sources.values()):
            stats.kept += 1
            continue
        jobs.append(_Job(entry, sources, kinds_of(_format_flags(entry)), retranslate,
                         forms if entry.msgid_plural else None))
    return jobs


def apply_translations(jobs, translated, options, stats):
    """Writes each job's translations into its entry (`translated`: {(kinds, line): text})."""
    for job in jobs:
        texts = {}
        for index, source in job.sources.items():
            text = _rebuilt(source, [translated[(job.kinds, line)]
                                     for line in _lines_of(source)])
            if text is None:
                break
            texts[index] = text
        else:
            entry = job.entry
            for index, text in texts.items():
                if index is None:
                    entry.msgstr = text
                else:
                    entry.msgstr_plural[index] = text
            for index in [n for n, text in entry.msgstr_plural.items()
                          if job.forms and n >= job.forms and not text]:
                del entry.msgstr_plural[index]  # a template's form the language does not have
            stats.translated += 1
            stats.plural += bool(entry.msgid_plural)
            if options.no_fuzzy:
                if "fuzzy" in entry.flags:
                    entry.flags.remove("fuzzy")
                entry.previous_msgid = entry.previous_msgid_plural = None
                entry.previous_msgctxt = None
            else:
                if "fuzzy" not in entry.flags:
                    entry.flags.insert(0, "fuzzy")
                stats.fuzzy_marked += 1
            continue
        stats.left_empty += 1


# ---- the decoder as translator ----------------------------------------------------------------

def group_name(kinds):
    return "+".join(sorted(kinds)) or "none"


class DecoderTranslator:
    """translate(lines, kinds) through file_decoding.decode_file, one line file per group of
    kinds in `work` (a folder this run owns), resuming an unfinished decode found there."""

    def __init__(self, options, work, progress=sys.stderr):
        self.options, self.work, self.progress = options, work, progress
        self.repaired = None
        self.resumed = 0  # lines an earlier run had decoded

    def __call__(self, lines, kinds):
        from t2t_lite.file_decoding import DecodeOptions, decode_file

        name = group_name(kinds)
        source = os.path.join(self.work, f"{name}.src")
        output = os.path.join(self.work, f"{name}.out")
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        if _read_bytes(source) != data:  # a new or changed group: its old decode is void
            for stale in (output, output + resume.PROGRESS_SUFFIX):
                if os.path.exists(stale):
                    os.remove(stale)
            with atomic.open_atomic(source, "wb", durable=True) as f:
                f.write(data)
        if self._finished(output, len(lines)):
            self.resumed += len(lines)
        else:
            stats = decode_file(DecodeOptions(
                model_dir=self.options.model_dir, export_dir=self.options.export_dir,
                checkpoint_path=self.options.checkpoint_path, decode_from_file=source,
                decode_to_file=output, beam_size=self.options.beam_size,
                batch_tokens=self.options.batch_tokens, chunk_lines=self.options.chunk_lines,
                decode_precision=self.options.decode_precision, engine=self.options.engine,
                protect=",".join(sorted(kinds)) or "none"), progress=self.progress)
            self.resumed += len(lines) - stats.lines
            repaired = getattr(stats, "protect_repaired", None)
            if repaired is not None:
                self.repaired = (self.repaired or 0) + repaired
        with open(output, encoding="utf-8", errors="replace", newline="") as f:
            translations = f.read().split("\n")[:-1]
        if len(translations) != len(lines):
            raise UserError(f"{output} holds {len(translations)} lines for {len(lines)} "
                            f"inputs; re-run with --start_over")
        return translations

    @staticmethod
    def _finished(output, count):
        """A decode whose output is complete: no progress record, every line there."""
        if not os.path.isfile(output) or os.path.exists(output + resume.PROGRESS_SUFFIX):
            return False
        with open(output, "rb") as f:
            return f.read().count(b"\n") == count


def _read_bytes(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


class WorkFolder:
    """OUTPUT.t2t-po-work: made and owned by this tool (a marker file says so, with what
    identifies the run), kept by a killed run, removed, file by file, when the output is done."""

    def __init__(self, path, identity, start_over):
        self.path, self.identity = path, identity
        marker = os.path.join(path, _WORK_MARKER)
        if os.path.lexists(path):
            recorded = _read_marker(marker)
            if recorded is None:
                raise UserError(f"{path} exists and is not a t2t-lite-po work folder; move it "
                                "away to write the output")
            if start_over:
                self.remove()
            elif recorded.get("run") != identity:
                difference = resume.first_difference(recorded.get("run"), identity)
                raise UserError(f"{path} holds an unfinished run of another catalog, model or "
                                f"setting ({difference}); re-run with --start_over to translate "
                                "from the start")
        os.makedirs(path, exist_ok=True)
        atomic.write_json(marker, {"kind": _WORK_KIND, "run": identity}, indent=1,
                          sort_keys=True)

    def remove(self):
        """Removes what this tool and the decoder write here; a folder holding anything else
        stays (it is not ours to delete)."""
        if not os.path.isdir(self.path) or os.path.islink(self.path):
            return
        for name in os.listdir(self.path):
            if name == _WORK_MARKER or re.fullmatch(
                    r"[a-z+]+\.(src|out)(\.progress\.json|\.lock)?(\.incomplete)?", name):
                os.remove(os.path.join(self.path, name))
        try:
            os.rmdir(self.path)
        except OSError:
            print(f"kept {self.path}: it holds files t2t-lite-po did not write", file=sys.stderr)


def _read_marker(path):
    try:
        with open(path, encoding="utf-8") as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("kind") == _WORK_KIND else None


# ---- the model's language and problem ---------------------------------------------------------

def model_info(model_dir=None, export_dir=None):
    """(problem name, target language) the model records; either may be None."""
    problem, params = None, []
    try:
        if model_dir:
            from t2t_lite.model_dir import files

            info = files.read_run_info(model_dir)
            problem, params = info.get("problem"), info.get("problem_params") or []
        elif export_dir:
            from t2t_lite.inference import saved_model

            path = os.path.join(export_dir, saved_model.METADATA_NAME)
            if not os.path.isfile(path):
                path = os.path.join(saved_model.latest_version_dir(export_dir),
                                    saved_model.METADATA_FILE)
            if os.path.isfile(path):
                with open(path, encoding="utf-8") as f:
                    metadata = json.load(f)
                problem, params = metadata.get("problem"), metadata.get("problem_params") or []
    except (OSError, ValueError):
        return None, None  # the decoder says what is wrong with the model
    for pair in params:
        key, _, value = str(pair).partition("=")
        if key == "target_lang" and value:
            return problem, value
    return problem, problem_target_language(problem)


def problem_target_language(problem):
    """A registered problem's target language (its class's target_language or
    default_target_lang), else the tensor2tensor name's (translate_ende_*: de), else None."""
    if not problem:
        return None
    from t2t_lite import problems, registry  # noqa: F401  (problems: the built-ins registered)

    try:
        cls = registry.problem_class(problem)
    except UserError:
        cls = None
    for attribute in ("target_language", "default_target_lang"):
        value = getattr(cls, attribute, None)
        if isinstance(value, str) and value:
            return value
    found = re.match(r"translate_([a-z]{2})([a-z]{2})(_|$)", registry.canonical_name(problem)
                     if cls else problem)
    return found.group(2) if found else None


# ---- the whole run ----------------------------------------------------------------------------

def check_options(options):
    """UserError for settings that cannot work, named as the tool's flags."""
    for name in ("input", "output"):
        if not getattr(options, name):
            raise UserError(f"--{name} is required")
    if not (options.model_dir or options.export_dir):
        raise UserError("give --model_dir or --export_dir")
    for flag in ("model_dir", "export_dir"):
        path = getattr(options, flag)
        if path and not os.path.isdir(path):
            raise UserError(f"--{flag} {path} is not a folder")
    from t2t_lite import file_decoding

    # The decoder's own checks (the model's flags, beam size, chunk and batch sizes), before
    # any work.
    file_decoding.check_options(file_decoding.DecodeOptions(
        model_dir=options.model_dir, export_dir=options.export_dir,
        checkpoint_path=options.checkpoint_path, beam_size=options.beam_size,
        batch_tokens=options.batch_tokens, chunk_lines=options.chunk_lines,
        decode_precision=options.decode_precision, engine=options.engine))


def _kinds_resolver(setting, problem):
    from t2t_lite.inference import protected_spans

    cache = {}

    def kinds_of(flags):
        if flags not in cache:
            cache[flags] = frozenset(protected_spans.resolve(setting, problem_name=problem,
                                                             po_flags=flags, po=True))
        return cache[flags]

    kinds_of(())  # a bad --protect fails before any work
    return kinds_of


def translate_catalog(options, translate=None, kinds_of=None, progress=sys.stderr):
    """Translates options.input into options.output (see the module docstring) and returns
    PoStats. translate(lines, kinds) -> translations replaces the decoder (tests); kinds_of
    (the entry's format flags) -> frozenset of protected kinds replaces protected_spans."""
    start = time.monotonic()
    if translate is None:
        check_options(options)
    elif not (options.input and options.output):
        raise UserError("--input and --output are required")
    catalog, raw = read_catalog(options.input)
    problem, model_language = (model_info(options.model_dir, options.export_dir)
                               if translate is None else (None, None))
    target = options.target_language or model_language
    changes, nplurals, target = plan_header(catalog, raw, options.input, target)
    stats = PoStats(target_language=target, header_filled=tuple(changes))
    kinds_of = kinds_of or _kinds_resolver(options.protect, problem)
    jobs = plan_jobs(catalog, nplurals, options, kinds_of, stats)

    if resume.is_stream_path(options.output):
        raise UserError(f"--output {options.output} is not a regular file: t2t-lite-po "
                        "replaces its output whole when it is complete; write to a file")
    target_path = os.path.realpath(options.output)
    resume.check_output_path(target_path, "--output")
    resume.check_not_an_input(target_path, [(f"--input {options.input}",
                                             os.stat(options.input))], "--output")
    lock = file_lock.FileLock(target_path + file_lock.LOCK_SUFFIX,
                              f"--output {target_path}").acquire()
    try:
        work = None
        if translate is None:
            work = WorkFolder(target_path + WORK_SUFFIX, _run_identity(options, raw),
                              options.start_over)
            translate = DecoderTranslator(options, work.path, progress)
        translated = {}
        for kinds in _groups(jobs):
            lines = list(dict.fromkeys(line for job in jobs if job.kinds == kinds
                                       for text in job.sources.values()
                                       for line in _lines_of(text)))
            stats.lines += len(lines)
            outputs = translate(lines, kinds)
            if len(outputs) != len(lines):
                raise UserError(f"the translator returned {len(outputs)} lines for "
                                f"{len(lines)}")
            translated.update(((kinds, line), out) for line, out in zip(lines, outputs))
        stats.repaired = getattr(translate, "repaired", None)
        stats.lines_resumed = getattr(translate, "resumed", 0)
        apply_translations(jobs, translated, options, stats)
        _fill_header(catalog, changes, stats.translated > 0)
        _write(catalog, target_path, options.output)
        if work is not None:
            work.remove()
    finally:
        lock.release()
    stats.seconds = time.monotonic() - start
    return stats


def _groups(jobs):
    return sorted({job.kinds for job in jobs}, key=lambda kinds: (len(kinds), sorted(kinds)))


def _run_identity(options, raw):
    import hashlib

    return {"input_sha256": hashlib.sha256(raw).hexdigest(),
            "model": resume.model_identity(options.model_dir, options.checkpoint_path,
                                           options.export_dir, options.engine),
            "settings": {name: getattr(options, name) for name in (
                "target_language", "protect", "translate_fuzzy", "beam_size", "batch_tokens",
                "chunk_lines", "decode_precision", "engine")}}


def _fill_header(catalog, changes, translated):
    for key, value in changes.items():
        catalog.metadata[key] = value
    if changes:
        catalog.metadata_is_fuzzy = False  # as msginit does: the header is now real
    if translated:
        catalog.metadata["PO-Revision-Date"] = datetime.datetime.now().astimezone().strftime(
            "%Y-%m-%d %H:%M%z")


def _write(catalog, path, name):
    text = catalog.__unicode__()
    encoding = catalog.encoding
    try:
        data = text.encode(encoding)
    except UnicodeEncodeError:
        # A translation outside the catalog's charset: the whole catalog becomes UTF-8.
        content_type = catalog.metadata.get("Content-Type") or "text/plain; charset=UTF-8"
        catalog.metadata["Content-Type"] = re.sub(r"charset=[\w_\-:.]+", "charset=UTF-8",
                                                  content_type)
        data = catalog.__unicode__().encode("utf-8")
    try:
        with atomic.open_atomic(path, "wb", durable=True) as f:
            f.write(data)
    except OSError as error:
        raise UserError(f"--output {name}: cannot write ({error.strerror})") from None
