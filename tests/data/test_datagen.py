"""Datagen: bad input is skipped and counted, shards are complete and resumable, eval text kept."""
import glob
import json
import os

import pytest
import tensorflow as tf

from t2t_lite import problems, registry  # noqa: F401  (problems: the built-ins registered)
from t2t_lite.data import shards, text_io, tokenizers, translation
from t2t_lite.errors import UserError

GOOD = [("the cat sat on the mat number %d" % i, "die katze sass auf der matte nummer %d" % i)
        for i in range(300)]


class TinyPairs(translation.TranslationProblem):
    vocab_size = 80
    examples_per_shard = {"train": 100, "dev": 100, "test": 100}

    def __init__(self, path):
        self.path = path

    def generate_samples(self, split, tmp_dir):
        yield from text_io.read_tsv(self.path[split])


def write_tsv(path, lines):
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    return str(path)


def good_lines(pairs):
    return [f"{s}\t{t}".encode() for s, t in pairs]


def read_shards(data_dir, prefix, split):
    records = []
    for path in sorted(glob.glob(shards.shard_pattern(data_dir, prefix, split))):
        for raw in tf.data.TFRecordDataset(path):
            ex = tf.train.Example.FromString(raw.numpy())
            records.append((list(ex.features.feature["inputs"].int64_list.value),
                            list(ex.features.feature["targets"].int64_list.value)))
    return records


@pytest.fixture
def dirty_problem(tmp_path):
    bad = [
        b"only one column",
        b"a\tb\tc",
        b"\t   ",                      # empty sides
        b"caf\xe9\tinvalid utf-8",     # latin-1 byte
        b"x" * 2000 + b"\ty",          # over max_chars
        b"y" * (text_io.MAX_LINE_BYTES + 5) + b"\tz",  # over the reader's byte bound
    ]
    train = write_tsv(tmp_path / "train.tsv", good_lines(GOOD[:250]) + bad)
    dev = write_tsv(tmp_path / "dev.tsv", good_lines(GOOD[250:275]))
    test = write_tsv(tmp_path / "test.tsv", good_lines(GOOD[275:]))
    return TinyPairs({"train": train, "dev": dev, "test": test})


def test_bad_input_is_skipped_counted_and_reported(dirty_problem, tmp_path):
    data_dir = str(tmp_path / "data")
    report = dirty_problem.generate_data(data_dir)
    train = report["train"]
    assert train["read"] == 256 and train["written"] == 250
    assert {k: v for k, v in train.items() if k.startswith("skipped:")} == {
        "skipped:wrong_column_count": 2, "skipped:empty_side": 1, "skipped:invalid_utf8": 1,
        "skipped:too_long": 2}
    assert train["num_shards"] == 3 and train["num_examples"] == 250
    assert report["dev"]["num_examples"] == 25 and report["test"]["num_examples"] == 25
    # The manifest on disk holds the same report, plus a length histogram summing to the total.
    manifest = json.load(open(shards.manifest_path(data_dir, dirty_problem.dataset_name, "train")))
    assert sum(manifest["length_histogram"].values()) == 250


def test_shards_decode_back_to_the_pairs(dirty_problem, tmp_path):
    data_dir = str(tmp_path / "data")
    dirty_problem.generate_data(data_dir)
    tok = dirty_problem.tokenizer(data_dir)
    records = read_shards(data_dir, dirty_problem.dataset_name, "train")
    assert all(r[0][-1] == 1 and r[1][-1] == 1 for r in records)  # EOS-terminated
    width = max(len(x) for r in records for x in r)
    pad = lambda seqs: tf.constant([s + [0] * (width - len(s)) for s in seqs], tf.int32)
    sources = [s.decode() for s in tok.decode(pad([r[0] for r in records])).numpy()]
    targets = [s.decode() for s in tok.decode(pad([r[1] for r in records])).numpy()]
    assert sorted(zip(sources, targets)) == sorted(GOOD[:250])
    assert dirty_problem.eval_text_pairs(data_dir, "dev") == GOOD[250:275]
    assert dirty_problem.eval_text_pairs(data_dir, "test") == GOOD[275:]


def test_rerun_skips_finished_work_and_resumes_shards(dirty_problem, tmp_path):
    data_dir = str(tmp_path / "data")
    first = dirty_problem.generate_data(data_dir)
    again = dirty_problem.generate_data(data_dir)
    assert all(again[split]["already_complete"] for split in again)
    reference = read_shards(data_dir, dirty_problem.dataset_name, "train")

    # Simulate an interruption after the first train shard: drop later shards and the manifest,
    # leave a half-written temporary file behind.
    prefix = dirty_problem.dataset_name
    os.remove(shards.manifest_path(data_dir, prefix, "train"))
    for index in (1, 2):
        os.remove(shards.shard_path(data_dir, prefix, "train", index))
        os.remove(shards.shard_path(data_dir, prefix, "train", index) + ".stats.json")
    partial = shards.shard_path(data_dir, prefix, "train", 1) + shards.TMP_SUFFIX
    open(partial, "wb").write(b"garbage")
    resumed = dirty_problem.generate_data(data_dir)["train"]
    assert resumed["resumed_from_shards"] == 1 and resumed["already_in_finished_shards"] == 100
    assert resumed["written"] == 150 and resumed["num_examples"] == first["train"]["num_examples"]
    assert not os.path.exists(partial)
    assert read_shards(data_dir, prefix, "train") == reference


