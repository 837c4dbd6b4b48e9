"""The machine's practical compute ceiling, shared by the bench scripts: FLOP/s of one large square
matmul, measured in the same run as the figure it scales (machines are shared; the ceiling moves).

No t2t_lite import: bench_peers' Model Garden worker runs it in the peer venv.
"""
import time


def matmul_flops_per_second(dtype="float32", size=2048, repeats=8, tries=2):
    """Best of `tries` timings of `repeats` [size, size] x [size, size] matmuls in `dtype`."""
    import tensorflow as tf

    a = tf.cast(tf.random.normal([size, size]), dtype)
    b = tf.cast(tf.random.normal([size, size]), dtype)
    multiply = tf.function(lambda x, y: tf.matmul(x, y))
    multiply(a, b).numpy()
    best = float("inf")
    for _ in range(tries):
        start = time.perf_counter()
        for _ in range(repeats):
            c = multiply(a, b)
        c.numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 * repeats / best
