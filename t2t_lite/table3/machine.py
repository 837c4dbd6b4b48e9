"""The machine a table (and each of its rows) ran on, as the record and the markdown report it."""
import platform
import sys

from t2t_lite import cpu

def machine():
    """This machine, as the table reports it: CPU model, cores, the flags that decide speed and
    precision, GPUs (names only when TensorFlow is loaded), Python and TensorFlow versions."""
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), "")
    except OSError:
        pass
    flags = cpu.cpu_flags()
    gpus = []
    if "tensorflow" in sys.modules:
        import tensorflow as tf

        gpus = [d.name for d in tf.config.list_physical_devices("GPU")]
        tf_version = tf.__version__
    else:
        tf_version = None
    return {"cpu": model or platform.processor() or platform.machine(),
            "cores": cpu.available_cores(),
            "cpu_flags": sorted(f for f in flags if f in ("avx2", "avx512f", "avx512_bf16",
                                                           "amx_bf16", "amx_tile")),
            "gpus": gpus, "python": platform.python_version(), "tensorflow": tf_version}


def describe_machine(m):
    text = f"{m.get('cpu') or 'unknown CPU'}, {m.get('cores')} cores"
    flags = m.get("cpu_flags") or []
    text += f" ({' '.join(flags)})" if flags else " (no AVX2/AVX-512/AMX flags)"
    if m.get("gpus"):
        text += f", {len(m['gpus'])} GPU{'s' if len(m['gpus']) > 1 else ''}"
    return text
