"""A trained run, loaded once: what the decoder, exporter, viz and demo need from a model_dir."""
import dataclasses
from typing import Any, Dict, Tuple

import tensorflow as tf

from t2t_lite.config import DecodeConfig, ModelConfig, TrainConfig
from t2t_lite.errors import UserError
from t2t_lite.model_dir import checkpoint_reader, files, limits


@dataclasses.dataclass
class LoadedRun:
    """A model_dir's model with its weights restored, its configs, tokenizer and run.json."""
    model_dir: str
    info: Dict[str, Any]  # run.json: problem, hparams_set, gin_params, vocab_file, vocab_size
    configs: Tuple[ModelConfig, TrainConfig, DecodeConfig]
    tokenizer: Any  # t2t_lite.data.tokenizers.Tokenizer
    model: Any  # what t2t_lite.models.build made for ModelConfig.model
    checkpoint: str  # the path the weights came from

    @property
    def model_config(self):
        return self.configs[0]

    @property
    def decode_config(self):
        return self.configs[2]

    def metadata(self):
        """Provenance an export records (describe() / assets.extra)."""
        info = self.info
        return {"problem": info.get("problem"), "hparams_set": info.get("hparams_set"),
                "gin_params": info.get("gin_params", []), "vocab_file": info.get("vocab_file"),
                "vocab_size": int(self.model.vocab_size), "checkpoint": self.checkpoint,
                "model_config": dataclasses.asdict(self.model_config)}


def load(model_dir, checkpoint_path=None):
    """Loads a model_dir: run.json read once, configs from configs.json (data, never gin), the
    vocabulary copy, and the checkpoint (an explicit path, else the averaged one if newest, else
    the latest; see checkpoint_reader.resolve_checkpoint)."""
    from t2t_lite import models
    from t2t_lite.data import tokenizers

    info = files.read_run_info(model_dir)
    configs = files.load_configs(model_dir)
    path = checkpoint_reader.resolve_checkpoint(model_dir, checkpoint_path)
    # Before anything is allocated: the configs must describe the checkpoint's own weights.
    limits.check_model_dir(configs[0], info["vocab_size"], path, files.configs_where(model_dir),
                          decode_config=configs[2])
    tokenizer = tokenizers.load_tokenizer(files.vocab_path(model_dir, info))
    if tokenizer.vocab_size != info["vocab_size"]:
        raise UserError(f"{files.vocab_path(model_dir, info)} holds {tokenizer.vocab_size} "
                        f"tokens but {model_dir}'s run.json says vocab_size "
                        f"{info['vocab_size']}")
    model = models.build(configs[0], info["vocab_size"])
    checkpoint_reader.restore(tf.train.Checkpoint(model=model), path, partial=True)
    return LoadedRun(model_dir=model_dir, info=info, configs=configs, tokenizer=tokenizer,
                     model=model, checkpoint=path)
