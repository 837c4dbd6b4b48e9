"""English constituency parsing on the Penn Treebank's WSJ (the paper's section 6.3, Table 4).

The treebank is licensed (LDC99T42), so it is read from your copy:

    t2t-lite-datagen --problem=parsing_wsj --data_dir=D --problem_param=raw_dir=R
    t2t-lite-datagen --problem=parsing_wsj_semi --data_dir=D --problem_param=raw_dir=R \
        --problem_param=silver=S      # plus high-confidence parser output, for training only

R holds either the LDC layout, section folders of .mrg files (R/02/wsj_0201.mrg ... found at any
depth, e.g. R = treebank_3/parsed/mrg/wsj), or one bracketed tree per line in R/train.trees,
R/dev.trees and R/test.trees (also accepted: the common 02-21.10way.clean, 22.auto.clean,
23.auto.clean). The split is the standard one: train sections 02-21, dev 22, test 23. S is a
file of one tree per line, or a folder of such files / .mrg files.

Trees are cleaned as is standard (root wrapper, -NONE- traces, emptied constituents and function
tags removed) and linearised as in Vinyals, Kaiser et al. 2015 (see t2t_lite.data.trees): source
"The cat sat .", target "(S (NP XX XX ) (VP XX ) XX )". Bad trees (unbalanced, empty, no tree
at all) are counted and skipped. t2t-lite-decoder turns outputs back into trees over the input
words; dev F1 (EVALB conventions, t2t_lite.metrics.parseval) is the metric during training.
"""
import os
import re

from t2t_lite import registry
from t2t_lite.data import text_io, translation, trees
from t2t_lite.errors import UserError

SECTIONS = {"train": range(2, 22), "dev": range(22, 23), "test": range(23, 24)}
LINE_FILES = {"train": ("train.trees", "02-21.10way.clean"),
              "dev": ("dev.trees", "22.auto.clean"),
              "test": ("test.trees", "23.auto.clean")}
_SECTION_DIR = re.compile(r"^\d\d$")


def find_sections(raw_dir):
    """{section number: sorted .mrg paths} of every two-digit folder under raw_dir."""
    sections = {}
    for folder, subdirs, files in os.walk(raw_dir):
        subdirs.sort()
        name = os.path.basename(folder)
        mrg = sorted(f for f in files if f.endswith(".mrg"))
        if _SECTION_DIR.match(name) and mrg:
            sections.setdefault(int(name), []).extend(os.path.join(folder, f) for f in mrg)
    return sections


def tree_samples(paths):
    """(words, linearised tree) of each tree in the files, or Skipped(reason) for a bad one."""
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for item in trees.read_trees(f):
                if isinstance(item, trees.TreeError):
                    yield text_io.Skipped(f"tree_{item.reason}")
                    continue
                tree = trees.clean(item)
                if tree is None:
                    yield text_io.Skipped("tree_only_traces")
                    continue
                yield trees.linearise(tree)


class ParsingProblem(translation.TranslationProblem):
    """Sentences in, linearised constituency trees out; outputs are decoded back into trees."""

    vocab_type = "bpe"
    # Lets BPE learn "(NP" as one piece: SentencePiece otherwise splits it at the script change
    # into "(" + "NP", and targets grow by one token per constituent.
    split_by_unicode_script = False
    # A 100-word sentence linearises to ~800 characters; keep WSJ's longest sentences.
    max_chars = 4000
    dev_metric = "parseval"

    @classmethod
    def postprocess_output(cls, source_text, output_text):
        return trees.parse_output(output_text, source_text)


@registry.register_problem
class ParsingWsj(ParsingProblem):
    """WSJ constituency parsing from your Penn Treebank copy (--problem_param=raw_dir=...)."""

    vocab_size = 16_000  # the paper's WSJ-only setting

    def __init__(self, raw_dir=None, vocab_size=None):
        """Args (--problem_param=NAME=VALUE):
          raw_dir: your Penn Treebank WSJ copy: section folders 02..23 of .mrg files, or
            train.trees, dev.trees and test.trees with one bracketed tree per line.
          vocab_size: pieces in the BPE vocabulary learned from the data.
        """
        self.raw_dir = raw_dir
        if vocab_size is not None:
            self.vocab_size = int(vocab_size)

    def _missing(self, detail):
        return UserError(
            f"{self.name}: {detail}; pass --problem_param=raw_dir=DIR where DIR holds the Penn "
            "Treebank's WSJ section folders 02..23 of .mrg files (LDC99T42 parsed/mrg/wsj), or "
            "train.trees, dev.trees and test.trees with one bracketed tree per line")

    def split_files(self, split):
        """The files holding a split's trees, in a fixed order."""
        if not self.raw_dir:
            raise self._missing("no treebank given")
        if not os.path.isdir(self.raw_dir):
            raise self._missing(f"{self.raw_dir} is not a folder")
        for name in LINE_FILES[split]:
            path = os.path.join(self.raw_dir, name)
            if os.path.isfile(path):
                return [path]
        sections = find_sections(self.raw_dir)
        if not sections:
            raise self._missing(f"no section folders of .mrg files nor {LINE_FILES[split][0]} "
                                f"under {self.raw_dir}")
        missing = [f"{s:02d}" for s in SECTIONS[split] if s not in sections]
        if missing:
            raise self._missing(f"sections {', '.join(missing)} missing under {self.raw_dir}")
        return [p for s in SECTIONS[split] for p in sections[s]]

    def generate_samples(self, split, tmp_dir):
        yield from tree_samples(self.split_files(split))


@registry.register_problem
class ParsingWsjSemi(ParsingWsj):
    """WSJ parsing, semi-supervised: also trains on silver trees (--problem_param=silver=...)."""

    vocab_size = 32_000  # the paper's semi-supervised setting

    def __init__(self, raw_dir=None, silver=None, vocab_size=None):
        """Args (--problem_param=NAME=VALUE), besides ParsingWsj's:
          silver: extra training trees: a file of one bracketed tree per line, or a folder of
            such files or .mrg files.
        """
        super().__init__(raw_dir=raw_dir, vocab_size=vocab_size)
        self.silver = silver

    def silver_files(self):
        if not self.silver:
            raise UserError(f"{self.name} needs a silver-tree corpus: --problem_param=silver=PATH "
                            "(a file of one bracketed tree per line, or a folder of such files "
                            "or .mrg files), besides raw_dir for WSJ")
        if os.path.isfile(self.silver):
            return [self.silver]
        if os.path.isdir(self.silver):
            files = sorted(os.path.join(folder, f) for folder, _, names in os.walk(self.silver)
                           for f in names if not f.startswith("."))
            if files:
                return files
        raise UserError(f"{self.name}: silver trees {self.silver} not found (a file, or a folder "
                        "of tree files)")

    def generate_samples(self, split, tmp_dir):
        # Check both sources before writing anything.
        silver = self.silver_files() if split == "train" else []
        files = self.split_files(split)
        yield from tree_samples(files)
        yield from tree_samples(silver)
