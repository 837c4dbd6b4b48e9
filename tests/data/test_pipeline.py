"""Bucketed batching: tensor2tensor's boundary arithmetic, token budgets, padding, worker shards."""
import collections

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import problems, registry  # noqa: F401  (problems registers the built-ins)
from t2t_lite.data import pipeline


def test_boundaries_follow_tensor2tensor():
    boundaries = pipeline.bucket_boundaries(64)
    assert boundaries == [8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 22, 24, 26, 28, 30,
                          33, 36, 39, 42, 46, 50, 55, 60]
    big = pipeline.bucket_boundaries(256)
    assert big[-1] < 256 and all(b > a for a, b in zip(big, big[1:]))
    assert all(b <= max(a + 1, a * 1.1) for a, b in zip(big, big[1:]))


def test_batch_sizes_are_budget_over_boundary():
    boundaries = pipeline.bucket_boundaries(64)
    sizes = pipeline.bucket_batch_sizes(boundaries, 64, batch_tokens=4096)
    assert len(sizes) == len(boundaries) + 1
    assert sizes[0] == 4096 // 8 and sizes[-1] == 4096 // 64
    # Bucket i holds lengths < boundaries[i]; the last bucket lengths <= max_length.
    for size, longest in zip(sizes, [b - 1 for b in boundaries] + [64]):
        assert size * longest <= 4096
    with pytest.raises(ValueError, match="cannot hold one example"):
        pipeline.bucket_batch_sizes(boundaries, 64, batch_tokens=32)


@pytest.fixture(scope="module")
def copy_data(tmp_path_factory):
    data_dir = str(tmp_path_factory.mktemp("copy"))
    problem = registry.problem("algorithmic_reverse", min_length=1, max_length=60,
                                 train_samples=4000, eval_samples=300)
    problem.generate_data(data_dir)
    return problem, data_dir


@pytest.mark.slow
def test_train_batches_respect_budget_and_pad_little(copy_data):
    problem, data_dir = copy_data
    ds = problem.dataset("train", data_dir, batch_tokens=512, max_length=48, seed=1)
    real = padded = 0
    for batch in ds.take(100):
        inputs, targets = batch["inputs"].numpy(), batch["targets"].numpy()
        assert inputs.dtype == np.int32 and targets.dtype == np.int32
        assert inputs.size <= 512 and targets.size <= 512
        assert inputs.shape[1] <= 48 and targets.shape[1] <= 48
        lengths = (inputs > 0).sum(axis=1)
        assert all(row[n - 1] == 1 for row, n in zip(inputs, lengths))  # EOS ends each row
        real += lengths.sum()
        padded += inputs.size
    padding = 1 - real / padded
    print(f"padding fraction (inputs): {padding:.3f}")
    assert padding < 0.15


def test_eval_is_one_full_deterministic_pass(copy_data):
    problem, data_dir = copy_data
    def rows(ds):
        return [tuple(r[r > 0]) for b in ds for r in b["targets"].numpy()]
    # max_length below the longest example: eval keeps them all, still within the budget.
    ds = problem.dataset("dev", data_dir, batch_tokens=256, max_length=32)
    first = rows(ds)
    assert len(first) == 300 and first == rows(ds)
    assert max(len(r) for r in first) > 32
    for batch in ds:
        assert batch["targets"].numpy().size <= 256


@pytest.mark.slow
def test_workers_read_disjoint_shares(copy_data):
    problem, data_dir = copy_data
    shares = []
    for worker in range(2):
        context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=worker,
                                             num_replicas_in_sync=2)
        ds = problem.dataset("test", data_dir, batch_tokens=256, max_length=64,
                             input_context=context)
        shares.append(collections.Counter(tuple(r[r > 0]) for b in ds for r in b["inputs"].numpy()))
    everything = problem.dataset("test", data_dir, batch_tokens=256, max_length=64)
    assert shares[0] + shares[1] == collections.Counter(
        tuple(r[r > 0]) for b in everything for r in b["inputs"].numpy())
    assert 100 < sum(shares[0].values()) < 200


@pytest.fixture(scope="module")
def text_data(tmp_path_factory):
    from tests.conftest import sentences
    root = tmp_path_factory.mktemp("text")
    corpus = root / "corpus.tsv"
    pairs = sorted(set(sentences(600)))
    corpus.write_text("".join(f"{s}\t{' '.join(reversed(s.split()))}\n" for s in pairs),
                      encoding="utf-8")
    problem = registry.problem("translate_text_files", train=str(corpus), vocab_size=80)
    data_dir = str(root / "data")
    problem.generate_data(data_dir)
    return problem, data_dir


@pytest.mark.slow
def test_subword_sampling_segments_each_read_anew_within_the_budget(text_data):
    problem, data_dir = text_data
    tokenizer = problem.tokenizer(data_dir)
    stored = problem.dataset("train", data_dir, batch_tokens=512, max_length=64, seed=1)
    sampled = problem.dataset("train", data_dir, batch_tokens=512, max_length=64, seed=1,
                              subword_sampling=0.3)

    def read(ds):
        tokens, pairs = 0, collections.Counter()
        for batch in ds.take(60):
            inputs, targets = batch["inputs"].numpy(), batch["targets"].numpy()
            assert inputs.size <= 512 and targets.size <= 512 and inputs.shape[1] <= 64
            tokens += int((inputs > 0).sum())
            sources = [s.decode() for s in tokenizer.decode(inputs).numpy()]
            outputs = [s.decode() for s in tokenizer.decode(targets).numpy()]
            pairs.update(zip(sources, outputs))
        return tokens / sum(pairs.values()), pairs

    stored_length, _ = read(stored)
    sampled_length, sampled_pairs = read(sampled)
    # The corpus's own text pairs, each side still with its own partner, in more, shorter pieces.
    assert set(sampled_pairs) <= set(problem.clean_samples("train", None, {}))
    assert sampled_length > 1.1 * stored_length
