"""t2t-lite-avg-checkpoints: average the last N checkpoints (paper: 5 for base, 20 for big).

    t2t-lite-avg-checkpoints --model_dir=M --num_last=5 [--output_dir=O]

The result goes to M/averaged (or O), which t2t-lite-decoder and t2t-lite-exporter prefer over
the newest raw checkpoint.
"""
from absl import flags

from t2t_lite import cli
from t2t_lite.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "A t2t-lite-trainer model_dir.")
flags.DEFINE_integer("num_last", 5, "How many of the newest checkpoints to average.")
flags.DEFINE_string("output_dir", None, "Where to write the average (default: M/averaged).")


def main(argv):
    if len(argv) > 1:
        raise UserError(f"unexpected arguments: {' '.join(argv[1:])}")
    if not FLAGS.model_dir:
        raise UserError("--model_dir is required")
    from t2t_lite.training.checkpoints import average_checkpoints

    path, averaged = average_checkpoints(FLAGS.model_dir, FLAGS.num_last, FLAGS.output_dir)
    names = ", ".join(p.rsplit("/", 1)[-1] for p in averaged)
    if len(averaged) < FLAGS.num_last:  # not silently: the paper's recipe needs num_last
        print(f"averaged {len(averaged)} of the {FLAGS.num_last} checkpoints asked for: only "
              f"{len(averaged)} in {FLAGS.model_dir} ({names}) into {path}")
    else:
        print(f"averaged {len(averaged)} checkpoints ({names}) into {path}")


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
