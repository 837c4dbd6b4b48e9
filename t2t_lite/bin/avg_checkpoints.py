"""t2t-lite-avg-checkpoints: average the last N checkpoints (paper: 5 for base, 20 for big).

    t2t-lite-avg-checkpoints --model_dir=M [--num_last=N] [--output_dir=O]

N defaults to the run's own TrainConfig.average_last (5 in base, 20 in big, 1 in Table 3 rows).

The result goes to M/averaged (or O), which t2t-lite-decoder and t2t-lite-exporter prefer over
the newest raw checkpoint.
"""
from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A t2t-lite-trainer model_dir.")
flags.DEFINE_integer("num_last", None, "How many of the newest checkpoints to average "
                     "(default: the set's TrainConfig.average_last, as the run recorded it).")
flags.DEFINE_string("output_dir", None, "Where to write the average (default: M/averaged).")


def main(argv):
    from t2t_lite.model_dir import files
    from t2t_lite.model_dir.checkpoints import average_checkpoints

    num_last = FLAGS.num_last
    if num_last is None:
        num_last = files.load_configs(FLAGS.model_dir)[1].average_last
    path, averaged = average_checkpoints(FLAGS.model_dir, num_last, FLAGS.output_dir)
    names = ", ".join(p.rsplit("/", 1)[-1] for p in averaged)
    if len(averaged) < num_last:  # not silently: the paper's recipe needs num_last
        print(f"averaged {len(averaged)} of the {num_last} checkpoints asked for: only "
              f"{len(averaged)} in {FLAGS.model_dir} ({names}) into {path}")
    else:
        print(f"averaged {len(averaged)} checkpoints ({names}) into {path}")


def run():
    cli.run(main, required=("model_dir",))


if __name__ == "__main__":
    run()