def test_no_valid_pairs_is_a_user_error(tmp_path):
    path = write_tsv(tmp_path / "bad.tsv", [b"no tabs here", b"\t"])
    problem = TinyPairs({"train": path, "dev": path, "test": path})
    with pytest.raises(UserError, match="no valid training pairs.*wrong_column_count=1"):
        problem.generate_data(str(tmp_path / "data"))


def test_reading_before_datagen_is_a_user_error(dirty_problem, tmp_path):
    with pytest.raises(UserError, match="run t2t-lite-datagen"):
        dirty_problem.dataset("train", str(tmp_path), batch_tokens=64, max_length=16)
    with pytest.raises(UserError, match="run t2t-lite-datagen"):
        dirty_problem.tokenizer(str(tmp_path))


def test_parallel_files_reader_counts_unpaired_lines(tmp_path):
    src = write_tsv(tmp_path / "a.en", [b"one", b"two", b"three"])
    tgt = write_tsv(tmp_path / "a.de", [b"eins", b"zwei"])
    assert list(text_io.read_parallel_files(src, tgt)) == [
        (b"one", b"eins"), (b"two", b"zwei"), text_io.Skipped("unpaired_line")]


def test_text_files_problem_holds_out_dev_and_test(tmp_path):
    src = write_tsv(tmp_path / "c.en", [f"sentence {i}".encode() for i in range(2000)])
    tgt = write_tsv(tmp_path / "c.de", [f"satz {i}".encode() for i in range(2000)])
    problem = registry.problem("translate_text_files", train=f"{src},{tgt}", vocab_size="60")
    splits = {s: list(problem.generate_samples(s, None)) for s in ("train", "dev", "test")}
    sizes = {s: len(v) for s, v in splits.items()}
    assert sum(sizes.values()) == 2000 and 5 < sizes["dev"] < 40 and 5 < sizes["test"] < 40
    assert not set(splits["train"]) & set(splits["dev"])
    assert splits == {s: list(problem.generate_samples(s, None)) for s in splits}  # deterministic


def test_text_files_problem_needs_train(tmp_path):
    with pytest.raises(UserError, match="needs training text"):
        registry.problem("translate_text_files").generate_data(str(tmp_path))
    with pytest.raises(UserError, match="file not found"):
        registry.problem("translate_text_files", train="/nonexistent.tsv").generate_data(
            str(tmp_path))


def test_a_vocabulary_smaller_than_asked_is_reported(tmp_path, caplog):
    src = write_tsv(tmp_path / "v.en", [f"sentence {i}".encode() for i in range(300)])
    tgt = write_tsv(tmp_path / "v.de", [f"satz {i}".encode() for i in range(300)])
    problem = registry.problem("translate_text_files", train=f"{src},{tgt}", vocab_size="5000")
    with caplog.at_level("INFO"):
        problem.generate_data(str(tmp_path / "data"))
    size = tokenizers.load_tokenizer(problem.vocab_path(str(tmp_path / "data"))).vocab_size
    assert size < 5000
    assert (f"the vocabulary has {size} tokens, fewer than the 5000 asked: the training data "
            "supports no more") in caplog.text


def test_vocab_from_encodes_the_data_with_a_given_vocabulary(tmp_path):
    src = write_tsv(tmp_path / "p.en", [f"sentence {i}".encode() for i in range(300)])
    tgt = write_tsv(tmp_path / "p.de", [f"satz {i}".encode() for i in range(300)])
    parent = registry.problem("translate_text_files", train=f"{src},{tgt}", vocab_size="60")
    parent.generate_data(str(tmp_path / "parent"))
    parent_vocab = parent.vocab_path(str(tmp_path / "parent"))
    # A model_dir names its vocabulary in run.json; a vocabulary file may be given directly.
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "run.json").write_text(json.dumps({"vocab_file": "v.spm.model"}))
    (model_dir / "v.spm.model").write_bytes(open(parent_vocab, "rb").read())
    for spec in (str(model_dir), parent_vocab):
        child = registry.problem("translate_text_files", train=f"{tgt},{src}", vocab_from=spec)
        data_dir = str(tmp_path / f"child{len(spec)}")
        child.generate_data(data_dir)
        assert open(child.vocab_path(data_dir), "rb").read() == open(parent_vocab, "rb").read()
    # A data_dir already encoded with another vocabulary is refused, not mixed.
    other = registry.problem("translate_text_files", train=f"{src},{tgt}", vocab_size="40")
    other.generate_data(str(tmp_path / "other"))
    child = registry.problem("translate_text_files", train=f"{src},{tgt}", vocab_from=parent_vocab)
    with pytest.raises(UserError, match="is not the vocabulary of vocab_from="):
        child.generate_data(str(tmp_path / "other"))
    with pytest.raises(UserError, match="neither a vocabulary file nor a model_dir"):
        registry.problem("translate_text_files", train=f"{src},{tgt}",
                         vocab_from=str(tmp_path / "nothing")).generate_data(str(tmp_path / "x"))
