"""TranslationProblem: the base for text-pair translation problems with a learned vocabulary.

To add a corpus, subclass it, pick the vocabulary, and stream pairs per split:

    from t2t_lite import registry
    from t2t_lite.data import text_io
    from t2t_lite.data.translation import TranslationProblem

    @registry.register_problem
    class TranslateEndeMyCorpus(TranslationProblem):
        \"\"\"English-German from my files.\"\"\"          # first line shows in --registry_help
        vocab_type = "bpe"          # or "wordpiece"
        vocab_size = 32000

        def generate_samples(self, split, tmp_dir):   # split: "train" | "dev" | "test"
            src, tgt = {"train": ("a.en", "a.de"), "dev": ("d.en", "d.de"),
                        "test": ("t.en", "t.de")}[split]
            yield from text_io.read_parallel_files(src, tgt)   # (bytes, bytes) or Skipped

That is all: datagen samples the training stream for the vocabulary (one shared source/target
vocabulary file `<name>.spm.model` or `<name>.wordpiece.txt` in data_dir), writes shards, and
`dataset()` / `eval_text_pairs()` / `tokenizer()` come from `t2t_lite.data.problem.Problem`.
Optional knobs: `vocab_sample_pairs`, `max_chars`, `examples_per_shard`, `character_coverage`.
"""
import filecmp
import os

from t2t_lite import atomic
from t2t_lite.data import problem, tokenizers, vocab
from t2t_lite.errors import UserError

VOCAB_TYPES = {"bpe": tokenizers.SENTENCEPIECE_SUFFIX, "wordpiece": tokenizers.WORDPIECE_SUFFIX}


class TranslationProblem(problem.Problem):
    """Text-pair translation with a shared learned vocabulary (SentencePiece BPE or WordPiece)."""

    vocab_type = "bpe"
    vocab_size = 8000
    # SentencePiece character coverage: 1.0 keeps every character of the sample (fine for
    # European languages); ~0.9995 suits languages with large alphabets.
    character_coverage = 1.0
    # SentencePiece keeps pieces within one Unicode script by default; see vocab.py.
    split_by_unicode_script = True

    # A vocabulary file or a model_dir whose vocabulary this problem's data is encoded with (a
    # fine-tuning child uses its parent's), copied into data_dir instead of learning one.
    vocab_from = None

    def vocab_filename(self):
        if self.vocab_from:
            parent = vocab.vocab_of(self.vocab_from)
            suffix = next((s for s in (*VOCAB_TYPES.values(), tokenizers.SYMBOLS_SUFFIX)
                           if parent.endswith(s)), None)
            if suffix is None:
                raise UserError(f"vocab_from={self.vocab_from}: unknown vocabulary file type "
                                f"{os.path.basename(parent)}")
            return f"{self.dataset_name}{suffix}"
        if self.vocab_type not in VOCAB_TYPES:
            raise ValueError(f"{self.name}: vocab_type must be one of {sorted(VOCAB_TYPES)}, "
                             f"got {self.vocab_type!r}")
        return f"{self.dataset_name}{VOCAB_TYPES[self.vocab_type]}"

    def needs_vocab_sample(self):
        return not self.vocab_from

    def build_vocab(self, data_dir, sample_path):
        path = self.vocab_path(data_dir)
        if self.vocab_from:
            atomic.copy_file(vocab.vocab_of(self.vocab_from), path)
        elif self.vocab_type == "bpe":
            vocab.train_sentencepiece(sample_path, path, self.vocab_size,
                                      character_coverage=self.character_coverage,
                                      split_by_unicode_script=self.split_by_unicode_script)
        else:
            vocab.train_wordpiece(sample_path, path, self.vocab_size)

    def generate_data(self, data_dir, tmp_dir=None):
        if self.vocab_from:
            path = self.vocab_path(data_dir)
            if os.path.exists(path) and not filecmp.cmp(path, vocab.vocab_of(self.vocab_from),
                                                        shallow=False):
                raise UserError(f"{path} is not the vocabulary of vocab_from={self.vocab_from}: "
                                "data encoded with another vocabulary is there; use another "
                                "--data_dir")
        return super().generate_data(data_dir, tmp_dir)
