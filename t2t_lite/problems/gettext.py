"""Translation pairs from the machine's gettext catalogs: the embedded, offline default corpus.

Every Linux system with language packs carries human translations of its software messages in
/usr/share/locale/<lang>/LC_MESSAGES/*.mo. English msgids pair with the msgstrs of one language;
any other pair joins two languages' catalogs on the msgid. Catalogs are parsed with polib.

    translate_ende_gettext, translate_enfr_gettext      registered pairs
    t2t-lite-datagen --problem=translate_gettext --problem_param=target_lang=es --data_dir=D
    t2t-lite-datagen --problem=translate_gettext --problem_param=source_lang=de \
        --problem_param=target_lang=fr --data_dir=D
    # one family of catalogs (regexes searched in the domain names), e.g. PostgreSQL's:
    t2t-lite-datagen --problem=translate_ende_gettext --problem_param='domains=-15$' --data_dir=D

Messages are filtered to sentence-like translations: code lists (ISO names, keyboard layouts),
untranslated or identical strings, formatted blocks, mismatched printf placeholders and odd
length ratios are skipped with a reason; keyboard accelerators (GTK "_", Qt/KDE "&") are removed
on both sides; duplicates are dropped. dev/test are ~1.5% each, chosen by a hash of the *normalised* source
(case, punctuation, whitespace and placeholders removed: t2t_lite.data.overlap.normalize), so a
message and all its case/punctuation variants land in the same split; datagen reports the
held-out sources that still have a normalised twin in train (0 by construction; tested).
"""
import glob
import os
import re
import zlib

import polib

from t2t_lite import registry
from t2t_lite.data import overlap, text_io, translation
from t2t_lite.errors import UserError
from t2t_lite.problems import heldout

# Catalogs of names and codes, not sentences.
EXCLUDED_CATALOG_PREFIXES = ("iso_", "xkeyboard-config")
HELDOUT_PER_MILLE = {"dev": range(0, 15), "test": range(15, 30)}

_PRINTF = re.compile(r"%(?:\d+\$)?[-+ #0']*(?:\d+|\*)?(?:\.(?:\d+|\*))?[hlLqjzt]*([diouxXeEfFgGcsSpn])")
# "  -v, --verbose       explain what is being done": an option and its description.
_OPTION_LINE = re.compile(r"^\s*(-\S.*?)\s{2,}(\S.*)$")
# An accelerator marks the next letter: "_File", "&Open", "Ö_ffnen".
_ACCELERATOR = re.compile(r"(?<![&\w])([_&])(?=\w)")
_ANY_MARKER = re.compile(r"[_&](?=\w)")
# gnupg-style pseudo context: "|pinentry-label|_Yes".
_PSEUDO_CONTEXT = re.compile(r"^\|[^|\s]+\|")


def catalog_messages(path):
    """Yields (msgid, msgstr) of one .mo file: singular forms, contexts ignored, header skipped."""
    for entry in polib.mofile(path):
        if not entry.msgid:
            continue  # the header
        if entry.msgid_plural:
            yield entry.msgid, entry.msgstr_plural.get(0, "")
        else:
            yield entry.msgid, entry.msgstr


def strip_accelerators(source, target):
    """Removes a keyboard accelerator from both sides when the source has exactly one.

    English puts the marker at a word start ("Save _As"), translations anywhere ("Spei_chern");
    identifiers such as "trap_handler" have no marker at a word start and are left alone.
    """
    marks = _ACCELERATOR.findall(source)
    if len(marks) != 1 or source.count(marks[0]) != 1:
        return source, target
    marker = marks[0]
    source = _ACCELERATOR.sub("", source)
    target_marks = [m for m in _ANY_MARKER.findall(target) if m == marker]
    if len(target_marks) == 1 and target.count(marker) == 1:
        target = _ANY_MARKER.sub(lambda m: "" if m.group(0) == marker else m.group(0), target)
    return source, target


def unwrap(text):
    """One-line text for a message: wrapped prose is joined; tables and option lists give None."""
    text = text.strip()
    if "\n" not in text:
        return text
    lines = text.split("\n")
    if any(not line.strip() or line[:1].isspace() or line.lstrip().startswith("-")
           for line in lines):
        return None
    return " ".join(line.strip() for line in lines)


def clean_pair(source, target):
    """(source, target) ready for training, or a skip reason string."""
    if not target.strip():
        return "untranslated"
    source = _PSEUDO_CONTEXT.sub("", source)
    option = _OPTION_LINE.match(source.strip("\n"))
    if option and "\n" not in source.strip("\n"):
        # Option help: keep the descriptions; the option itself must be the same on both sides.
        target_lines = target.strip("\n").split("\n")
        target_option = _OPTION_LINE.match(target_lines[0])
        if not target_option or target_option[1].split() != option[1].split():
            return "formatted_block"
        one_line = [option[2], " ".join([target_option[2]] + target_lines[1:])]
    else:
        one_line = [unwrap(source), unwrap(target)]
        if None in one_line:
            return "formatted_block"
    source, target = strip_accelerators(*one_line)
    source, target = " ".join(source.split()), " ".join(target.split())
    if not all(re.search(r"[^\W\d_]", _PRINTF.sub("", side)) for side in (source, target)):
        return "no_letters"
    if source == target:
        return "identical"
    if sorted(_PRINTF.findall(source)) != sorted(_PRINTF.findall(target)):
        return "placeholder_mismatch"
    if min(len(source), len(target)) > 8 and not 1 / 3 < len(target) / len(source) < 3:
        return "length_ratio"
    return source, target


