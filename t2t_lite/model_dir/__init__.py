"""The model_dir layer: everything a trained run leaves on disk, below training and export.

    files              run.json, configs.json (the configs as data), the vocabulary copy, the lock
    checkpoint_saver   the trainer's saver: on a timer or step count, keeping the newest N
    checkpoint_reader  listing, resolving (averaged > latest), restoring with one-line errors
    averaging          which checkpoints to average (the last N, or by dev history), their mean
    dev_history        the run's dev evaluations (dev_evaluations.jsonl), the best, the window
    limits             configs against sane bounds and the checkpoint's own shapes, before building
    loaded             load(model_dir) -> LoadedRun: model + weights, configs, tokenizer, run.json
    outputs            where tools may write beside checkpoints: never over ones they did not make

The trainer writes through it; the decoder, exporter, viz and demo read through it without
importing the trainer.
"""
