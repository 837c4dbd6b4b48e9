"""Fine-tuning: a new model_dir started from a parent model's weights (--warm_start_from).

The parent is a model_dir (its averaged checkpoint if that is the newest, else its latest) or a
named checkpoint (`PARENT/ckpt-800`, `PARENT/averaged/ckpt-800`). Only the model's weights come
from it: the optimizer, the step count and the schedule are the child's own, from step 0.

Everything that can refuse the parent is checked before a model is built, from small files
only: the vocabulary, byte for byte against the one the child's data is encoded with (a child's
data must be made with the parent's vocabulary: datagen's `vocab_from=PARENT`), then the
variable shapes the child's set describes against those the parent's checkpoint index lists,
then every model setting that keeps the shapes but changes what the weights compute (the
parent's configs.json against the child's ModelConfig), unless --warm_start_accept names it.
A child model_dir that already has checkpoints resumes from its own and ignores the parent.
"""
import dataclasses
import filecmp
import os
from typing import Mapping, Sequence

import tensorflow as tf

from t2t_lite.config import ModelConfig
from t2t_lite.errors import UserError
from t2t_lite.inference import saved_model
from t2t_lite.model_dir import checkpoint_reader, files, limits

# The ModelConfig fields a child may set apart from its parent: they change how the weights go on
# being trained, not the function they compute. Dropout rates act in training only (fine-tuning
# with another rate is routine: the paper's big model uses 0.3 on EN-DE, 0.1 on EN-FR);
# max_length only bounds the positions embedded (sinusoids agree on every position both models
# have, and learned positions change a shape, which the shape check refuses). Every other field,
# including any added to ModelConfig later, is compared: the position layout, where the norms
# sit, their epsilon, the biases, the model class all give the same weights another meaning.
MAY_DIFFER = frozenset({"dropout", "attention_dropout", "relu_dropout", "max_length"})
COMPARED = tuple(field.name for field in dataclasses.fields(ModelConfig)
                 if field.name not in MAY_DIFFER)


@dataclasses.dataclass(frozen=True)
class WarmStart:
    """A parent checked against the child: where its weights come from, and what it was."""
    path: str  # as the user gave it
    checkpoint: str  # the checkpoint the weights are restored from
    problem: str  # the parent's run.json problem
    hparams_set: str  # the parent's run.json hparams_set
    # Settings that differ from the parent's and --warm_start_accept let through:
    # {name: (parent's value, child's value)}.
    accepted: Mapping[str, tuple] = dataclasses.field(default_factory=dict)

    def record(self):
        """What the child's run.json keeps under "warm_start"."""
        record = {"path": self.path, "checkpoint": os.path.abspath(self.checkpoint),
                  "problem": self.problem, "hparams_set": self.hparams_set}
        if self.accepted:
            record["accepted"] = {name: {"parent": parent, "child": child}
                                  for name, (parent, child) in self.accepted.items()}
        return record

    def describe(self):
        accepted = "".join(f"; accepted: {name} {parent!r} -> {child!r}"
                           for name, (parent, child) in self.accepted.items())
        return (f"warm start from {self.checkpoint} (parent: problem {self.problem}, "
                f"set {self.hparams_set}{accepted})")

    def restore(self, model):
        """Restores the parent's model weights into `model`, nothing else (UserError naming a
        missing or damaged file)."""
        checkpoint_reader.restore(tf.train.Checkpoint(model=model), self.checkpoint, partial=True)


def parent_checkpoint(spec):
    """(checkpoint path, parent model_dir) for --warm_start_from=`spec`: a model_dir, or a
    checkpoint path (one whose `.index` exists) inside a model_dir or its `averaged/` folder."""
    export = _export_kind(spec)
    if export:
        raise UserError(f"it is {export}, made for decoding and serving, not a model_dir: a "
                        f"child starts from a training checkpoint; give the model_dir it was "
                        f"exported from")
    if tf.io.gfile.exists(spec + ".index"):
        folder = os.path.dirname(os.path.normpath(spec)) or "."
        above = os.path.dirname(folder)
        if (not os.path.isfile(os.path.join(folder, files.RUN_INFO))
                and os.path.isfile(os.path.join(above, files.RUN_INFO))):
            folder = above  # PARENT/averaged/ckpt-N (or PARENT/best/...)
        return checkpoint_reader.resolve_checkpoint(folder, spec), folder
    if os.path.isdir(spec):
        return checkpoint_reader.resolve_checkpoint(spec), spec
    raise UserError(f"--warm_start_from={spec} is neither a model_dir nor a checkpoint (no "
                    f"{spec}.index)")