@registry.register_problem
class TranslateGettext(translation.TranslationProblem):
    """Software-message translations from local gettext catalogs (--problem_param=target_lang=xx)."""

    vocab_type = "bpe"
    vocab_size = 8000
    examples_per_shard = {"train": 50_000, "dev": 50_000, "test": 50_000}
    source_language = "en"  # the decoder knows the class only; an instance knows source_lang

    def __init__(self, target_lang=None, source_lang="en", locale_dir="/usr/share/locale",
                 vocab_size=None, domains=None, exclude_domains=None, vocab_from=None):
        """Args (--problem_param=NAME=VALUE):
          target_lang: the targets' language, a folder name under locale_dir (de, fr, es, ...).
          source_lang: the sources' language; other than en, two languages' catalogs are joined
            on the msgid.
          locale_dir: the folder of <lang>/LC_MESSAGES/*.mo catalogs.
          vocab_size: pieces in the BPE vocabulary learned from the data.
          domains: a regex searched in catalog names (the .mo file's name): only those read.
          exclude_domains: a regex searched in catalog names: those skipped.
          vocab_from: a model_dir or vocabulary file whose vocabulary encodes the data instead
            of a new one (fine-tuning that parent).
        """
        self.target_lang = target_lang or getattr(type(self), "default_target_lang", None)
        if not self.target_lang:
            raise UserError("translate_gettext needs --problem_param=target_lang=<code>, e.g. de")
        self.source_lang = self.source_language = source_lang
        self.target_language = self.target_lang
        self.locale_dir = locale_dir
        if vocab_size is not None:
            self.vocab_size = int(vocab_size)
        self.vocab_from = vocab_from
        self.domain_filters = (domains, exclude_domains)
        for pattern in self.domain_filters:
            if pattern is not None:
                try:
                    re.compile(pattern)
                except re.error as error:
                    raise UserError(f"bad domain pattern {pattern!r}: {error}") from None

    @property
    def dataset_name(self):
        name = f"translate_{self.source_lang}{self.target_lang}_gettext"
        if self.domain_filters != (None, None):  # a subset of the catalogs: files of its own
            name += f"_{zlib.crc32(repr(self.domain_filters).encode()):08x}"
        return name

    def wanted(self, domain):
        """Whether a catalog's domain passes `domains` / `exclude_domains` (regexes, searched)."""
        include, exclude = self.domain_filters
        return ((include is None or re.search(include, domain) is not None)
                and (exclude is None or re.search(exclude, domain) is None))

    def catalogs(self, lang):
        """{domain: .mo path} for one language, code-list catalogs excluded."""
        paths = sorted(glob.glob(os.path.join(self.locale_dir, lang, "LC_MESSAGES", "*.mo")))
        return {os.path.basename(p)[:-3]: p for p in paths
                if not os.path.basename(p).startswith(EXCLUDED_CATALOG_PREFIXES)
                and self.wanted(os.path.basename(p)[:-3])}

    def raw_pairs(self):
        """(source, target) message pairs of all shared catalogs, in a fixed order."""
        targets = self.catalogs(self.target_lang)
        if self.source_lang == "en":
            domains = sorted(targets)
        else:
            sources = self.catalogs(self.source_lang)
            domains = sorted(set(sources) & set(targets))
        if not domains:
            raise UserError(
                f"no gettext catalogs for {self.source_lang}-{self.target_lang} under "
                f"{self.locale_dir}/<lang>/LC_MESSAGES: minimal images leave them out "
                "(docs/troubleshooting.md says which packages bring them); or point "
                "--problem_param=locale_dir=DIR at others, or train on your own text "
                "(--problem=translate_text_files)")
        for domain in domains:
            if self.source_lang == "en":
                yield from catalog_messages(targets[domain])
            else:
                source_text = dict(catalog_messages(sources[domain]))
                for msgid, msgstr in catalog_messages(targets[domain]):
                    if source_text.get(msgid):
                        yield source_text[msgid], msgstr

    def generate_samples(self, split, tmp_dir):
        seen = set()
        for source, target in self.raw_pairs():
            cleaned = clean_pair(source, target)
            if cleaned in seen:
                cleaned = "duplicate"
            if isinstance(cleaned, str):
                if split == "train":  # report each skipped message once, not once per split
                    yield text_io.Skipped(cleaned)
                continue
            seen.add(cleaned)
            if split_of(cleaned[0]) == split:
                yield cleaned

    def heldout_report(self, data_dir, tmp_dir=None):
        """Lines for the datagen report: held-out sources with a normalised twin in train."""
        heldout = {split: [pair[0] for pair in self.eval_text_pairs(data_dir, split)]
                   for split in HELDOUT_PER_MILLE}
        train = (pair[0] for pair in self.generate_samples("train", tmp_dir)
                 if not isinstance(pair, text_io.Skipped))
        return [f"{split}: {leaked} of {total} sources ({100.0 * leaked / max(total, 1):.2f}%) "
                "have a case/punctuation/placeholder variant in train"
                for split, (leaked, total) in overlap.heldout_overlap(train, heldout).items()]


def split_of(source):
    """"train", "dev" or "test" for a cleaned source, by a hash of its normalised form."""
    return heldout.split_of(overlap.normalize(source).encode("utf-8"), HELDOUT_PER_MILLE)


@registry.register_problem
class TranslateEndeGettext(TranslateGettext):
    """English->German software messages from local gettext catalogs (offline default)."""

    default_target_lang = target_language = "de"


@registry.register_problem
class TranslateEnfrGettext(TranslateGettext):
    """English->French software messages from local gettext catalogs."""

    default_target_lang = target_language = "fr"
