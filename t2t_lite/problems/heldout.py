"""Held-out splits carved out of one corpus by a hash: the same key always lands in the same split,
on every run and every machine, so a data_dir generated again keeps its dev and test sets."""
import zlib

BUCKETS = 1000  # the hash's buckets: a split's share is counted in per mille


def split_of(key, per_mille):
    """The split (a key of `per_mille`, {split: range of buckets}) whose buckets hold the CRC-32
    of `key` (bytes), or "train" when none does."""
    bucket = zlib.crc32(key) % BUCKETS
    return next((split for split, buckets in per_mille.items() if bucket in buckets), "train")
