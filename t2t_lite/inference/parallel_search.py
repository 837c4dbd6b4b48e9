"""Parallel beam searches: each batch split over the CPU cores, one search per core.

A beam step is a chain of small ops: matmuls of a few hundred rows, cache gathers and concats,
top-k. On a CPU most of them cannot keep two cores busy, so with TensorFlow's default threading
(every op spread over every core) a 2-core machine idles much of each step. Splitting each batch
into one interleaved part per core and running the parts' searches at once, every op on one
thread, keeps the cores busy (docs/performance.md has the figures). The outputs are the same,
since every sentence's search is independent of the others in its batch.
CTranslate2 calls the same arrangement inter_threads.

`configure_tensorflow` sets the threads; it must run before TensorFlow executes its first op, so
the decoder calls it first thing. `split_batches` and `map_parts` split and run batches.
"""
import concurrent.futures
import os

from t2t_lite import cpu
from t2t_lite.errors import UserError


# Auto never splits a batch further: on many cores, parts of a few sentences would make every
# matmul tiny; past 4, each search gets cores // 4 threads instead.
MAX_AUTO_SEARCHES = 4


def resolve(requested, on_gpu=False):
    """--parallel_searches -> how many searches run at once: requested, or for 0 (auto) one per
    CPU core up to MAX_AUTO_SEARCHES, and 1 on a GPU (where one search already fills it)."""
    requested = int(requested)
    if requested < 0:
        raise UserError(f"--parallel_searches must be >= 0 (0: one per CPU core), got {requested}")
    if requested:
        return requested
    return 1 if on_gpu else min(cpu.available_cores(), MAX_AUTO_SEARCHES)


def tensorflow_on_gpu():
    """Whether TensorFlow sees a GPU (listing devices does not start its runtime)."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


def configure_tensorflow(searches):
    """TensorFlow threads for `searches` searches at once: each op on cores // searches threads,
    and at least `searches` inter-op threads, so the searches' ops run side by side.

    A user's TF_NUM_INTRAOP_THREADS / TF_NUM_INTEROP_THREADS win. Returns False, changing nothing,
    when TensorFlow's runtime has already started with other threads (they are fixed by then);
    1 search changes nothing either.
    """
    import tensorflow as tf

    if searches <= 1:
        return True
    threading = tf.config.threading
    try:
        if "TF_NUM_INTRAOP_THREADS" not in os.environ:
            threading.set_intra_op_parallelism_threads(max(1, cpu.available_cores() // searches))
        if "TF_NUM_INTEROP_THREADS" not in os.environ:
            threading.set_inter_op_parallelism_threads(max(searches, 2))
    except RuntimeError:  # "... cannot be modified after initialization"
        return False
    return True


def interleaved_parts(items, parts):
    """items -> at most `parts` non-empty lists: items 0, n, 2n, ... then 1, n + 1, ...

    The decoder's batches are sorted by length, so interleaving gives every part sentences of
    the same lengths: the parts' searches take about as long, and no core waits for another."""
    parts = max(1, min(int(parts), len(items)))
    return [items[start::parts] for start in range(parts)]


def split_batches(batches, searches):
    """Batches (lists of items) -> their parts, batch after batch, each batch in at most
    `searches` interleaved parts."""
    return [part for batch in batches for part in interleaved_parts(list(batch), searches)]


def map_parts(function, parts, pool=None):
    """function(part) for each part, in the parts' order (an iterator): all queued at once on
    `pool` (a ThreadPoolExecutor) when there is one and more than one part, else one by one."""
    if pool is None or len(parts) < 2:
        return map(function, parts)
    return pool.map(function, parts)


def thread_pool(searches):
    """A ThreadPoolExecutor for `searches` > 1 searches at once, else None (run inline)."""
    if searches <= 1:
        return None
    return concurrent.futures.ThreadPoolExecutor(searches, thread_name_prefix="t2t_lite_search")
