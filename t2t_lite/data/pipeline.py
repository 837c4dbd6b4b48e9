"""tf.data input pipeline: TFRecord shards -> length-bucketed batches under a token budget.

As in tensor2tensor's data_reader: bucket boundaries grow geometrically (from 8, step 1.1, up to
max_length); a bucket whose lengths stay below boundary b gets batch size batch_tokens // b; an
example's length is max(len(inputs), len(targets)). So a batch never holds more than
batch_tokens padded tokens on either side, and pairs of similar length share a batch (little
padding).
"""
from absl import logging
import tensorflow as tf

MIN_BOUNDARY = 8
BOUNDARY_STEP = 1.1


def bucket_boundaries(max_length, min_length=MIN_BOUNDARY, step=BOUNDARY_STEP):
    """Geometric boundaries below max_length: 8, 9, 10, ..., 18, 19, 20, 22, 24, 26, 28, 30, 33, ..."""
    boundaries = []
    x = min_length
    while x < max_length:
        boundaries.append(x)
        x = max(x + 1, int(x * step))
    return boundaries


def bucket_batch_sizes(boundaries, max_length, batch_tokens):
    """One batch size per bucket (len(boundaries) + 1): lengths in bucket i are < boundaries[i],
    the last bucket holds lengths up to max_length."""
    if batch_tokens < max_length:
        raise ValueError(f"batch_tokens={batch_tokens} cannot hold one example of "
                         f"max_length={max_length}")
    return [max(1, batch_tokens // b) for b in list(boundaries) + [max_length]]


def example_length(example):
    return tf.maximum(tf.shape(example["inputs"])[0], tf.shape(example["targets"])[0])


def parse_examples(serialized, resegment=None):
    """Parses a block of serialized examples into padded int32 ids plus their lengths.

    resegment: optional function over the block's ragged id rows of each side (subword
    sampling, Tokenizer.resegmenter), applied before padding."""
    features = tf.io.parse_example(serialized, {
        "inputs": tf.io.RaggedFeature(tf.int64),
        "targets": tf.io.RaggedFeature(tf.int64),
    })
    parsed = {}
    for key, ragged in features.items():
        if resegment is not None:
            ragged = resegment(ragged)
        parsed[key] = tf.cast(ragged.to_tensor(), tf.int32)
        parsed[key + "_length"] = tf.cast(ragged.row_lengths(), tf.int32)
    return parsed


def _unpad(example):
    # unbatch() of ragged tensors gives ragged elements, which bucketing cannot pad; so blocks
    # are parsed padded and each example is cut back to its own length here.
    return {key: example[key][:example[key + "_length"]] for key in ("inputs", "targets")}


def dropped_count(length_histogram, max_length):
    return sum(v for k, v in length_histogram.items() if k > max_length)


def bucketed_dataset(files, length_histogram, batch_tokens, max_length, input_context=None,
                     shuffle=True, repeat=True, drop_long=True, shuffle_buffer=10_000, seed=None,
                     description="dataset", resegment=None):
    """Builds the batched pipeline over TFRecord `files`.

    length_histogram ({length: count}, from the datagen manifest) reports how many examples
    `drop_long` removes and, when long examples are kept, extends the buckets to hold them
    (counted on the stored segmentation: `resegment`, which samples another one, can make a
    pair a little longer before the max_length filter).
    """
    total = sum(length_histogram.values())
    too_long = dropped_count(length_histogram, max_length)
    if drop_long:
        if too_long:
            logging.info("%s: dropping %d of %d examples longer than max_length=%d (%.2f%%)",
                         description, too_long, total, max_length, 100.0 * too_long / max(total, 1))
        bucket_max = max_length
    else:
        bucket_max = max([max_length] + list(length_histogram))

    ds = tf.data.Dataset.from_tensor_slices(files)
    if input_context is not None and input_context.num_input_pipelines > 1:
        if len(files) >= input_context.num_input_pipelines:
            ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
            shard_examples = False
        else:  # too few files to give each worker its own: every worker reads, keeps 1/n
            shard_examples = True
    else:
        shard_examples = False
    if shuffle:
        ds = ds.shuffle(len(files), seed=seed, reshuffle_each_iteration=True)
    ds = ds.interleave(tf.data.TFRecordDataset, cycle_length=min(16, max(1, len(files))),
                       num_parallel_calls=tf.data.AUTOTUNE, deterministic=not shuffle)
    if shard_examples:
        ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    if shuffle:
        ds = ds.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat:
        ds = ds.repeat()
    # Parsing in blocks of records is several times faster than one record at a time.
    ds = ds.batch(256).map(lambda block: parse_examples(block, resegment),
                           num_parallel_calls=tf.data.AUTOTUNE,
                           deterministic=not shuffle).unbatch().map(_unpad)
    if drop_long:
        ds = ds.filter(lambda ex: example_length(ex) <= max_length)

    boundaries = bucket_boundaries(bucket_max)
    ds = ds.bucket_by_sequence_length(
        element_length_func=example_length,
        bucket_boundaries=boundaries,
        bucket_batch_sizes=bucket_batch_sizes(boundaries, bucket_max, batch_tokens))
    return ds.prefetch(tf.data.AUTOTUNE)
