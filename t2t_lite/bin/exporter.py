"""t2t-lite-exporter: a text-in/text-out SavedModel of a trained model_dir, for TF Serving.

    t2t-lite-exporter --model_dir=M --export_dir=E [--checkpoint_path=M/ckpt-N]

Writes E/<n>/ (n = newest existing version + 1). Signatures are described in the README ("Decoding, exporting and serving").
"""
from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Trained model_dir (run.json, config.gin, checkpoints).")
flags.DEFINE_string("export_dir", None, "Folder of versioned exports; the new one is E/<n>/.")
flags.DEFINE_string("checkpoint_path", None,
                    "Checkpoint to export (default: the averaged one if newest, else the latest).")
flags.DEFINE_integer("beam_size", None, "Beam size fixed in the export (default: model_dir's).")
flags.DEFINE_float("alpha", None, "Default length penalty alpha (default: model_dir's).")
flags.DEFINE_integer("extra_length", None,
                     "Default max output length = input length + this (default: model_dir's).")


def main(argv):
    if FLAGS.beam_size is not None and FLAGS.beam_size < 1:
        raise cli.UserError(f"--beam_size must be >= 1, got {FLAGS.beam_size}")
    from absl import logging

    from t2t_lite.export import exporter

    # TensorFlow's INFO lines about renamed function inputs and temporary paths are noise here.
    logging.set_verbosity(logging.WARNING)
    version_dir = exporter.export(FLAGS.model_dir, FLAGS.export_dir, FLAGS.checkpoint_path,
                                  beam_size=FLAGS.beam_size, alpha=FLAGS.alpha,
                                  extra_length=FLAGS.extra_length)
    print(version_dir)


def run():
    cli.run(main, required=('model_dir', 'export_dir'))


if __name__ == "__main__":
    run()
