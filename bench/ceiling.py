"""The machine's practical compute ceiling, shared by the bench scripts: FLOP/s of one large square
matmul, measured in the same run as the figure it scales (machines are shared; the ceiling moves).

No t2t_lite import: bench_peers' Model Garden worker runs it in the peer venv.
"""
import time


def matmul_flops_per_second(dtype="float32", size=2048, repeats=8, tries=2, threads=1):
    """Best of `tries` timings of `repeats` [size, size] x [size, size] matmuls in `dtype`.

    threads > 1: that many Python threads multiply at once, and the FLOP/s of all count. That is
    the ceiling of a process whose ops each run on one core (TensorFlow's intra-op threads set to
    1, as for parallel beam searches), where one matmul alone would use a single core.
    """
    import concurrent.futures

    import tensorflow as tf

    a = tf.cast(tf.random.normal([size, size]), dtype)
    b = tf.cast(tf.random.normal([size, size]), dtype)
    multiply = tf.function(lambda x, y: tf.matmul(x, y))
    multiply(a, b).numpy()

    def chain(_=None):
        for _ in range(repeats):
            c = multiply(a, b)
        c.numpy()

    best = float("inf")
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for _ in range(tries):
            start = time.perf_counter()
            list(pool.map(chain, range(threads)))
            best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 * repeats * threads / best
