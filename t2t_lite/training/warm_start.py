"""Fine-tuning: a new model_dir started from a parent model's weights (--warm_start_from).

The parent is a model_dir (its averaged checkpoint if that is the newest, else its latest) or a
named checkpoint (`PARENT/ckpt-800`, `PARENT/averaged/ckpt-800`). Only the model's weights come
from it: the optimizer, the step count and the schedule are the child's own, from step 0.

Everything that can refuse the parent is checked before a model is built, from small files
only: the vocabulary, byte for byte against the one the child's data is encoded with (a child's
data must be made with the parent's vocabulary: datagen's `vocab_from=PARENT`), then the
variable shapes the child's set describes against those the parent's checkpoint index lists.
A child model_dir that already has checkpoints resumes from its own and ignores the parent.
"""
import dataclasses
import filecmp
import os

import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.model_dir import check, checkpoints, files


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """A parent checked against the child: where its weights come from, and what it was."""
    path: str  # as the user gave it
    checkpoint: str  # the checkpoint the weights are restored from
    problem: str  # the parent's run.json problem
    hparams_set: str  # the parent's run.json hparams_set

    def record(self):
        """What the child's run.json keeps under "warm_start"."""
        return {"path": self.path, "checkpoint": os.path.abspath(self.checkpoint),
                "problem": self.problem, "hparams_set": self.hparams_set}

    def describe(self):
        return (f"warm start from {self.checkpoint} (parent: problem {self.problem}, "
                f"set {self.hparams_set})")

    def restore(self, model):
        """Restores the parent's model weights into `model`, nothing else (UserError naming a
        missing or damaged file)."""
        checkpoints.restore(tf.train.Checkpoint(model=model), self.checkpoint, partial=True)


def parent_checkpoint(spec):
    """(checkpoint path, parent model_dir) for --warm_start_from=`spec`: a model_dir, or a
    checkpoint path (one whose `.index` exists) inside a model_dir or its `averaged/` folder."""
    if tf.io.gfile.exists(spec + ".index"):
        folder = os.path.dirname(os.path.normpath(spec)) or "."
        above = os.path.dirname(folder)
        if (not os.path.isfile(os.path.join(folder, files.RUN_INFO))
                and os.path.isfile(os.path.join(above, files.RUN_INFO))):
            folder = above  # PARENT/averaged/ckpt-N (or PARENT/best/...)
        return checkpoints.resolve_checkpoint(folder, spec), folder
    if os.path.isdir(spec):
        return checkpoints.resolve_checkpoint(spec), spec
    raise UserError(f"--warm_start_from={spec} is neither a model_dir nor a checkpoint (no "
                    f"{spec}.index)")


def prepare(spec, model_dir, model_config, vocab_size, problem, data_dir, where):
    """The checked WarmStart for a run into `model_dir`, or None when `model_dir` already has
    checkpoints (the run resumes from its own; the parent is not even read).

    Refuses (UserError, one line, naming the first difference) a parent whose vocabulary is not
    the data's, then one whose checkpoint does not have exactly the shapes `model_config`
    describes (`where` names the child's configuration in that message)."""
    if os.path.isdir(model_dir) and checkpoints.checkpoint_paths(model_dir):
        print(f"{model_dir} already has checkpoints: resuming from its latest; "
              f"--warm_start_from={spec} is ignored", flush=True)
        return None
    try:
        checkpoint, parent_dir = parent_checkpoint(spec)
        info = files.read_run_info(parent_dir)
        parent_vocab = files.vocab_path(parent_dir, info)
        if not os.path.isfile(parent_vocab):
            raise UserError(f"its vocabulary {parent_vocab} is missing")
        # The vocabulary first: another vocabulary usually also means another embedding shape,
        # and its remedy is datagen, not the set.
        data_vocab = problem.vocab_path(data_dir)
        if not filecmp.cmp(parent_vocab, data_vocab, shallow=False):
            if hasattr(problem, "vocab_from"):
                remedy = (f"make the child's data with the parent's vocabulary: t2t-lite-datagen "
                          f"--problem={problem.name} --problem_param=vocab_from={parent_dir} "
                          f"into a new --data_dir")
            else:
                remedy = (f"problem {problem.name} cannot take another vocabulary (it has no "
                          f"vocab_from parameter)")
            raise UserError(f"its vocabulary {parent_vocab} is not the one {data_vocab} the data "
                            f"is encoded with; {remedy}")
        check.check_model_dir(model_config, vocab_size, checkpoint, where)
    except UserError as error:
        raise UserError(f"cannot warm start from {spec}: {error}") from None
    return WarmStart(path=spec, checkpoint=checkpoint, problem=info.get("problem"),
                     hparams_set=info.get("hparams_set"))
