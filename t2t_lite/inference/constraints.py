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

Everything here is text; the phrases become target ids in one place, the translator's
encode_constraints (translation_module.py), where `check_tokenized` holds them to having tokens.
"""
import dataclasses
import hashlib
import re

from t2t_lite.errors import UserError

MAX_PHRASES = 16  # per line: the search's cost grows with the phrases (each offers 2 tokens)
NEGATIVE = "!"
ALTERNATIVES = "|"
SEPARATOR = "\t"


def split_line(line):
    """A constraint line -> [(negative, [alternative, ...]), ...]; raises ValueError (a short
    reason) for an empty phrase or alternative or too many phrases."""
    if not line.strip():
        return []
    phrases = []
    for text in line.split(SEPARATOR):
        negative = text.startswith(NEGATIVE)
        alternatives = [a.strip() for a in (text[1:] if negative else text).split(ALTERNATIVES)]
        if not all(alternatives):
            raise ValueError(f"an empty phrase or alternative in {line!r}")
        phrases.append((negative, alternatives))
    if len(phrases) > MAX_PHRASES:
        raise ValueError(f"{len(phrases)} phrases; at most {MAX_PHRASES} per line")
    return phrases


def join_line(phrases):
    """[(negative, [alternative, ...]), ...] -> a constraint line."""
    return SEPARATOR.join((NEGATIVE if negative else "") + ALTERNATIVES.join(alternatives)
                          for negative, alternatives in phrases)


def _read_lines(path, flag):
    try:
        with open(path, encoding="utf-8", newline="\n") as f:
            return [line.rstrip("\n").rstrip("\r") for line in f]
    except FileNotFoundError:
        raise UserError(f"{flag} {path} does not exist") from None
    except UnicodeDecodeError as error:
        raise UserError(f"{flag} {path} is not UTF-8 ({error.reason} at byte "
                        f"{error.start})") from None
    except OSError as error:
        raise UserError(f"{flag} {path}: cannot read ({error.strerror})") from None


def read_constraints_file(path, first_line=0, num_lines=None, total_lines=None,
                          flag="--constraints_file"):
    """The constraint lines of path's [first_line, first_line + num_lines) (a shard of the
    input), each checked; UserError naming the file and line for a bad one, or when the file's
    line count is not the input's (total_lines, when known)."""
    lines = _read_lines(path, flag)
    if total_lines is not None and len(lines) != total_lines:
        raise UserError(f"{flag} {path} has {len(lines):,} lines but the input has "
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


class Glossary:
    """The entries of a glossary file, matched against source lines (see the module
    docstring)."""

    def __init__(self, entries, ignore_case=False, path=None):
        self.entries, self.ignore_case, self.path = list(entries), ignore_case, path
        flags = re.IGNORECASE if ignore_case else 0
        self._patterns = [re.compile(r"(?<!\w)" + re.escape(e.source) + r"(?!\w)", flags)
                          for e in self.entries]

    @classmethod
    def load(cls, path, ignore_case=False, flag="--glossary"):
        entries = []
        for number, line in enumerate(_read_lines(path, flag), start=1):
            if not line.strip() or line.startswith("#"):
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
        return cls(entries, ignore_case, path)

    def phrases_for(self, source):
        """The entries whose source term `source` holds as whole words, as
        [(negative, [alternative, ...]), ...]."""
        return [(entry.negative, list(entry.alternatives))
                for entry, pattern in zip(self.entries, self._patterns) if pattern.search(source)]


def digest(path):
    """sha256 of a file's bytes (None for no file): what a resumed run must find unchanged."""
    if not path:
        return None
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            sha.update(block)
    return sha.hexdigest()


def check_tokenized(lines, encoded, where):
    """UserError when a phrase or alternative of `lines` (constraint lines) has no target
    tokens in `encoded` (encode_constraints' numpy result for them). where(i) names line i."""
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
                    raise UserError(f"{where(i)}: the phrase {alternative!r} has no tokens in "
                                    "the model's vocabulary")
