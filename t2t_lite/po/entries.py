"""Which entries t2t-lite-po translates, from which source text, and which hypothesis it keeps.

An entry without a translation (not obsolete; fuzzy only with translate_fuzzy) becomes a Job:
{msgstr index (None: msgstr) -> source text}. A plural entry's msgstr[k] is translated from the
singular msgid only where the target's Plural-Forms selects form k for n == 1 alone (German's
form 0); every other form, Russian's form 0 included (1, 21, 31, ...), from msgid_plural.

A source goes to the model one line per part, without its accelerator mark: the parts are
separated by the source's control characters (a newline, a tab, `\\a`, `\\r`, ..., each kept where
it stands, as the source has it) and ANSI terminal sequences. A part's leading and trailing
white space is kept from the source; blank parts, and parts with no letter outside protected
spans (`%s`, `<b>`), are not sent: they are copied. For each part the first hypothesis that
passes `part_problem` is kept: the hypotheses of the cheapest attempt first, each repaired
(protected_spans.restore) and as the model wrote it. The whole msgstr, accelerator placed, then
passes `entry_problem`: msgfmt's own reading of the entry's format flags (po/formats.py), then
translate-toolkit's checks (po/review.py); what passes neither is left untranslated and counted.
"""
import dataclasses
import re
from typing import Dict, FrozenSet, Optional, Tuple

from t2t_lite.inference import span_finding
from t2t_lite.po import accelerators, format_base, formats, review

