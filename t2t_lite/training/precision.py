"""The training compute precision for TrainConfig.mixed_precision ("auto" decided in cpu.py)."""
from t2t_lite import cpu


def choose(requested, flags=None, probe=cpu.probe_speedup, has_gpu=False):
    """(Keras policy name, why) for TrainConfig.mixed_precision `requested`.

    Only "auto" is decided here; an explicit policy is the user's choice and kept.
    """
    if requested != "auto":
        return requested, "set by the hparams set"
    use_bfloat16, why = cpu.bfloat16_pays(flags=flags, probe=probe, has_gpu=has_gpu)
    return ("mixed_bfloat16" if use_bfloat16 else "float32"), why
