"""WMT 2014 English-German and English-French, the corpora of the paper (section 5.1).

    translate_ende_wmt14  Europarl v7 + Common Crawl + News Commentary v9 (~4.5M pairs),
                          dev newstest2013, test newstest2014 (full, 3003 sentences);
                          one SentencePiece BPE vocabulary (~37k) shared by EN inputs and DE targets.
    translate_enfr_wmt14  tensor2tensor's large EN-FR set (~36M pairs): Common Crawl, Europarl v7,
                          News Commentary v9, UN 2000, 10^9 French-English (giga-fren);
                          dev newstest2013, test newstest2014 (full); 32k WordPiece.

Each is also registered as `wmt14_ende` / `wmt14_enfr`, the card's names (aliases in the registry:
the same problem, the same files in data_dir, the same model_dirs).

Archives come from statmt.org (the URLs tensor2tensor and sacrebleu use) and are checked against
published checksums before use (see `ARCHIVES`). With `raw_dir`, nothing is downloaded: the
archives (under their original names) or their already extracted files are read from there.
"""
import dataclasses
import pathlib
import re
from typing import Iterator, Optional, Tuple

from t2t_lite import registry
from t2t_lite.data import download, text_io
from t2t_lite.data.archives import extract, is_extracted
from t2t_lite.data.download import RemoteFile
from t2t_lite.data.translation import TranslationProblem
from t2t_lite.errors import UserError

# Archive name -> where to get it and how to check it. Sources of the checksums:
#  [tfds]  tensorflow/datasets tensorflow_datasets/url_checksums/{wmt14_translate, wmt13_translate,
#          wmt_translate_ende}.txt (size + sha256 of the identical http:// URLs)
#  [sacrebleu] sacrebleu 2.6.0 sacrebleu/dataset/__init__.py, "wmt14/full" (md5 only; no public
#          sha256 or size found, so this one is verified by md5)
ARCHIVES = {
    "europarl_v7": RemoteFile(  # [tfds]
        "https://www.statmt.org/wmt13/training-parallel-europarl-v7.tgz", size=657632379,
        sha256="0224c7c710c8a063dfd893b0cc0830202d61f4c75c17eb8e31836103d27d96e7"),
    "commoncrawl": RemoteFile(  # [tfds]
        "https://www.statmt.org/wmt13/training-parallel-commoncrawl.tgz", size=918311367,
        sha256="c7a74e2ea01ac6c920123108627e35278d4ccb5701e15428ffa34de86fa3a9e5"),
    "news_commentary_v9": RemoteFile(  # [tfds]
        "https://www.statmt.org/wmt14/training-parallel-nc-v9.tgz", size=80418416,
        sha256="cb8953f292298e6877ae433c98912b927cb0766b303f4540512ddd286c748485"),
    "un": RemoteFile(  # [tfds] wmt13_translate.txt
        "https://www.statmt.org/wmt13/training-parallel-un.tgz", size=2365634246,
        sha256="29141b5c1eba149a94f7a59d3b1a834b2e47fe0f8758d68dcd77a3d3f497ee47"),
    "giga_fren": RemoteFile(  # [tfds] wmt13_translate.txt
        "https://www.statmt.org/wmt10/training-giga-fren.tar", size=2595102720,
        sha256="3ff8319f6919393520559bfbc7ad6a747ec81b3abc7be9993b338d4b017b4d9a"),
    "dev": RemoteFile(  # [tfds] wmt_translate_ende.txt; tensor2tensor's dev set archive
        "https://data.statmt.org/wmt17/translation-task/dev.tgz", size=27569699,
        sha256="9d5ff04a28496b7796904ea65e50e3837bab14dbdca88b1e063105f17513dca9"),
    "test_full": RemoteFile(  # [sacrebleu] wmt14/full
        "https://statmt.org/wmt14/test-full.tgz", md5="a8cd784e006feb32ac6f3d9ec7eb389a"),
}


@dataclasses.dataclass(frozen=True)
class Corpus:
    """One parallel corpus: the archive that holds it and its two member files."""

    archive: str  # key of ARCHIVES
    source: str   # member path of the source-language side (inputs)
    target: str   # member path of the target-language side (targets)

    @property
    def sgm(self) -> bool:
        return self.source.endswith(".sgm")


