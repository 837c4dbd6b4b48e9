"""What a decoded line must and must not say: constraint lines and glossaries, read and checked.

A constraint line (one per input line, in a --constraints_file, or per request in the
SavedModel's translate_constrained) holds tab-separated target phrases:

    Verzeichnis|Verzeichnisses|Verzeichnisse<TAB>!Ordner<TAB>%s

A phrase must appear in the translation; `|` separates alternatives, any one of which satisfies
it; a phrase starting with `!` must not appear (each of its alternatives is barred). An empty
line means no constraints. A phrase given twice must appear twice.

A glossary (--glossary) is a TSV of `source term<TAB>target term[|alternative...]`, `!` before
the target for a "do not use" entry; blank lines and lines starting with `#` are skipped. An
entry applies to every input line whose source holds the term as whole words (case-sensitive
unless ignore_case). The line's phrases are its constraints-file phrases, then the glossary's.

Phrases, glossary terms, source lines and outputs are compared in their normal form
(normal_form: NFKC, as SentencePiece's nmt_nfkc applies it, white space and the invisible
characters the tokenizer reads as a space, a zero-width space among them, as one space), the form
the tokenizer writes them in: "Speichern unter…" is met by "Speichern unter...". Messages quote a
phrase as it was typed.

Everything here is text; the phrases become target ids in one place, the translator's
encode_constraints (translation_module.py), where `check_tokenized` holds them to having tokens.
"""
import dataclasses
import hashlib
import re
import unicodedata

from t2t_lite.errors import UserError
from t2t_lite.progress_line import counted

# Caps, per constraint line, checked once where a line comes in (here for files, in
# graph_constraints for the served signature): the search holds, per beam, every alternative's
# tokens, so its cost per step grows with their sum.
MAX_PHRASES = 16  # phrases per line
MAX_ALTERNATIVES = 16  # alternatives per phrase
# Target tokens per alternative: room for three words of markup or punctuation ("[next-hop]
# [Metrik] [Attribut=Wert]..." is 17 tokens on the demo's vocabulary).
MAX_PHRASE_TOKENS = 32
MAX_LINE_TOKENS = 128  # target tokens per line, every alternative of every phrase
NEGATIVE = "!"
ALTERNATIVES = "|"
PREFIX = "*"  # after a negative alternative: every word that begins with it
SEPARATOR = "\t"
BOM = "\ufeff"


# White space, and the invisible format characters SentencePiece's nmt_nfkc rule writes as a
# space: zero-width space and non-joiner, the direction marks, the byte-order mark.
SPACES = "\u200b\u200c\u200e\u200f\ufeff\u061c"
_SPACE_RUN = re.compile(f"[\\s{SPACES}]+")
_INVISIBLE = re.compile(f"[{SPACES}]")


def normal_form(text):
    """text as the tokenizer writes it (see the module docstring; graph_constraints.normal_form
    is the same in the graph)."""
    return _SPACE_RUN.sub(" ", unicodedata.normalize("NFKC", text)).strip()


def split_line(line):
    """A constraint line -> [(negative, [alternative, ...]), ...]; raises ValueError (a short
    reason) for an empty phrase or alternative, too many phrases or alternatives, or a phrase
    both required and forbidden. Whitespace around a phrase, its `!` and each `|` is not part of
    it; a negative alternative keeps its `*` (a prefix form)."""
    if not line.strip():
        return []
    phrases = []
    for text in line.split(SEPARATOR):
        text = text.strip()
        negative = text.startswith(NEGATIVE)
        alternatives = [a.strip() for a in (text[1:] if negative else text).split(ALTERNATIVES)]
        if not all(a[:-1].strip() if negative and a.endswith(PREFIX) else a
                   for a in alternatives):
            raise ValueError("an empty phrase or alternative")
        if negative:
            alternatives = [a[:-1].strip() + PREFIX if a.endswith(PREFIX) else a
                            for a in alternatives]
        phrases.append((negative, alternatives))
    if len(phrases) > MAX_PHRASES:
        raise ValueError(f"{len(phrases)} phrases; at most {MAX_PHRASES} per line")
    for _, alternatives in phrases:
        if len(alternatives) > MAX_ALTERNATIVES:
            raise ValueError(f"a phrase with {len(alternatives)} alternatives; at most "
                             f"{MAX_ALTERNATIVES} per phrase")
    conflict = contradiction(phrases)
    if conflict:
        text = conflict[:-1] if conflict.endswith(PREFIX) else conflict
        raise ValueError(f"the phrase {text!r} is both required and forbidden")
    return phrases


