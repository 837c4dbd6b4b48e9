"""Sharded TFRecord writing that an interrupted run can never corrupt.

A split is written as `<prefix>-<split>-00000.tfrecord`, `...-00001.tfrecord`, ... in order, each
holding up to `examples_per_shard` examples (shuffled within the shard, so memory stays bounded
by one shard). Every shard is written under a temporary name and renamed only when complete,
after its sidecar of statistics; so any `*.tfrecord` present is finished, and a re-run resumes
after the last finished shard. The split's manifest (`<prefix>-<split>.json`) is written last and
marks the whole split as done. A full disk ends in one line (process_end.WriteFailed) that keeps
the finished shards; the same command, after space is freed, resumes after them.
"""
import collections
import contextlib
import glob
import json
import os
import random

import tensorflow as tf

from t2t_lite import atomic, process_end
from t2t_lite.atomic import TMP_SUFFIX


def shard_path(data_dir, prefix, split, index):
    return os.path.join(data_dir, f"{prefix}-{split}-{index:05d}.tfrecord")


def shard_pattern(data_dir, prefix, split):
    return os.path.join(data_dir, f"{prefix}-{split}-[0-9][0-9][0-9][0-9][0-9].tfrecord")


def manifest_path(data_dir, prefix, split):
    return os.path.join(data_dir, f"{prefix}-{split}.json")


def read_manifest(data_dir, prefix, split):
    path = manifest_path(data_dir, prefix, split)
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def serialize_example(inputs, targets):
    """Token-id lists (EOS already appended) -> serialized tf.train.Example."""
    return tf.train.Example(features=tf.train.Features(feature={
        "inputs": tf.train.Feature(int64_list=tf.train.Int64List(value=inputs)),
        "targets": tf.train.Feature(int64_list=tf.train.Int64List(value=targets)),
    })).SerializeToString()


class ShardedSplitWriter:
    """Writes one split's examples into sequential, atomically renamed shards.

    `resume_count` tells the caller how many leading examples finished shards already hold; the
    caller skips that many (the sample stream must be deterministic) and calls `add` for the rest.
    """

    def __init__(self, data_dir, prefix, split, examples_per_shard, seed=0):
        self.data_dir, self.prefix, self.split = data_dir, prefix, split
        self.examples_per_shard = examples_per_shard
        self.seed = seed
        for stale in glob.glob(os.path.join(data_dir, f"{prefix}-{split}-*{TMP_SUFFIX}")):
            os.remove(stale)  # left by an interrupted run; never looks finished
        self.finished = []  # sidecar stats of finished shards, in order
        while os.path.exists(self._path(len(self.finished))):
            with open(self._stats_path(len(self.finished)), encoding="utf-8") as f:
                self.finished.append(json.load(f))
        self.resume_count = sum(s["num_examples"] for s in self.finished)
        self.resumed_shards = len(self.finished)
        self._buffer = []
        self._lengths = collections.Counter()

    def _path(self, index):
        return shard_path(self.data_dir, self.prefix, self.split, index)

    def _stats_path(self, index):
        return self._path(index) + ".stats.json"

    def add(self, inputs, targets):
        self._buffer.append(serialize_example(inputs, targets))
        self._lengths[max(len(inputs), len(targets))] += 1
        if len(self._buffer) >= self.examples_per_shard:
            self._flush()

    def _flush(self):
        index = len(self.finished)
        random.Random(self.seed * 1000003 + index).shuffle(self._buffer)
        path = self._path(index)
        stats = {"num_examples": len(self._buffer),
                 "length_histogram": {str(k): v for k, v in sorted(self._lengths.items())}}
        try:
            with tf.io.TFRecordWriter(path + TMP_SUFFIX) as writer:
                for record in self._buffer:
                    writer.write(record)
            # The sidecar lands first: a renamed shard always has its statistics.
            atomic.write_json(self._stats_path(index), stats, indent=1, sort_keys=True)
        except Exception as error:  # pylint: disable=broad-except  (re-raised unless a write)
            with contextlib.suppress(OSError):
                os.remove(path + TMP_SUFFIX)
            if not process_end.write_failure_reason(error):
                raise
            raise process_end.write_failed(error, path, (
                f"the {index} finished shard{'' if index == 1 else 's'} of {self.split} "
                f"{'is' if index == 1 else 'are'} kept; free some space and run the same command "
                f"again to resume")) from None
        os.replace(path + TMP_SUFFIX, path)
        self.finished.append(stats)
        self._buffer, self._lengths = [], collections.Counter()

    def close(self, report):
        """Flushes the last shard and writes the split manifest (with `report` merged in)."""
        if self._buffer or not self.finished:
            self._flush()
        histogram = collections.Counter()
        for stats in self.finished:
            histogram.update({int(k): v for k, v in stats["length_histogram"].items()})
        manifest = dict(report)
        manifest.update({
            "split": self.split,
            "num_examples": sum(s["num_examples"] for s in self.finished),
            "num_shards": len(self.finished),
            "length_histogram": {str(k): v for k, v in sorted(histogram.items())},
        })
        atomic.write_json(manifest_path(self.data_dir, self.prefix, self.split), manifest,
                          indent=1, sort_keys=True)
        return manifest
