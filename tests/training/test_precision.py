"""The training precision: TrainConfig.mixed_precision, "auto" decided by the CPU's (or a GPU's)
bfloat16 units and a matmul probe; the caller's Keras policy back after train()."""
import keras
import pytest

from t2t_lite import cpu
from t2t_lite.config import TrainConfig
from t2t_lite.errors import UserError
from t2t_lite.training import precision, trainer


def test_auto_precision_follows_the_probe():
    def never():
        raise AssertionError("no probe without bf16 units")

    cpu_only = dict(gpu=False)
    assert precision.choose("auto", flags={"avx2", "fma"}, probe=never, **cpu_only)[0] == "float32"
    assert precision.choose("auto", flags={"avx512_bf16"}, probe=lambda: 0.4,
                            **cpu_only)[0] == "float32"
    policy, why = precision.choose("auto", flags={"amx_bf16", "avx512_bf16"}, probe=lambda: 2.6,
                                   **cpu_only)
    assert policy == "mixed_bfloat16" and "2.6x" in why
    # On a GPU the CPU's flags do not matter: the probe (run there) decides.
    policy, why = precision.choose("auto", flags=set(), probe=lambda: 3.0, gpu=True)
    assert policy == "mixed_bfloat16" and why.startswith("GPU present")
    assert precision.choose("float32", probe=never) == (
        "float32", "set by the hparams set / --gin_param")
    assert precision.choose("mixed_bfloat16", flags=set(), probe=never)[0] == "mixed_bfloat16"


def test_the_matmul_probe_times_both_dtypes():
    speedup = cpu.probe_speedup(size=64, rounds=2)
    assert 0.0 < speedup < float("inf")


@pytest.mark.parametrize("ends", ["returns", "raises"])
def test_train_gives_the_caller_its_own_policy_back(monkeypatch, ends):
    def run(options, signals):
        trainer._set_precision(TrainConfig(mixed_precision="mixed_bfloat16"))
        assert keras.config.dtype_policy().name == "mixed_bfloat16"
        if ends == "raises":
            raise UserError("the run failed")
        return "result"

    monkeypatch.setattr(trainer, "_train", run)
    keras.config.set_dtype_policy("bfloat16")  # a caller's own
    try:
        if ends == "raises":
            with pytest.raises(UserError):
                trainer.train(trainer.TrainOptions(problem="p", data_dir="d", model_dir="m"))
        else:
            assert trainer.train(trainer.TrainOptions(problem="p", data_dir="d",
                                                      model_dir="m")) == "result"
        assert keras.config.dtype_policy().name == "bfloat16"
    finally:
        keras.config.set_dtype_policy("float32")
