"""Which entries t2t-lite-po translates, from which source text, and which hypothesis it keeps.

An entry without a translation (not obsolete; fuzzy only with translate_fuzzy) becomes a Job:
{msgstr index (None: msgstr) -> source text}. A plural entry's msgstr[k] is translated from the
singular msgid only where the target's Plural-Forms selects form k for n == 1 alone (German's
form 0); every other form, Russian's form 0 included (1, 21, 31, ...), from msgid_plural.

A source goes to the model one line per "\\n"-separated part, without its accelerator mark; a
part's leading and trailing white space is kept from the source and blank parts are not sent.
For each part the first hypothesis that passes `part_problem` is kept: the hypotheses of the
cheapest attempt first, each repaired (protected_spans.restore) and as the model wrote it. The
whole msgstr, accelerator placed, then passes `entry_problem`, msgfmt's own reading of the
entry's format flag (po/formats.py); what passes neither is left untranslated and counted.
"""
import dataclasses
import re
from typing import Dict, FrozenSet, Optional, Tuple

from t2t_lite.po import accelerators, formats

_RANGE = re.compile(r"range:\s*(\d+)\.\.(\d+)")


def checked_flags(flags):
    """The entry's format flags that msgfmt -c checks and po/formats.py reads."""
    return tuple(flag for flag in formats.format_flags(flags)
                 if flag[:-len("-format")] in formats.LANGUAGES)


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

    def lines(self):
        return [core for text in self.sources.values() for core in cores(text)]


def parts(text):
    """[(leading, core, trailing)] of each "\\n"-separated part; core "" for a blank part."""
    out = []
    for piece in text.split("\n"):
        core = piece.strip()
        if not core:
            out.append((piece, "", ""))
            continue
        start = piece.index(core[0])
        out.append((piece[:start], core, piece[start + len(core):]))
    return out


def cores(text):
    return [core for _, core, _ in parts(text) if core]


def rebuilt(text, translations):
    """text's parts with each core replaced by the next of `translations`."""
    out, it = [], iter(translations)
    for lead, core, trail in parts(text):
        out.append(lead + next(it) + trail if core else lead)
    return "\n".join(out)


def one_line(hypothesis):
    """A hypothesis as one part: its newlines are spaces (the source's newline structure is
    what msgfmt checks); tabs and every other character stay."""
    return " ".join(hypothesis.split("\n")).strip(" ")


def plan(messages, rule, options, kinds_of, stats):
    """The entries to translate of a catalog's messages (not the header, not obsolete), as
    Jobs; counts the others into stats."""
    jobs = []
    for entry in messages:
        stats.entries += 1
        retranslate = entry.fuzzy and options.translate_fuzzy
        if entry.fuzzy and not retranslate:
            stats.fuzzy_kept += 1
            continue
        accelerator = accelerators.find(entry.msgid)
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
        jobs.append(Job(entry, sources, kinds_of(tuple(sorted(
            f for f in entry.flags if f.endswith("-format")))), checked_flags(entry.flags),
            accelerator, retranslate, forms, singular_only, rule, range_of(entry.flags)))
    return jobs


def part_problem(job, source_core, hypothesis):
    """Why a hypothesis cannot stand for a source part (None: it can): empty, a format that
    msgfmt reads differently from the source's, or an accelerator mark that would make the
    entry's count wrong."""
    if not hypothesis.strip():
        return "empty"
    for flag in job.flags:
        reason = formats.check_entry(source_core, hypothesis, flag)
        if reason:
            return reason
    for mark in accelerators.MARKS:
        if job.accelerator and job.accelerator.mark == mark:
            if accelerators.count(hypothesis, mark):  # the mark is placed afterwards
                return f"a second accelerator mark {mark!r}"
        elif (job.forms is None and job.entry.msgid.count(mark) == 1
              and hypothesis.count(mark) != source_core.count(mark)):
            # msgfmt --check-accelerators holds a msgid's single mark, an identifier's `_` too.
            return f"the msgid's single {mark!r}"
    return None


def entry_problem(job, texts):
    """Why the translations {msgstr index: text} cannot be written into the job's entry, as
    msgfmt -c and --check-accelerators read the entry they make (forms a translator filled
    included); None when they can."""
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
    return None


def with_accelerator(job, text, protected_spans_of):
    """text with the job's accelerator placed (unchanged without one); None where it has no
    place."""
    if job.accelerator is None:
        return text
    return accelerators.place(text, job.accelerator, protected_spans_of(text))


def choose_parts(job, source, candidates_of):
    """The parts' chosen hypotheses for one source of the job, or the first part's problem.
    candidates_of(core) -> the candidates so far for that line, best first."""
    chosen = []
    for core in cores(source):
        problem = "no hypothesis"
        for candidate in candidates_of(core):
            candidate = one_line(candidate)
            problem = part_problem(job, core, candidate)
            if problem is None:
                chosen.append(candidate)
                break
        else:
            return None, (core, problem)
    return chosen, None