ENDE = {
    "train": (
        Corpus("europarl_v7", "training/europarl-v7.de-en.en", "training/europarl-v7.de-en.de"),
        Corpus("commoncrawl", "commoncrawl.de-en.en", "commoncrawl.de-en.de"),
        Corpus("news_commentary_v9", "training/news-commentary-v9.de-en.en",
               "training/news-commentary-v9.de-en.de"),
    ),
    "dev": (Corpus("dev", "dev/newstest2013.en", "dev/newstest2013.de"),),
    "test": (Corpus("test_full", "test-full/newstest2014-deen-src.en.sgm",
                    "test-full/newstest2014-deen-ref.de.sgm"),),
}

ENFR = {
    "train": (
        Corpus("commoncrawl", "commoncrawl.fr-en.en", "commoncrawl.fr-en.fr"),
        Corpus("europarl_v7", "training/europarl-v7.fr-en.en", "training/europarl-v7.fr-en.fr"),
        Corpus("news_commentary_v9", "training/news-commentary-v9.fr-en.en",
               "training/news-commentary-v9.fr-en.fr"),
        Corpus("un", "un/undoc.2000.fr-en.en", "un/undoc.2000.fr-en.fr"),
        Corpus("giga_fren", "giga-fren.release2.fixed.en.gz", "giga-fren.release2.fixed.fr.gz"),
    ),
    "dev": (Corpus("dev", "dev/newstest2013.en", "dev/newstest2013.fr"),),
    "test": (Corpus("test_full", "test-full/newstest2014-fren-src.en.sgm",
                    "test-full/newstest2014-fren-ref.fr.sgm"),),
}


# ----------------------------------------------------------------------------- reading

_SEG = re.compile(rb"<seg[^>]*>(.*)</seg>", re.IGNORECASE)
_SPACES = re.compile(rb"\s+")


def sgm_segments(path) -> Iterator:
    """Yields the text of each <seg> of a WMT .sgm file (bytes), cleaned as sacrebleu does (strip,
    collapse whitespace, no entity unescaping) so references equal the ones sacrebleu scores."""
    with text_io.open_binary(str(path)) as f:
        for line in text_io.bounded_lines(f):
            if isinstance(line, text_io.Skipped):
                yield line
            elif line.lstrip()[:4].lower() == b"<seg":
                match = _SEG.search(line)
                yield _SPACES.sub(b" ", match.group(1).strip()) if match else b""


def read_sgm_pair(source_path, target_path) -> Iterator:
    """Pairs the i-th <seg> of a source .sgm with the i-th of its reference, like
    text_io.read_parallel_files does for lines (extra segments are "unpaired_line")."""
    sentinel = object()
    sources, targets = sgm_segments(source_path), sgm_segments(target_path)
    while True:
        s, t = next(sources, sentinel), next(targets, sentinel)
        if s is sentinel and t is sentinel:
            return
        if s is sentinel or t is sentinel:
            yield text_io.Skipped("unpaired_line")
        elif isinstance(s, text_io.Skipped):
            yield s
        elif isinstance(t, text_io.Skipped):
            yield t
        else:
            yield s, t


def read_corpus(corpus: Corpus, source_path, target_path) -> Iterator:
    """Streams (source, target) byte pairs or text_io.Skipped markers of one corpus."""
    if corpus.sgm:
        return read_sgm_pair(source_path, target_path)
    return text_io.read_parallel_files(str(source_path), str(target_path))


# ----------------------------------------------------------------------------- locating files