def _export_kind(spec):
    """How a message names `spec` when it is an export (a SavedModel, an export folder of
    versions, a SavedModel's own variables, a CTranslate2 folder) rather than a model_dir."""
    path = os.path.normpath(spec)
    if os.path.basename(path) == "saved_model.pb":
        path = os.path.dirname(path)
    if os.path.basename(os.path.dirname(path)) == "variables":  # E/1/variables/variables
        path = os.path.dirname(os.path.dirname(path))
    if not os.path.isdir(path) or os.path.isfile(os.path.join(path, files.RUN_INFO)):
        return None
    for folder in [path] + [os.path.join(path, str(v)) for v in saved_model.versions(path)]:
        if os.path.isfile(os.path.join(folder, "saved_model.pb")):
            return f"a SavedModel export ({os.path.join(folder, 'saved_model.pb')})"
    if os.path.isfile(os.path.join(path, "model.bin")):
        return f"a CTranslate2 model folder ({os.path.join(path, 'model.bin')})"
    return None


def check_accept(accept):
    """UserError unless each name --warm_start_accept gives is a compared model setting."""
    for name in accept:
        if name in MAY_DIFFER:
            raise UserError(f"--warm_start_accept={name}: {name} may differ from the parent's "
                            f"without it; it names settings from {', '.join(COMPARED)}")
        if name not in COMPARED:
            raise UserError(f"--warm_start_accept={name}: no such model setting; it names "
                            f"settings from {', '.join(COMPARED)}")


def _settings(config):
    """The compared settings of a ModelConfig, d_k and d_v as the sizes they give (0 means the
    derived size, so d_k 0 and d_k 64 at d_model 512 and 8 heads are one model)."""
    values = dataclasses.asdict(config)
    values["d_k"], values["d_v"] = config.key_dim, config.value_dim
    return {name: values[name] for name in COMPARED}


def compare_settings(parent_dir, model_config, where, accept=()):
    """{name: (parent's, child's)} of the accepted differences between the parent's configs.json
    model and `model_config`; UserError naming every difference `accept` does not cover."""
    configs = os.path.join(parent_dir, files.CONFIGS)
    if not os.path.isfile(configs):
        # A model_dir from before configs.json: its config.gin is not read here (reading it
        # rebinds gin, which holds the child's run).
        raise UserError(f"{parent_dir} has no {files.CONFIGS} to compare its model settings "
                        f"with the child's")
    parent = _settings(files.load_configs(parent_dir)[0])
    child = _settings(model_config)
    differ = {name: (parent[name], child[name]) for name in COMPARED
              if parent[name] != child[name]}
    refused = [name for name in differ if name not in accept]
    if refused:
        listed = ", ".join(f"{name} {differ[name][0]!r} against {differ[name][1]!r}"
                           for name in refused)
        raise UserError(
            f"its model ({configs}) differs from the one {where} describes in settings that "
            f"keep the shapes but change what the weights compute: {listed}; set them as the "
            f"parent's, or accept the difference with --warm_start_accept={','.join(refused)}")
    return differ


def prepare(spec, model_dir, model_config, vocab_size, problem, data_dir, where,
            accept: Sequence[str] = ()):
    """The checked WarmStart for a run into `model_dir`, or None when `model_dir` already has
    checkpoints (the run resumes from its own; the parent is not even read).

    Refuses (UserError, one line, naming the first difference) a parent whose vocabulary is not
    the data's, then one whose checkpoint does not have exactly the shapes `model_config`
    describes (`where` names the child's configuration in that message), then one whose other
    model settings differ from `model_config`'s, except those named in `accept`."""
    check_accept(accept)
    if os.path.isdir(model_dir) and checkpoint_reader.checkpoint_paths(model_dir):
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
        limits.check_model_dir(model_config, vocab_size, checkpoint, where)
        accepted = compare_settings(parent_dir, model_config, where, accept)
    except UserError as error:
        raise UserError(f"cannot warm start from {spec}: {error}") from None
    return WarmStart(path=spec, checkpoint=checkpoint, problem=info.get("problem"),
                     hparams_set=info.get("hparams_set"), accepted=accepted)
