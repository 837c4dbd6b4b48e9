"""t2t-lite-trainer: train a Transformer on a problem with an hparams set.

    t2t-lite-trainer --problem=translate_ende_wmt14 --hparams_set=base --data_dir=D --model_dir=M
    t2t-lite-trainer ... --train_minutes=20          # wall-clock budget instead of / besides steps
    t2t-lite-trainer --registry_help

    t2t-lite-trainer ... --model_dir=CHILD --warm_start_from=PARENT   # fine-tune PARENT's weights

Re-running the same command resumes from the latest checkpoint in --model_dir.
"""
from absl import flags

from t2t_lite import cli, command_line

FLAGS = flags.FLAGS
cli.define_problem_flags("Where the problem's vocabulary and TFRecords are.")
flags.DEFINE_string("model_dir", None, "Checkpoints, config and vocabulary of this run.")
flags.DEFINE_string("hparams_set", "base", "Hparams set by name (--registry_help lists "
                    "them).")
flags.DEFINE_multi_string("gin_file", [], "Your own gin file, read after the set "
                          "(repeatable); the set itself is named by --hparams_set.")
flags.DEFINE_multi_string("gin_param", [], "gin binding overriding one value (repeatable).")
# Each flag is the TrainOptions field of the same name (command_line: --gin_param is gin_params).
# The run settings below default to the set's TrainConfig field of the same name (None here).
flags.DEFINE_integer("train_steps", None, "Steps to train to (default: the set's).")
flags.DEFINE_float("train_minutes", None, "Wall-clock budget for training, in minutes, across "
                   "resumes (default: the set's; 0: none).")
flags.DEFINE_bool("generate_data", False, "Run datagen for the problem first (skips done work).")
flags.DEFINE_string("tmp_dir", None, "Scratch space for datagen downloads.")
flags.DEFINE_integer("num_gpus", None, "GPUs to mirror over (default: all visible).")
flags.DEFINE_integer("accumulate_steps", None,
                     "Gradient accumulation steps (default: reach the set's batch_tokens).")
flags.DEFINE_integer("eval_every_steps", None, "Evaluate every N steps (0: at each checkpoint; "
                     "default: the set's).")
flags.DEFINE_integer("eval_batches", None, "Dev batches for the loss (at least 1; default: the "
                     "set's, 50).")
flags.DEFINE_integer("bleu_sentences", None, "Dev sentences decoded for BLEU (0: none; default: "
                     "the set's, 200).")
flags.DEFINE_integer("eval_beam_size", None, "Beam for BLEU during training (1: one beam; 0: the "
                     "set's DecodeConfig beam; default: the set's, 1).")
flags.DEFINE_integer("early_stopping_evals", None, "Stop after N evaluations without "
                     "improvement (default: the set's, 0: never).")
flags.DEFINE_integer("log_every", None, "Steps between progress lines (default: the set's, 50).")
flags.DEFINE_bool("print_params", False, "Print the model's parameter count.")
flags.DEFINE_string("warm_start_from", None, "Start a new --model_dir from the model weights of "
                    "this parent: a model_dir (its averaged checkpoint if newest, else its "
                    "latest) or a checkpoint path (PARENT/ckpt-800), with a fresh optimizer, step "
                    "0 and this set's schedule. The parent must have this set's shapes and the "
                    "data's vocabulary (datagen --problem_param=vocab_from=PARENT). Ignored when "
                    "--model_dir already has checkpoints (it resumes).")
flags.DEFINE_list("warm_start_accept", [], "Model settings this run may set apart from the "
                  "--warm_start_from parent's, comma-separated (sinusoid_layout,"
                  "layer_norm_epsilon): a setting that keeps the shapes but changes what the "
                  "weights compute is refused otherwise. Dropout rates and max_length may always "
                  "differ.")


def main(argv):
    from t2t_lite import hparams

    # Refused before TensorFlow loads (the problems and the trainer bring it).
    hparams.hparams_file(FLAGS.hparams_set)
    hparams.check_gin_files(FLAGS.gin_file)
    from t2t_lite import problems  # noqa: F401  (the built-ins registered before gin is read)
    from t2t_lite.training.trainer import TrainOptions, train

    train(command_line.from_flags(TrainOptions, FLAGS))


def run():
    cli.run(main, required=("problem", "data_dir", "model_dir"), problem_flags=True)


if __name__ == "__main__":
    run()