def contradiction(phrases):
    """The first negative alternative of phrases ([(negative, [alternative, ...]), ...]) that
    bars a required phrase, every alternative of it (any one satisfies it: "Ordner|Verzeichnis"
    with "!Verzeichnis" is met by "Ordner"), compared in normal form; None for none."""
    required = [[normal_form(a) for a in alternatives]
                for negative, alternatives in phrases if not negative]
    for negative, alternatives in phrases:
        for alternative in alternatives if negative else ():
            bar = normal_form(alternative[:-1]) + PREFIX if alternative.endswith(
                PREFIX) else normal_form(alternative)
            if any(all(barred(a, bar) for a in group) for group in required):
                return alternative
    return None


def barred(text, negative):
    """text holds the negative alternative: as whole words, or for a prefix form (`stem*`) as
    the start of a word."""
    if negative.endswith(PREFIX):
        return holds_word(text, negative[:-1], open_ended=True)
    return holds_word(text, negative)


def _is_word_character(character):
    from t2t_lite.inference.word_pieces import is_word_character

    return is_word_character(character)


def occurrences(text, phrase, open_ended=False):
    """How often `text` holds `phrase` as whole words: no letter, mark or digit right before it
    or (unless open_ended: a word that begins with it) right after it."""
    count, start = 0, text.find(phrase)
    while start >= 0 and phrase:
        end = start + len(phrase)
        if ((start == 0 or not _is_word_character(text[start - 1]))
                and (open_ended or end == len(text) or not _is_word_character(text[end]))):
            count += 1
        start = text.find(phrase, start + 1)
    return count


def holds_word(text, phrase, open_ended=False):
    return occurrences(text, phrase, open_ended) > 0


def unmet_phrases(text, line):
    """The phrases of constraint line `line` that `text` does not keep as whole words: each
    positive phrase past the occurrences of its alternatives (a phrase given twice must appear
    twice), each alternative of a negative phrase it holds; in normal form."""
    phrases = split_line(line)
    text = normal_form(text)
    positive = [tuple(normal_form(a) for a in alternatives)
                for negative, alternatives in phrases if not negative]
    missing = 0
    for phrase in set(positive):
        wanted = positive.count(phrase)
        missing += max(wanted - sum(occurrences(text, a) for a in set(phrase)), 0)
    for negative, alternatives in phrases:
        if negative:
            missing += sum(barred(text, normal_form(a[:-1]) + PREFIX if a.endswith(PREFIX)
                                  else normal_form(a)) for a in alternatives)
    return missing


def join_line(phrases):
    """[(negative, [alternative, ...]), ...] -> a constraint line."""
    return SEPARATOR.join((NEGATIVE if negative else "") + ALTERNATIVES.join(alternatives)
                          for negative, alternatives in phrases)


def read_once(path, flag):
    """The bytes of `path`, read once: a pipe, a FIFO or /dev/stdin gives them once, and a file
    may change under a long run, so every later use (the phrases, a resume's digest) takes
    these."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise UserError(f"{flag} {path} does not exist") from None
    except OSError as error:
        raise UserError(f"{flag} {path}: cannot read ({error.strerror})") from None


def _read_lines(path, flag, data=None):
    """The file's lines (`data`: its bytes, read_once's) as the decoder reads its input: a
    UTF-8 byte-order mark at its start dropped, each line's end by data/lines.py (a "\\r" only
    as part of a "\\r\\n")."""
    from t2t_lite.data.lines import split_lines

    data = read_once(path, flag) if data is None else data
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UserError(f"{flag} {path} is not UTF-8 ({error.reason} at byte "
                        f"{error.start})") from None
    return split_lines(text[len(BOM):] if text.startswith(BOM) else text)


def read_constraints_file(path, first_line=0, num_lines=None, total_lines=None,
                          flag="--constraints_file", data=None):
    """The constraint lines of path's [first_line, first_line + num_lines) (a shard of the
    input), each checked; UserError naming the file and line for a bad one, or when the file's
    line count is not the input's (total_lines, when known). data: the file's bytes, when
    read already (read_once)."""
    lines = _read_lines(path, flag, data)
    if total_lines is not None and len(lines) != total_lines:
        raise UserError(f"{flag} {path} has {counted(len(lines), 'line')} but the input has "
                        f"{total_lines:,}: give one constraint line per input line (an empty "
                        "line for none)")
    end = len(lines) if num_lines is None else first_line + num_lines
    for number in range(first_line, end):
        try:
            split_line(lines[number])
        except ValueError as reason:
            raise UserError(f"{flag} {path}:{number + 1}: {reason}") from None
    return lines[first_line:end]


@dataclasses.dataclass(frozen=True)
class GlossaryEntry:
    source: str
    negative: bool
    alternatives: tuple
    line: int  # in the glossary file, for messages


# A word of a glossary term or a source line: a run of letters, marks and digits, or one other
# character that is not white space.
_WORD = re.compile(r"[^\W_]+|[^\w\s]|_", re.UNICODE)


def _normalized(text, fold=False):
    """(text as normal_form writes it, casefolded if fold, each white space character a space
    of its own; the (start, end) in text of each of its characters), for matching words.
    Normalized a character with the marks that follow it at a time ("o" and U+0308 become
    "ö"), so each character of the result comes from one such run; casefolding may change a
    text's length ("ß" -> "ss")."""
    if not fold and unicodedata.is_normalized("NFKC", text) and not _INVISIBLE.search(text):
        return text, [(i, i + 1) for i in range(len(text))]
    result, where = [], []
    start = 0
    for end in range(1, len(text) + 1):
        if end < len(text) and unicodedata.category(text[end])[0] == "M":
            continue
        piece = unicodedata.normalize("NFKC", text[start:end])
        piece = _SPACE_RUN.sub(" ", piece.casefold() if fold else piece)
        result.append(piece)
        where.extend([(start, end)] * len(piece))
        start = end
    return "".join(result), where


