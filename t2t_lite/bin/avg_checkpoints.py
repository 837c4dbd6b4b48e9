"""t2t-lite-avg-checkpoints: average the last N checkpoints (paper: 5 for base, 20 for big).

    t2t-lite-avg-checkpoints --model_dir=M [--num_last=N] [--window=last|dev] [--output_dir=O]

N defaults to the run's own TrainConfig.average_last (5 in base, 20 in big, 1 in Table 3 rows),
the window to its TrainConfig.average_window: "last" (the paper's sets) averages the newest N;
"dev" (small_cpu) does the same unless the run's dev evaluations say it stopped improving before
them, and then averages the evaluated checkpoints at the best dev score (up to N).

The result goes to M/averaged (or O), which t2t-lite-decoder and t2t-lite-exporter prefer over
the newest raw checkpoint. O may not be M itself, M/best, another model_dir or a folder holding
checkpoints other than earlier averages: the average would delete them (refused in one line).
"""
from absl import flags

from t2t_lite import cli
from t2t_lite.config import AVERAGE_WINDOWS

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A t2t-lite-trainer model_dir.")
flags.DEFINE_integer("num_last", None, "How many of the newest checkpoints to average "
                     "(default: the set's TrainConfig.average_last, as the run recorded it).")
flags.DEFINE_enum("window", None, AVERAGE_WINDOWS, "Which checkpoints: the newest N, or by "
                  "the dev evaluations (default: the set's TrainConfig.average_window).")
flags.DEFINE_string("output_dir", None, "Where to write the average (default: M/averaged).")


def main(argv):
    import os

    from t2t_lite.model_dir import files, outputs

    # Before TensorFlow loads and anything is read: never over checkpoints it did not make.
    outputs.check_average_output(FLAGS.output_dir or os.path.join(FLAGS.model_dir,
                                                                  outputs.AVERAGED),
                                 FLAGS.model_dir)
    files.check_model_dir(FLAGS.model_dir)  # before TensorFlow loads too
    from t2t_lite.model_dir.averaging import average

    print(average(FLAGS.model_dir, FLAGS.num_last, FLAGS.window, FLAGS.output_dir).message)


def run():
    cli.run(main, required=("model_dir",))


if __name__ == "__main__":
    run()
