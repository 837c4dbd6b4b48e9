"""t2t-lite-avg-checkpoints: average the last N checkpoints (paper: 5 for base, 20 for big).

    t2t-lite-avg-checkpoints --model_dir=M [--num_last=N] [--window=last|dev] [--output_dir=O]

N defaults to the run's own TrainConfig.average_last (5 in base, 20 in big, 1 in Table 3 rows),
the window to its TrainConfig.average_window: "last" (the paper's sets) averages the newest N;
"dev" (small_cpu) does the same unless the run's dev evaluations say it stopped improving before
them, and then averages the evaluated checkpoints at the best dev score (up to N).

The result goes to M/averaged (or O), which t2t-lite-decoder and t2t-lite-exporter prefer over
the newest raw checkpoint.
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
    from t2t_lite.model_dir import files
    from t2t_lite.model_dir.averaging import average_checkpoints, checkpoints_to_average

    train_config = files.load_configs(FLAGS.model_dir)[1]
    num_last = train_config.average_last if FLAGS.num_last is None else FLAGS.num_last
    window = FLAGS.window or train_config.average_window
    chosen, reason = checkpoints_to_average(FLAGS.model_dir, num_last, window)
    path, averaged = average_checkpoints(FLAGS.model_dir, num_last, FLAGS.output_dir,
                                         paths=chosen)
    names = ", ".join(p.rsplit("/", 1)[-1] for p in averaged)
    if window == "last" and len(averaged) < num_last:  # not silently: the paper's needs N
        print(f"averaged {len(averaged)} of the {num_last} checkpoints asked for: only "
              f"{len(averaged)} in {FLAGS.model_dir} ({names}) into {path}")
    else:
        print(f"averaged {len(averaged)} checkpoints ({names}; {reason}) into {path}")


def run():
    cli.run(main, required=("model_dir",))


if __name__ == "__main__":
    run()
