"""t2t-lite-demo: the main job on the embedded default, end to end, in one command.

    t2t-lite-demo [--run_dir=runs/ende_gettext] [--train_minutes=20]

EN->DE from this machine's gettext catalogs: datagen, train `small_cpu` under a wall-clock
budget (its schedule fitted to the steps this machine makes in it), average the last checkpoints,
export a SavedModel, translate the held-out test split with beam search through the export, and
print sacreBLEU/chrF, samples and where everything is. Re-running the same command resumes.
"""
from absl import flags

from t2t_lite import cli, command_line
from t2t_lite.demo import DEFAULT_TRAIN_MINUTES, DemoOptions, run_demo

FLAGS = flags.FLAGS
flags.DEFINE_string("run_dir", DemoOptions.run_dir, "Folder for everything this run writes.")
flags.DEFINE_string("problem", DemoOptions.problem, "Registered problem.")
flags.DEFINE_multi_string("problem_param", [], "key=value for the problem's constructor.")
flags.DEFINE_string("hparams_set", DemoOptions.hparams_set, "Hparams set by name "
                    "(t2t-lite-trainer --registry_help lists them).")
flags.DEFINE_multi_string("gin_param", [], "gin binding overriding one value (repeatable).")
flags.DEFINE_float("train_minutes", DemoOptions.train_minutes,
                   "Training wall-clock budget (total, across re-runs); 0: none. Default: "
                   f"{DEFAULT_TRAIN_MINUTES:g} minutes, or none when --train_steps is given.")
flags.DEFINE_integer("train_steps", None, "Steps to train: alone, the plan with no wall-clock "
                     "budget; with --train_minutes, at most this many (a budgeted set's plan "
                     "fits to them when they fit the budget).")
flags.DEFINE_integer("average_last", None, "Checkpoints to average (default: the set's).")
flags.DEFINE_integer("test_sentences", DemoOptions.test_sentences,
                     "Translate only the first N test sentences (0: all).")


def main(argv):
    run_demo(command_line.from_flags(DemoOptions, FLAGS))


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