# A hypothesis's problem when the catalog's charset cannot write it.
CHARSET = "a character the catalog's charset cannot hold"
_RANGE = re.compile(r"range:\s*(\d+)\.\.(\d+)")
# What separates a source's parts: control characters (escapes such as \\n, \\t, \\a) and
# ANSI terminal sequences, which the model would drop or turn into spaces.
_BREAK = re.compile(r"(\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x1f\x7f])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def checked_flags(flags):
    """The entry's format flags that msgfmt -c checks and po/formats.py reads."""
    return tuple(flag for flag in formats.format_flags(flags)
                 if flag[:-len("-format")] in format_base.LANGUAGES)


def range_of(flags):
    for flag in flags:
        found = _RANGE.fullmatch(flag.strip())
        if found:
            return int(found.group(1)), int(found.group(2))
    return None


@dataclasses.dataclass
class Job:
    """One entry's missing translations."""
    entry: object
    sources: Dict[Optional[int], str]  # msgstr index (None: msgstr) -> source, accelerator out
    kinds: FrozenSet[str]  # the protected-span kinds of its lines
    flags: Tuple[str, ...]  # the formats msgfmt checks it as that po/formats.py reads
    accelerator: Optional[accelerators.Accelerator]
    retranslate: bool  # a fuzzy entry translated again
    forms: Optional[int] = None  # a plural entry's nplurals
    singular_only: FrozenSet[int] = frozenset()  # plural forms that serve n == 1 alone
    rule: object = None  # the catalog's plural.PluralForms
    range_: Optional[Tuple[int, int]] = None  # the entry's `#, range: a..b`
    reviewer: object = None  # the catalog's review.Reviewer (None: msgfmt's checks only)
    can_hold: object = None  # can_hold(text): the catalog's charset can write it (None: any)

    def lines(self):
        """The source parts the model translates (not those copied)."""
        return [core for text in self.sources.values() for core in job_lines(self, text)]


def parts(text):
    """[(leading, core, trailing, separator)] of each part (see the module docstring); core ""
    for a blank part; separator is what follows the part ("" after the last)."""
    pieces = _BREAK.split(text)
    out = []
    for at in range(0, len(pieces), 2):
        piece, separator = pieces[at], (pieces[at + 1] if at + 1 < len(pieces) else "")
        core = piece.strip()
        if not core:
            out.append((piece, "", "", separator))
            continue
        start = piece.index(core[0])
        out.append((piece[:start], core, piece[start + len(core):], separator))
    return out


def cores(text):
    return [core for _, core, _, _ in parts(text) if core]


def rebuilt(text, translations):
    """text's parts with each core replaced by the next of `translations`."""
    out, it = [], iter(translations)
    for lead, core, trail, separator in parts(text):
        out.append((lead + next(it) + trail if core else lead) + separator)
    return "".join(out)


def one_line(hypothesis):
    """A hypothesis as one part: its control characters are spaces (the source's newlines,
    tabs and other escapes are kept around the parts)."""
    return _CONTROL.sub(" ", hypothesis).strip(" ")


def directives(text, flags):
    """The directives msgfmt reads in text for each flag (those before an invalid one)."""
    found = []
    for flag in flags:
        try:
            found += formats.directives(text, flag, translated=True)
        except format_base.FormatError as error:
            found += error.directives
    return found


def protected_ranges(job, text):
    """(start, end) of text's protected spans and the directives msgfmt reads for its flags."""
    return ([(s.start, s.end) for s in span_finding.find_spans(text, job.kinds)]
            + [(d.start, d.end) for d in directives(text, job.flags)])


def job_lines(job, text):
    """text's parts that the model translates for the job (not those copied)."""
    return [core for core in cores(text) if not copied(job, core)]


def copied(job, core):
    """Whether a source part is copied rather than translated: no letter outside its protected
    spans, directives and non-prose text (`%s`, `<b>`, `%(name)s`)."""
    skip = protected_ranges(job, core) + accelerators.not_prose(core)
    return not any(char.isalpha() and not any(start <= i < end for start, end in skip)
                   for i, char in enumerate(core))


def plan(messages, rule, options, kinds_of, stats, reviewer=None, can_hold=None):
    """The entries to translate of a catalog's messages (not the header, not obsolete), as
    Jobs judged by `reviewer` (review.Reviewer); counts the others into stats. An entry's
    accelerator is the catalog's mark (reviewer.accelerator_mark) in its msgid's prose; in a
    catalog that shows no mark, a single mark in prose that msgfmt --check-accelerators would
    hold the msgstr to. can_hold(text): whether the catalog's charset writes a hypothesis (one
    it cannot is passed over for the next)."""
    mark = reviewer.accelerator_mark if reviewer is not None else None
    marks = (mark,) if mark else accelerators.MARKS
    jobs = []
    for entry in messages:
        stats.entries += 1
        retranslate = entry.fuzzy and options.translate_fuzzy
        if entry.fuzzy and not retranslate:
            stats.fuzzy_kept += 1
            continue
        accelerator = accelerators.find(entry.msgid, marks)
        source = (lambda text: accelerators.strip(text, accelerator)) if accelerator else str
        singular_only = frozenset()
        forms = None
        if entry.msgid_plural:
            forms = rule.nplurals if rule else max(len(entry.msgstr_plural), 2)
            singular_only = frozenset(k for k in range(forms)
                                      if rule is not None and rule.singular_only(k))
            sources = {k: source(entry.msgid if k in singular_only else entry.msgid_plural)
                       for k in range(forms) if retranslate or not entry.msgstr_plural.get(k)}
        else:
            sources = {None: source(entry.msgid)} if retranslate or not entry.msgstr else {}
        if not sources:
            stats.kept += 1
            continue
        # The format words in the catalog's order: of two for one language the last wins.
        jobs.append(Job(entry, sources, kinds_of(tuple(
            f for f in entry.flags if f.endswith("-format"))), checked_flags(entry.flags),
            accelerator, retranslate, forms, singular_only, rule, range_of(entry.flags),
            reviewer, can_hold))
    return jobs


def part_problem(job, source_core, hypothesis, protected_of=None):
    """Why a hypothesis cannot stand for a source part (None: it can): empty, a format that
    msgfmt reads differently from the source's, accelerator marks that would make the entry's
    count wrong or no letter to carry its accelerator, or a failure of translate-toolkit's checks
    that the source does not explain. protected_of(text) -> its protected (start, end) spans."""
    if not hypothesis.strip():
        return "empty"
    if job.can_hold is not None and not job.can_hold(hypothesis):
        return CHARSET
    for flag in job.flags:
        reason = formats.check_entry(source_core, hypothesis, flag)
        if reason:
            return reason
    for mark in accelerators.MARKS:
        if job.accelerator and job.accelerator.mark == mark:
            # The mark is placed afterwards: any other is the source's (a placeholder's `_`).
            if accelerators.count(hypothesis, mark) != accelerators.count(source_core, mark):
                return f"a second accelerator mark {mark!r}"
        elif (job.forms is None and job.entry.msgid.count(mark) == 1
              and hypothesis.count(mark) != source_core.count(mark)):
            # msgfmt --check-accelerators holds a msgid's single mark, an identifier's `_` too.
            return f"the msgid's single {mark!r}"
    if (job.accelerator and protected_of is not None and len(job_lines(job, job.entry.msgid)) == 1
            and accelerators.place(hypothesis, job.accelerator, protected_of(hypothesis)) is None):
        return "no letter to carry the accelerator"
    if job.reviewer is not None:
        name = job.reviewer.unexplained(source_core, hypothesis)
        if name:
            return review.problem(name)
    return None


def entry_problem(job, texts):
    """Why the translations {msgstr index: text} cannot be written into the job's entry, as
    msgfmt -c and --check-accelerators read the entry they make (forms a translator filled
    included), then translate-toolkit's checks; None when they can."""
    entry = job.entry
    if any(not text.strip() for text in texts.values()) and entry.msgid.strip():
        return "empty"
    if job.forms is not None:
        msgstr = [texts.get(k, entry.msgstr_plural.get(k, "")) for k in range(job.forms)]
    else:
        msgstr = texts[None]
    errors = formats.entry_errors(entry.msgid, msgstr, job.flags,
                                  msgid_plural=entry.msgid_plural or None,
                                  plural_forms=job.rule, range_=job.range_)
    if errors:
        return errors[0]
    if job.forms is None:
        for mark in accelerators.MARKS:
            reason = formats.check_accelerators(entry.msgid, msgstr, mark)
            if reason:
                return reason
    if job.reviewer is not None:
        for index, text in texts.items():
            # Against the text it was translated from (Russian's form 0 from msgid_plural).
            source = entry.msgid if index is None or index in job.singular_only \
                else entry.msgid_plural
            name = job.reviewer.unexplained(source, text)
            if name:
                return review.problem(name)
    return None


def with_accelerator(job, text, protected_spans_of):
    """text with the job's accelerator placed (unchanged without one); None where it has no
    place."""
    if job.accelerator is None:
        return text
    return accelerators.place(text, job.accelerator, protected_spans_of(text))


def choose_parts(job, source, candidates_of, protected_of=None):
    """The parts' chosen hypotheses for one source of the job, or the first part's problem.
    candidates_of(core) -> the candidates so far for that line, best first; a part with
    nothing to translate is its own translation."""
    chosen = []
    for core in cores(source):
        if copied(job, core):
            chosen.append(core)
            continue
        problem = "no hypothesis"
        for candidate in candidates_of(core):
            candidate = one_line(candidate)
            problem = part_problem(job, core, candidate, protected_of)
            if problem is None:
                chosen.append(candidate)
                break
        else:
            return None, (core, problem)
    return chosen, None
