"""Choosing the compute precision for the machine at hand (TrainConfig.mixed_precision = "auto").

bfloat16 pays only where the CPU has bf16 units (AMX, AVX512_BF16): there oneDNN runs matmuls
2-3x faster than float32. Without them TensorFlow falls back to a slow Eigen path
("oneDNN supports DT_BFLOAT16 only on platforms with AVX-512"), about 30 s a step for `small`.
So "auto" asks the CPU flags first and then a short matmul probe: bfloat16 only when it is
measured faster.
"""
import time

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
# bfloat16 must beat float32 by this factor on the probe: casts and float32 softmax / layer norms
# eat part of a matmul gain in a real step.
MIN_SPEEDUP = 1.3


def cpu_flags(path="/proc/cpuinfo"):
    """The CPU's feature flags (empty where /proc/cpuinfo is missing, e.g. macOS)."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def matmul_seconds(dtype, size=1024, repeats=3):
    """Best time of a [size, size] x [size, size] matmul in `dtype` on the default device."""
    import tensorflow as tf

    a = tf.random.uniform((size, size), dtype=tf.float32)
    a = tf.cast(a, dtype)
    matmul = tf.function(lambda x: tf.reduce_sum(tf.cast(tf.matmul(x, x), tf.float32)))
    matmul(a).numpy()  # trace and warm up
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        matmul(a).numpy()
        best = min(best, time.perf_counter() - start)
    return best


def probe_speedup():
    """float32 time / bfloat16 time of the probe matmul (> 1: bfloat16 is faster)."""
    return matmul_seconds("float32") / matmul_seconds("bfloat16")


def choose(requested, flags=None, probe=probe_speedup, has_gpu=False):
    """(Keras policy name, why) for TrainConfig.mixed_precision `requested`.

    Only "auto" is decided here; an explicit policy is the user's choice and kept.
    """
    if requested != "auto":
        return requested, "set by the hparams set"
    if not has_gpu:
        flags = cpu_flags() if flags is None else flags
        units = sorted(set(BF16_CPU_FLAGS) & set(flags))
        if not units:
            return "float32", "this CPU has no bfloat16 units (no AMX / AVX512_BF16)"
    else:
        units = ["GPU"]
    speedup = probe()
    if speedup >= MIN_SPEEDUP:
        return "mixed_bfloat16", (f"{'/'.join(units)} present and a bfloat16 matmul probe ran "
                                  f"{speedup:.1f}x faster than float32")
    return "float32", (f"{'/'.join(units)} present but a bfloat16 matmul probe ran only "
                       f"{speedup:.1f}x float32's speed (needs {MIN_SPEEDUP}x)")
