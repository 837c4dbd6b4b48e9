"""The Problem base class: text pairs in, token-id TFRecords and tf.data pipelines out.

A Problem streams (source, target) text samples per split, owns one vocabulary file, writes
sharded TFRecords with `generate_data`, and serves them with `dataset`. Subclasses supply:

  * `generate_samples(split, tmp_dir)` -> iterator of (source, target) pairs (str or UTF-8
    bytes), or `text_io.Skipped(reason)` for input they saw but could not use. It must be
    deterministic (same order on every call): a resumed run skips the samples already written.
  * the vocabulary: `vocab_filename()` and `build_vocab(data_dir, sample_path)` (see
    `t2t_lite.data.translation.TranslationProblem` for learned BPE / WordPiece vocabularies).
  * optionally `postprocess_output(source, output)`, which makes each decoded output the line
    t2t-lite-decoder writes, and `dev_metric`, the metric evaluated on dev during training.

The base class validates every sample (invalid UTF-8, empty side, absurdly long side are skipped
and counted), never holds a corpus in memory, and reports counts per split.
"""
import glob
import os
import tempfile
import time

from absl import logging

from t2t_lite import registry
from t2t_lite.data import pipeline, shards, text_io, tokenizers, vocab
from t2t_lite.errors import UserError
from t2t_lite.ids import EOS_ID

SPLITS = ("train", "dev", "test")
EVAL_SPLITS = ("dev", "test")