class CorpusFiles:
    """Finds (and if allowed, downloads and extracts) the member files of WMT corpora.

    raw_dir: a folder with the archives under their original names and/or their extracted files
    (at their archive paths or just their base names); nothing is downloaded. Otherwise archives are
    downloaded to `<tmp_dir>/downloads` and extracted under `<tmp_dir>/extracted/<archive>`.
    max_extract_bytes / max_extract_ratio: archives.extract's limits against decompression bombs
    (None: its defaults, which the real archives pass).
    """

    def __init__(self, tmp_dir, raw_dir=None, archives=None, max_extract_bytes=None,
                 max_extract_ratio=None):
        self.tmp_dir = pathlib.Path(tmp_dir)
        self.raw_dir = pathlib.Path(raw_dir).expanduser() if raw_dir else None
        self.archives = ARCHIVES if archives is None else archives
        self.limits = {"max_extract_bytes": max_extract_bytes,
                       "max_extract_ratio": max_extract_ratio}
        if self.raw_dir is not None and not self.raw_dir.is_dir():
            raise UserError(f"--raw_dir {self.raw_dir} is not a directory")

    def paths(self, corpus: Corpus) -> Tuple[pathlib.Path, pathlib.Path]:
        members = (corpus.source, corpus.target)
        found = [self._already_extracted(m) for m in members]
        if all(found):
            return found[0], found[1]
        remote = self.archives[corpus.archive]
        dest = self.tmp_dir / "extracted" / corpus.archive
        if not is_extracted(remote.name, dest, members):  # else the archive is not needed
            extract(self._archive(remote, members), dest, members=members, **self.limits)
        return dest / corpus.source, dest / corpus.target

    def check_available(self, corpora) -> None:
        """With raw_dir, raises one UserError naming every archive that is missing there."""
        if self.raw_dir is None:
            return
        missing = {}
        for corpus in corpora:
            remote = self.archives[corpus.archive]
            extracted = all(self._already_extracted(m) for m in (corpus.source, corpus.target))
            if not extracted and not (self.raw_dir / remote.name).is_file():
                missing[remote.name] = remote.url
        if missing:
            listing = "; ".join(f"{name} from {url}" for name, url in missing.items())
            raise UserError(f"--raw_dir {self.raw_dir} lacks {len(missing)} archive(s) (or their "
                            f"extracted files): {listing}")

    def _already_extracted(self, member: str) -> Optional[pathlib.Path]:
        if self.raw_dir is None:
            return None
        for candidate in (self.raw_dir / member, self.raw_dir / pathlib.PurePosixPath(member).name):
            if candidate.is_file():
                return candidate
        return None

    def _archive(self, remote: RemoteFile, members) -> pathlib.Path:
        if self.raw_dir is None:
            return download.download(remote, self.tmp_dir / "downloads")
        archive = self.raw_dir / remote.name
        if not archive.is_file():
            raise UserError(f"--raw_dir {self.raw_dir} has neither {remote.name} nor its files "
                            f"{', '.join(members)}; download it from {remote.url}")
        download.verify_file(archive, remote)
        return archive


# ----------------------------------------------------------------------------- problems


def _positive(name, value, kind):
    """A problem param (a string from --problem_param, or a number) as a positive `kind`."""
    if value is None:
        return None
    try:
        number = kind(float(value)) if kind is int else kind(value)
    except (TypeError, ValueError):
        number = None
    if number is None or number <= 0 or number != number:
        raise UserError(f"problem param {name} must be a positive number, got {value!r}")
    return number


class _Wmt14Problem(TranslationProblem):
    """Shared streaming of a WMT14 language pair; subclasses give `corpora` and the vocabulary."""

    corpora = None  # {"train" | "dev" | "test": tuple of Corpus}
    source_language = "en"

    def __init__(self, raw_dir=None, archives=None, max_extract_bytes=None,
                 max_extract_ratio=None):
        """Args (--problem_param=NAME=VALUE; archives, a dict, from Python only):
          raw_dir: a folder of already-downloaded archives or extracted files (nothing is
            downloaded).
          archives: replaces entries of ARCHIVES (e.g. a mirror's URLs), keyed by archive name.
          max_extract_bytes: raises archives.extract's limit on bytes written per archive, a
            guard against decompression bombs.
          max_extract_ratio: raises archives.extract's limit on one member's expansion (N:1).
        """
        self.raw_dir = raw_dir
        self.archives = dict(ARCHIVES, **(archives or {}))
        self.max_extract_bytes = _positive("max_extract_bytes", max_extract_bytes, int)
        self.max_extract_ratio = _positive("max_extract_ratio", max_extract_ratio, float)

    def generate_samples(self, split, tmp_dir):
        files = CorpusFiles(tmp_dir, raw_dir=self.raw_dir, archives=self.archives,
                            max_extract_bytes=self.max_extract_bytes,
                            max_extract_ratio=self.max_extract_ratio)
        files.check_available(self.corpora[split])
        for corpus in self.corpora[split]:
            source_path, target_path = files.paths(corpus)
            yield from read_corpus(corpus, source_path, target_path)


@registry.register_problem(aliases=("wmt14_ende",))
class TranslateEndeWmt14(_Wmt14Problem):
    """WMT14 English->German as in the paper: 4.5M pairs, shared BPE ~37k, newstest2013/2014."""
    target_language = "de"

    corpora = ENDE
    vocab_type = "bpe"
    vocab_size = 37000
    # Common Crawl carries stray characters from every script; don't spend pieces on them.
    character_coverage = 0.9999


@registry.register_problem(aliases=("wmt14_enfr",))
class TranslateEnfrWmt14(_Wmt14Problem):
    """WMT14 English->French as in the paper: 36M pairs, 32k WordPiece, newstest2013/2014."""
    target_language = "fr"

    corpora = ENFR
    vocab_type = "wordpiece"
    vocab_size = 32000
