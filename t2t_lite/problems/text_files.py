"""`translate_text_files`: your own parallel text, configured by flags or gin, no Python needed.

Each split is either a TSV file (source<TAB>target per line) or two line-aligned files given as
"source_path,target_path"; .gz/.bz2/.xz are read directly. Without dev/test files, a
deterministic 1% / 1% of the training pairs (chosen by a hash of the source) is held out for each.

    t2t-lite-datagen --problem=translate_text_files --data_dir=D \
        --problem_param=train=corpus.en,corpus.de --problem_param=vocab_size=16000
    # or in a gin file / --gin_param:
    translate_text_files.train = "corpus.tsv"
    translate_text_files.vocab_type = "wordpiece"

`vocab_from=PARENT` (a model_dir or a vocabulary file) encodes the data with that vocabulary
instead of learning one, as a model fine-tuned from PARENT needs (t2t-lite-trainer
--warm_start_from=PARENT).
"""
import os

import gin

from t2t_lite import registry
from t2t_lite.data import text_io, translation
from t2t_lite.errors import UserError
from t2t_lite.problems import heldout

HELDOUT_SPLITS = {"dev": range(0, 10), "test": range(10, 20)}  # per mille of hash buckets


@registry.register_problem
@gin.configurable("translate_text_files")
class TranslateTextFiles(translation.TranslationProblem):
    """Your own parallel text: TSV or source,target files (set with --problem_param or gin)."""

    def __init__(self, train=None, dev=None, test=None, vocab_type="bpe", vocab_size=8000,
                 vocab_sample_pairs=200_000, vocab_from=None):
        """Args (--problem_param=NAME=VALUE, or gin translate_text_files.NAME):
          train: the training text: FILE.tsv (source<TAB>target) or SOURCE,TARGET line-aligned
            files; .gz/.bz2/.xz are read directly.
          dev: the dev text, as train (default: 1% of train, chosen by a hash of the source).
          test: the test text, as train (default: another 1% of train).
          vocab_type: "bpe" or "wordpiece".
          vocab_size: pieces in the vocabulary learned from the data.
          vocab_sample_pairs: training pairs the vocabulary is learned from.
          vocab_from: a model_dir or vocabulary file whose vocabulary encodes the data instead
            of a new one (fine-tuning that parent).
        """
        self.files = {"train": train, "dev": dev, "test": test}
        self.vocab_from = vocab_from
        self.vocab_type = vocab_type
        self.vocab_size = int(vocab_size)
        self.vocab_sample_pairs = int(vocab_sample_pairs)

    def generate_samples(self, split, tmp_dir):
        if not self.files["train"]:
            raise UserError("translate_text_files needs training text: --problem_param=train="
                            "FILE.tsv or train=SOURCE,TARGET (or gin translate_text_files.train)")
        # The held-out splits without files of their own, carved out of train by hash.
        carved = {s: buckets for s, buckets in HELDOUT_SPLITS.items() if not self.files[s]}
        if split != "train" and self.files[split] or split == "train" and not carved:
            yield from _read_spec(self.files[split])
            return
        for sample in _read_spec(self.files["train"]):
            if isinstance(sample, text_io.Skipped):
                if split == "train":
                    yield sample
                continue
            if heldout.split_of(sample[0], carved) == split:
                yield sample


def _read_spec(spec):
    paths = spec.split(",")
    for path in paths:
        if not os.path.isfile(path):
            raise UserError(f"translate_text_files: file not found: {path}")
    if len(paths) == 1:
        return text_io.read_tsv(paths[0])
    if len(paths) == 2:
        return text_io.read_parallel_files(*paths)
    raise UserError(f"translate_text_files: expected FILE.tsv or SOURCE,TARGET, got {spec!r}")
