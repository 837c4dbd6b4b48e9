"""t2t-lite-attention-plot: pictures of a trained model's attention on one sentence (Figures 3-5).

    t2t-lite-attention-plot --model_dir=M --source="The cat sat on the mat." --output_dir=plots
    t2t-lite-attention-plot --model_dir=M --source="..." --target="..." --output_dir=plots

Writes one PNG per attention kind and layer (a heatmap per head) and plots/attention.html, a
self-contained page with the paper's line view. Without --target the model's own beam-search
translation is the target.
"""
from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Trained model_dir.")
flags.DEFINE_string("source", None, "The source sentence.")
flags.DEFINE_string("target", None, "A translation to force (default: the model's own).")
flags.DEFINE_string("output_dir", None, "Folder for the PNGs and attention.html.")
flags.DEFINE_string("checkpoint_path", None, "Checkpoint to load (default: as t2t-lite-decoder).")
flags.DEFINE_integer("beam_size", None, "Beam size (default: the model_dir's DecodeConfig).")
flags.DEFINE_float("alpha", None, "Length penalty exponent (default: the model's setting).")
flags.DEFINE_integer("extra_length", None, "Max output length = input length + this.")


def main(argv):
    # After flag parsing: TensorFlow is slow to import. attention first: without matplotlib it
    # ends the run with one line before any model is loaded; then a wrong --model_dir, before
    # TensorFlow loads.
    from t2t_lite.model_dir import files
    from t2t_lite.viz import attention  # noqa: F401

    files.check_model_dir(FLAGS.model_dir)
    from t2t_lite.viz import sentence

    print(sentence.plot_sentence(FLAGS.model_dir, FLAGS.source, FLAGS.output_dir,
                                 target=FLAGS.target, checkpoint_path=FLAGS.checkpoint_path,
                                 beam_size=FLAGS.beam_size, alpha=FLAGS.alpha,
                                 extra_length=FLAGS.extra_length))


def run():
    cli.run(main, required=('model_dir', 'source', 'output_dir'))


if __name__ == "__main__":
    run()
