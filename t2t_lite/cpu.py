"""The machine at hand: its CPU's feature flags, its cores, and whether bfloat16 matmuls pay on it.

bfloat16 pays only where the CPU has bf16 units (AMX, AVX512_BF16); without them TensorFlow
falls back to a slow path. So the decision asks the CPU flags first (a GPU, where TensorFlow
runs the model, instead) and then a short matmul probe. Training
(TrainConfig.mixed_precision = "auto") and decoding (--decode_precision=auto) both choose here
(choose_precision).
"""
import os
import time

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
# bfloat16 must beat float32 by this factor on the probe: casts and the float32 softmaxes and
# layer norms of a real step eat part of a matmul gain.
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


def available_cores():
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def probe_speedup(size=1024, rounds=8):
    """float32 time / bfloat16 time of a [size, size] matmul (> 1: bfloat16 is faster).

    The two dtypes alternate round by round and each keeps its best time: on a shared host a
    burst of stolen CPU time then slows a round of both, not every round of one.
    """
    import tensorflow as tf

    matmul = tf.function(lambda x: tf.reduce_sum(tf.cast(tf.matmul(x, x), tf.float32)))
    operands = {dtype: tf.cast(tf.random.uniform((size, size)), dtype)
                for dtype in (tf.float32, tf.bfloat16)}
    for operand in operands.values():
        matmul(operand).numpy()  # trace and warm up
    best = {dtype: float("inf") for dtype in operands}
    for _ in range(rounds):
        for dtype, operand in operands.items():
            start = time.perf_counter()
            matmul(operand).numpy()
            best[dtype] = min(best[dtype], time.perf_counter() - start)
    return best[tf.float32] / best[tf.bfloat16]


def bfloat16_pays(flags=None, probe=probe_speedup, gpu=False):
    """(True if bfloat16 should be used, why) for this machine (`gpu`: whether it has one)."""
    if gpu:
        units = ["GPU"]
    else:
        flags = cpu_flags() if flags is None else flags
        units = sorted(set(BF16_CPU_FLAGS) & set(flags))
        if not units:
            return False, "this CPU has no bfloat16 units (no AMX / AVX512_BF16)"
    speedup = probe()
    if speedup >= MIN_SPEEDUP:
        return True, (f"{'/'.join(units)} present and a bfloat16 matmul probe ran "
                      f"{speedup:.1f}x faster than float32")
    return False, (f"{'/'.join(units)} present but a bfloat16 matmul probe ran only "
                   f"{speedup:.1f}x float32's speed (needs {MIN_SPEEDUP}x)")


def has_gpu():
    """Whether TensorFlow sees a GPU (it then runs the model, and the probe, there)."""
    import tensorflow as tf

    return bool(tf.config.list_logical_devices("GPU"))


def choose_precision(requested, bfloat16, flags=None, probe=probe_speedup, gpu=None):
    """(precision, why) for a `requested` precision: "auto" becomes `bfloat16` (the caller's name
    for it: the Keras policy "mixed_bfloat16" in training, "bfloat16" in decoding) where bfloat16
    pays on this machine, else "float32". Any other request is the user's choice, kept with why
    None (the caller knows who made it). `gpu`: whether there is a GPU, None to look."""
    if requested != "auto":
        return requested, None
    use_bfloat16, why = bfloat16_pays(flags=flags, probe=probe,
                                      gpu=has_gpu() if gpu is None else gpu)
    return (bfloat16 if use_bfloat16 else "float32"), why
