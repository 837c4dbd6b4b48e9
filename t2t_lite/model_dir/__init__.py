"""The model_dir layer: everything a trained run leaves on disk, below training and export.

    files        run.json, configs.json (the configs as data), the vocabulary copy, the lock
    checkpoints  saving on a timer, resolving (averaged > latest), restoring with one-line errors,
                 averaging the last N
    loaded       load(model_dir) -> LoadedRun: model + weights, configs, tokenizer, run.json

The trainer writes through it; the decoder, exporter, viz and demo read through it without
importing the trainer.
"""
