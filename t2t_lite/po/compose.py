"""The output catalog of t2t-lite-po: the input's bytes as read once at the start, with the chosen
translations written in and the header fields set, judged by msgfmt (po/judge.py).

Everything here works on those bytes, never on the input's path: a pipe, a FIFO or /dev/stdin
gives its bytes once, and a file may change under a long run. A translation the catalog's
charset cannot hold, or an entry whose lines cannot be rewritten alone, is left untranslated and
counted as it is met: one pass over the catalog, however many entries are left.
"""
import bisect
import collections

from t2t_lite.errors import UserError
from t2t_lite.po import catalog_file, judge

# Why an entry was left untranslated, as the summary says it.
LEFT_MSGFMT = "msgfmt rejected the translation"
LEFT_CHARSET = "the catalog's charset cannot hold the translation"
LEFT_LAYOUT = ("its lines are shared with another entry or continued by a backslash (they "
               "cannot be rewritten alone)")


def key(entry):
    return entry.domain, entry.msgctxt, entry.msgid


def _count(stats, why):
    stats.left_untranslated[why] = stats.left_untranslated.get(why, 0) + 1


def compose(source, options, plan, jobs, chosen, stats):
    """(catalog, its bytes): `source` (the input's bytes) with the chosen translations written
    in; an entry that cannot take its translation is dropped from `chosen` and counted."""
    catalog = catalog_file.parse(source, options.input)
    by_key = {key(job.entry): (i, job) for i, job in enumerate(jobs) if i in chosen}
    stats.translated = stats.plural = stats.fuzzy_marked = stats.accelerators = 0
    for entry in catalog.messages():
        if key(entry) not in by_key:
            continue
        i, job = by_key[key(entry)]
        texts = chosen[i]
        fuzzy = True if not options.no_fuzzy else (False if entry.fuzzy else None)
        try:
            if job.forms is not None:
                entry.set_translation(plural=texts, nplurals=job.forms, fuzzy=fuzzy,
                                      drop_previous=job.retranslate)
            else:
                entry.set_translation(texts[None], fuzzy=fuzzy, drop_previous=job.retranslate)
        except (catalog_file.NotEncodable, catalog_file.NotRewritable) as error:
            del chosen[i]  # set_translation changed nothing of the entry
            _count(stats, LEFT_CHARSET if isinstance(error, catalog_file.NotEncodable)
                   else LEFT_LAYOUT)
            continue
        stats.translated += 1
        stats.plural += job.forms is not None
        stats.fuzzy_marked += not options.no_fuzzy
        stats.accelerators += job.accelerator is not None
    fields = plan.fields(stats.translated > 0)
    if fields and catalog.header is not None:
        catalog.set_header_fields(fields, fuzzy=False if plan.changes else None)
    return catalog, catalog.to_bytes()


def _keys_by_line(catalog):
    """line -> the key of the entry holding it; None for a line of no entry (a `domain`
    directive, a comment after the last entry)."""
    starts = [entry.line for entry in catalog.entries]

    def at(line):
        index = bisect.bisect_right(starts, line) - 1
        if index < 0 or line > catalog.entries[index].last_line:
            return None
        return key(catalog.entries[index])
    return at


def judged(source, options, plan, jobs, chosen, stats):
    """The output's bytes once msgfmt accepts every entry this run wrote: an entry it rejects
    is left untranslated (and counted) and the catalog judged again."""
    chosen = dict(chosen)
    for _ in range(4):
        _, data = compose(source, options, plan, jobs, chosen, stats)
        found = judge.errors(data)
        if found is None:
            stats.msgfmt = "not installed (the tool's own checks only)"
            return data
        ours = {key(job.entry): i for i, job in enumerate(jobs) if i in chosen}
        rejected, others = set(), []
        key_at = _keys_by_line(catalog_file.parse(data, options.output))
        for line, message in found:
            found_key = key_at(line)
            if found_key in ours:
                rejected.add(ours[found_key])
            else:
                others.append((line, message))
        if not rejected:
            return _accept(source, options, data, others, stats)
        for i in rejected:
            del chosen[i]
            _count(stats, LEFT_MSGFMT)
    raise UserError(f"msgfmt keeps rejecting the translations of {options.input}; nothing "
                    "written")


def _accept(source, options, data, others, stats):
    """The bytes to write when msgfmt's remaining errors are not in entries this run wrote:
    errors the input already had are kept (and said); any other one refuses the output."""
    if not others:
        stats.msgfmt = "accepted"
        return data
    own = judge.errors(source) or []
    own_messages = collections.Counter(message for _, message in own)
    new = [(line, message) for line, message in others if not own_messages[message]]
    if new:
        line, message = new[0]
        raise UserError(f"msgfmt rejects the output at line {line} ({message}), in a part "
                        "t2t-lite-po did not translate; nothing written")
    line, message = others[0]
    stats.msgfmt = (f"{len(others)} errors the input already had, kept as they were (first: "
                    f"{options.input}:{_input_line(own, message)}: {' '.join(message.split())})")
    return data


def _input_line(errors, message):
    return next((line for line, text in errors if text == message), "?")
