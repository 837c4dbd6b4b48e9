"""The Keras policy a run trains in: TrainConfig.mixed_precision, "auto" decided for this machine
(cpu.choose_precision). The trainer and a Table 3 run (one choice for every row) both ask here."""
from t2t_lite import cpu


def choose(mixed_precision, flags=None, probe=cpu.probe_speedup, gpu=None):
    """(Keras policy name, why) for TrainConfig.mixed_precision; an explicit policy is kept.
    `flags`, `probe` and `gpu` stand in for this machine's (cpu.choose_precision)."""
    policy, why = cpu.choose_precision(mixed_precision, "mixed_bfloat16", flags=flags,
                                       probe=probe, gpu=gpu)
    return policy, why or "set by the hparams set / --gin_param"