class Problem:
    """Base class; see the module docstring for what a subclass provides."""

    # Samples with a side longer than this many characters are skipped as "too_long".
    max_chars = 1000
    # Examples per TFRecord shard (also the unit of memory and of resume), per split.
    examples_per_shard = {"train": 100_000, "dev": 100_000, "test": 100_000}
    # How many (source, target) pairs a learned vocabulary is trained on (reservoir sample).
    vocab_sample_pairs = 200_000
    # Encode this many pairs per call into the in-graph tokenizer.
    encode_batch_size = 1024

    # --- what subclasses provide -------------------------------------------------------------

    def generate_samples(self, split, tmp_dir):
        raise NotImplementedError

    def vocab_filename(self):
        """Basename of the vocabulary file in data_dir; its suffix picks the tokenizer type."""
        raise NotImplementedError

    def build_vocab(self, data_dir, sample_path):
        """Writes the vocabulary file; sample_path holds sampled sentences (None if not needed)."""
        raise NotImplementedError

    def needs_vocab_sample(self):
        """False for fixed vocabularies: datagen then skips the sampling pass."""
        return True

    # Dev metric computed during training on decoded dev sentences (t2t_lite.training.evaluation
    # names them): "bleu" for translation; parsing problems use "parseval" (labelled bracket F1).
    dev_metric = "bleu"

    # The language whose sentence rules split long source lines before they are translated
    # (t2t_lite.data.sentences); None: every line is translated whole (parsing, toy tasks).
    source_language = None
    # The language a translation problem's outputs are in (t2t-lite-po's target language for a
    # model trained on it); None where the outputs are not a language (parsing, toy tasks).
    target_language = None

    @classmethod
    def postprocess_output(cls, source_text, output_text):
        """Turns one decoded output into the line the decoder writes (default: unchanged).

        Parsing problems rebuild a bracketed tree over the source words here. A classmethod
        because the decoder knows only the problem's name (from the model's metadata), not the
        parameters it was built with.
        """
        return output_text

    def heldout_report(self, data_dir, tmp_dir=None):
        """Lines for the datagen report on held-out sentences with a near-twin in train (problems
        that can measure it override this; see t2t_lite.data.overlap)."""
        return []

    # --- names and files ---------------------------------------------------------------------

    @property
    def name(self):
        return getattr(type(self), "registered_name", None) or registry.default_name(type(self))

    @property
    def dataset_name(self):
        """Prefix of this problem's files in data_dir (problems with parameters refine it)."""
        return self.name

    def vocab_path(self, data_dir):
        return os.path.join(data_dir, self.vocab_filename())

    def text_path(self, data_dir, split):
        """Clean text of an evaluation split, one `source<TAB>target` per line."""
        return os.path.join(data_dir, f"{self.dataset_name}-{split}.tsv")

    def tokenizer(self, data_dir):
        path = self.vocab_path(data_dir)
        if not os.path.exists(path):
            raise UserError(f"no vocabulary {path}; run t2t-lite-datagen --problem={self.name} "
                            f"--data_dir={data_dir} first")
        return tokenizers.load_tokenizer(path)

    # --- datagen -----------------------------------------------------------------------------

    def clean_samples(self, split, tmp_dir, counts):
        """Yields valid (source, target) str pairs; counts read / skipped:<reason> in `counts`."""
        for sample in self.generate_samples(split, tmp_dir):
            counts["read"] = counts.get("read", 0) + 1
            reason = None
            if isinstance(sample, text_io.Skipped):
                reason = sample.reason
            elif not isinstance(sample, (tuple, list)) or len(sample) != 2:
                reason = "malformed_sample"
            else:
                reason, pair = self._validate(sample)
            if reason:
                key = "skipped:" + reason
                counts[key] = counts.get(key, 0) + 1
                continue
            yield pair

    def _validate(self, sample):
        sides = []
        for side in sample:
            if isinstance(side, bytes):
                try:
                    side = side.decode("utf-8")
                except UnicodeDecodeError:
                    return "invalid_utf8", None
            elif not isinstance(side, str):
                return "malformed_sample", None
            # Tabs and newlines would break the line-based eval text files.
            side = " ".join(side.split())
            if not side:
                return "empty_side", None
            if len(side) > self.max_chars:
                return "too_long", None
            sides.append(side)
        return None, tuple(sides)

    def generate_data(self, data_dir, tmp_dir=None):
        """Builds the vocabulary and all splits' shards; resumes an interrupted run.

        Returns {split: manifest}; each manifest counts read, written and skipped:<reason>.
        """
        os.makedirs(data_dir, exist_ok=True)
        tmp_dir = tmp_dir or os.path.join(data_dir, "tmp")
        os.makedirs(tmp_dir, exist_ok=True)
        if not os.path.exists(self.vocab_path(data_dir)):
            self._generate_vocab(data_dir, tmp_dir)
        tokenizer = self.tokenizer(data_dir)
        return {split: self._generate_split(split, data_dir, tmp_dir, tokenizer)
                for split in SPLITS}

    def _generate_vocab(self, data_dir, tmp_dir):
        if not self.needs_vocab_sample():
            self.build_vocab(data_dir, None)
            return
        start = time.time()
        counts = {}
        pairs = vocab.reservoir_sample(self.clean_samples("train", tmp_dir, counts),
                                       self.vocab_sample_pairs)
        if not pairs:
            raise UserError(f"problem {self.name}: no valid training pairs to learn a vocabulary "
                            f"from ({_format_counts(counts)})")
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=tmp_dir, suffix=".txt",
                                         delete=False) as f:
            for source, target in pairs:
                f.write(source + "\n" + target + "\n")
        sample_size = len(pairs)
        del pairs
        try:
            self.build_vocab(data_dir, f.name)
        finally:
            os.remove(f.name)
        size = tokenizers.load_tokenizer(self.vocab_path(data_dir)).vocab_size
        logging.info("%s: vocabulary %s (%d tokens) from a sample of %d pairs in %.1fs",
                     self.name, self.vocab_filename(), size, sample_size, time.time() - start)
        asked = getattr(self, "vocab_size", None)
        if isinstance(asked, int) and size < asked:
            # SentencePiece takes what a small sample supports; a user should know it did.
            logging.warning("%s: the vocabulary has %d tokens, fewer than the %d asked: the "
                            "training data supports no more", self.name, size, asked)

    def _generate_split(self, split, data_dir, tmp_dir, tokenizer):
        done = shards.read_manifest(data_dir, self.dataset_name, split)
        if done is not None:
            logging.debug("%s %s: already complete (%d examples), skipped", self.name, split,
                         done["num_examples"])
            return dict(done, already_complete=True)
        start = time.time()
        writer = shards.ShardedSplitWriter(data_dir, self.dataset_name, split,
                                           self.examples_per_shard[split])
        counts = {"read": 0, "written": 0}
        text_file = None
        if split in EVAL_SPLITS:
            text_tmp = self.text_path(data_dir, split) + shards.TMP_SUFFIX
            text_file = open(text_tmp, "w", encoding="utf-8")
        to_skip = writer.resume_count
        batch = []
        for pair in self.clean_samples(split, tmp_dir, counts):
            if text_file:
                text_file.write(pair[0] + "\t" + pair[1] + "\n")
            if to_skip:  # already in a finished shard of an interrupted run
                to_skip -= 1
                continue
            batch.append(pair)
            if len(batch) >= self.encode_batch_size:
                self._write_batch(batch, tokenizer, writer, counts)
                batch = []
        self._write_batch(batch, tokenizer, writer, counts)
        if to_skip:
            raise RuntimeError(f"{self.name} {split}: samples changed since the interrupted run "
                               f"({to_skip} fewer); delete {data_dir}/{self.dataset_name}-{split}-* "
                               "and re-run")
        if text_file:
            text_file.close()
            os.replace(text_tmp, self.text_path(data_dir, split))
        counts["resumed_from_shards"] = writer.resumed_shards
        counts["already_in_finished_shards"] = writer.resume_count
        counts["seconds"] = round(time.time() - start, 2)
        manifest = writer.close(counts)
        # The datagen report prints these counts; here only for --verbosity=1 (e.g. library use).
        logging.debug("%s %s: %s", self.name, split, _format_counts(counts))
        if split == "train" and manifest["num_examples"] == 0:
            raise UserError(f"problem {self.name}: no valid training pairs ({_format_counts(counts)})")
        return manifest

    def _write_batch(self, batch, tokenizer, writer, counts):
        if not batch:
            return
        ids = tokenizer.encode_batch([s for s, _ in batch] + [t for _, t in batch])
        n = len(batch)
        for i in range(n):
            writer.add(ids[i] + [EOS_ID], ids[n + i] + [EOS_ID])
        counts["written"] += n

    # --- reading -----------------------------------------------------------------------------

    def manifest(self, data_dir, split):
        manifest = shards.read_manifest(data_dir, self.dataset_name, split)
        if manifest is None:
            raise UserError(f"no complete {split} data for {self.name} in {data_dir}; run "
                            f"t2t-lite-datagen --problem={self.name} --data_dir={data_dir}")
        return manifest

    def dataset(self, mode, data_dir, batch_tokens, max_length, input_context=None,
                shuffle=None, repeat=None, drop_long=None, shuffle_buffer=10_000, seed=None,
                subword_sampling=None):
        """Length-bucketed batches {"inputs": int32 [B, S], "targets": int32 [B, T]}.

        mode: "train" (shuffled, repeated, pairs longer than max_length dropped) or an eval
        split "dev"/"test" (one deterministic pass, nothing dropped). batch_tokens is the
        per-replica budget: every batch has B * max_len <= batch_tokens for inputs and targets.
        subword_sampling: None, or the sampling rate (a float, or a tf.Variable read as the data
        flows) with which both sides are segmented anew each time a pair is read
        (Tokenizer.resegmenter).
        """
        split = "dev" if mode == "eval" else mode
        if split not in SPLITS:
            raise UserError(f"unknown mode {mode!r}; expected train, eval, dev or test")
        training = split == "train"
        manifest = self.manifest(data_dir, split)
        resegment = (self.tokenizer(data_dir).resegmenter(subword_sampling)
                     if subword_sampling is not None else None)
        return pipeline.bucketed_dataset(
            files=sorted(glob.glob(shards.shard_pattern(data_dir, self.dataset_name, split))),
            length_histogram={int(k): v for k, v in manifest["length_histogram"].items()},
            batch_tokens=batch_tokens, max_length=max_length, input_context=input_context,
            shuffle=training if shuffle is None else shuffle,
            repeat=training if repeat is None else repeat,
            drop_long=training if drop_long is None else drop_long,
            shuffle_buffer=shuffle_buffer, seed=seed, description=f"{self.name} {split}",
            resegment=resegment)

    def eval_text_pairs(self, data_dir, split="dev"):
        """The clean (source, target) text of an evaluation split, in file order."""
        if split not in EVAL_SPLITS:
            raise UserError(f"eval_text_pairs: split must be one of {EVAL_SPLITS}, got {split!r}")
        self.manifest(data_dir, split)
        with open(self.text_path(data_dir, split), encoding="utf-8") as f:
            return [tuple(line.rstrip("\n").split("\t")) for line in f]


def _format_counts(counts):
    return ", ".join(f"{k}={v}" for k, v in counts.items())