class Glossary:
    """The entries of a glossary file, matched against source lines (see the module
    docstring): as whole words, outside protected spans, the longest match first (a match
    overlapping a longer one, or an earlier one as long, does not apply), entries with the same
    source term together; ignore_case: Unicode casefolding. A trie keyed by the term's first
    word keeps the cost per line independent of the glossary's size."""

    def __init__(self, entries, ignore_case=False, path=None):
        self.entries, self.ignore_case, self.path = list(entries), ignore_case, path
        self._terms = {}  # first word -> {term words: [entry, ...]}
        for entry in self.entries:
            words = tuple(w.group() for w in _WORD.finditer(self._key(entry.source)))
            if words:
                self._terms.setdefault(words[0], {}).setdefault(words, []).append(entry)
        self._longest = {first: max(len(words) for words in terms)
                         for first, terms in self._terms.items()}

    def _key(self, text):
        return _normalized(text, self.ignore_case)[0]

    @classmethod
    def load(cls, path, ignore_case=False, flag="--glossary", data=None):
        """The glossary in `path` (`data`: its bytes, when read already: read_once)."""
        entries = []
        for number, line in enumerate(_read_lines(path, flag, data), start=1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            columns = line.split(SEPARATOR)
            if len(columns) != 2 or not columns[0].strip() or not columns[1].strip():
                raise UserError(f"{flag} {path}:{number}: expected 'source term<TAB>target "
                                f"term[|alternative...]', got {line!r}")
            try:
                (negative, alternatives), = split_line(columns[1])
            except ValueError as reason:
                raise UserError(f"{flag} {path}:{number}: {reason}") from None
            entries.append(GlossaryEntry(columns[0].strip(), negative, tuple(alternatives),
                                         number))
        glossary = cls(entries, ignore_case, path)
        glossary.check_entries(flag)
        return glossary

    def check_entries(self, flag="--glossary"):
        """UserError naming both rows where the entries of one source term (as matches finds
        it: normal form, casefolded under ignore_case) contradict each other: two different
        required targets (both would be forced in), or a target another row forbids. Exact
        duplicates, and a term with its own bans, are allowed."""
        for terms in self._terms.values():
            for entries in terms.values():
                required = [e for e in entries if not e.negative]
                for entry in required[1:]:
                    first = required[0]
                    if ({normal_form(a) for a in entry.alternatives}
                            != {normal_form(a) for a in first.alternatives}):
                        raise UserError(
                            f"{flag} {self.path}:{first.line} and {entry.line}: two required "
                            f"targets for one source term ({first.source!r} -> "
                            f"{ALTERNATIVES.join(first.alternatives)!r}, {entry.source!r} -> "
                            f"{ALTERNATIVES.join(entry.alternatives)!r}); give one row with "
                            f"'{ALTERNATIVES}' between the targets if any one will do")
                for ban in (e for e in entries if e.negative):
                    for entry in required:
                        bar = contradiction([(False, list(entry.alternatives)),
                                             (True, list(ban.alternatives))])
                        if bar:
                            raise UserError(
                                f"{flag} {self.path}:{entry.line} and {ban.line}: "
                                f"{entry.source!r} requires "
                                f"{ALTERNATIVES.join(entry.alternatives)!r}, which "
                                f"{ban.source!r} forbids ({bar!r})")

    def matches(self, source, protect=frozenset()):
        """[(start, end, [entry, ...]), ...]: the terms that apply to `source`, in source order
        (character offsets into source). protect: the protected_spans kinds whose spans no term
        may cut; code-like spans (code_spans.CODE_KINDS) are never cut either."""
        text, where = _normalized(source, self.ignore_case)
        words = list(_WORD.finditer(text))
        found = []
        for i, word in enumerate(words):
            terms = self._terms.get(word.group())
            if not terms:
                continue
            for length in range(min(self._longest[word.group()], len(words) - i), 0, -1):
                key = tuple(w.group() for w in words[i:i + length])
                if key in terms:
                    start, end = where[word.start()][0], where[words[i + length - 1].end()
                                                               - 1][1]
                    found.append((start, end, terms[key]))
        if found:
            from t2t_lite.inference import code_spans, span_finding

            # Code-like text (an option, an identifier, a path, a URL) is never prose, whatever
            # is protected; a term may hold a span whole ("NetworkManager"), never cut one.
            spans = span_finding.find_spans(
                source, frozenset(protect) | frozenset(code_spans.CODE_KINDS))
            found = [m for m in found
                     if not any(m[0] < span.end and span.start < m[1]
                                and not m[0] <= span.start < span.end <= m[1] for span in spans)]
        taken = []
        for match in sorted(found, key=lambda m: (m[0] - m[1], m[0])):
            if not any(match[0] < other[1] and other[0] < match[1] for other in taken):
                taken.append(match)
        return sorted(taken)

    def phrases_for(self, source, protect=frozenset()):
        """The phrases of the terms that apply to `source` (see matches), each entry once, as
        [(negative, [alternative, ...]), ...]."""
        phrases, seen = [], set()
        for _, _, entries in self.matches(source, protect):
            for entry in entries:
                if entry.line not in seen:
                    seen.add(entry.line)
                    phrases.append((entry.negative, list(entry.alternatives)))
        return phrases


def digest(path, data=None):
    """sha256 of a file's bytes (`data`, when read already; None for no file): what a resumed
    run must find unchanged."""
    if not path:
        return None
    if data is not None:
        return hashlib.sha256(data).hexdigest()
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            sha.update(block)
    return sha.hexdigest()


def check_tokenized(lines, encoded, where):
    """UserError naming line i (where(i): the flag, the file and its line number) when a phrase of `lines` (constraint lines) is
    refused once it is tokenized (encode_constraints' numpy result for them): no tokens, a
    token outside the vocabulary, more tokens than MAX_PHRASE_TOKENS per alternative or
    MAX_LINE_TOKENS per line. An export written before encode_constraints gave its reasons is
    held to having tokens only."""
    if "errors" in encoded:
        for i, reason in enumerate(encoded["errors"]):
            if reason:
                reason = reason.decode("utf-8", errors="replace")
                # An invisible phrase (a zero-width space) shown as Python writes it.
                reason = re.sub(r"^the phrase '(.*)' (?=has |is |cannot )",
                                lambda m: f"the phrase {m.group(1)!r} " if not
                                m.group(1).isprintable() else m.group(0), reason)
                flag, path, number = where(i)
                raise UserError(f"{flag} {path}:{number}: {reason}")
        return
    positive, negative = encoded["positive"], encoded["negative"]
    for i, line in enumerate(lines):
        p = q = 0
        for is_negative, alternatives in split_line(line):
            if is_negative:
                rows = [negative[i, q + a] for a in range(len(alternatives))]
                q += len(alternatives)
            else:
                rows = [positive[i, p, a] for a in range(len(alternatives))]
                p += 1
            for alternative, ids in zip(alternatives, rows):
                if not ids.any():
                    flag, path, number = where(i)
                    raise UserError(f"{flag} {path}:{number}: the phrase {alternative!r} has no "
                                    "tokens in the model's vocabulary")


def token_count(encoded, i):
    """Target tokens of line i of encode_constraints' numpy result (WORD_END not counted)."""
    return int((encoded["positive"][i] > 0).sum() + (encoded["negative"][i] > 0).sum())
