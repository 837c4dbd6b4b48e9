"""t2t-lite-exporter: a text-in/text-out SavedModel of a trained model_dir, for TF Serving.

    t2t-lite-exporter --model_dir=M --export_dir=E [--checkpoint_path=M/ckpt-N]

Writes E/<n>/ (n = newest existing version + 1). The signatures are described in
docs/decoding.md.

    t2t-lite-exporter --model_dir=M --export_dir=C --format=ctranslate2 [--quantization=int8]

writes a CTranslate2 model folder C (new or empty; needs `pip install 't2t_lite[ctranslate2]'`)
for `ctranslate2.Translator(C)`; see docs/ctranslate2.md.
"""
from absl import flags

from t2t_lite import cli
from t2t_lite.export import exporters

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Trained model_dir (run.json, configs.json, checkpoints).")
flags.DEFINE_string("export_dir", None, "Folder of versioned exports; the new one is E/<n>/.")
flags.DEFINE_string("checkpoint_path", None,
                    "Checkpoint to export (default: the averaged one if newest, else the latest).")
flags.DEFINE_integer("beam_size", None, "Beam size fixed in the export (default: model_dir's).")
flags.DEFINE_float("alpha", None, "Default length penalty alpha (default: model_dir's).")
flags.DEFINE_integer("extra_length", None,
                     "Default max output length = input length + this (default: model_dir's).")
cli.define_no_repeat_ngram_flag("Fixed in the export.")
flags.DEFINE_enum("format", exporters.names()[0], exporters.names(),
                  "savedmodel: a versioned text-in/text-out SavedModel under --export_dir; "
                  "ctranslate2: a CTranslate2 model folder at --export_dir.")
flags.DEFINE_enum("quantization", None,
                  ["int8", "int8_float32", "int8_float16", "int8_bfloat16", "int16", "float16",
                   "bfloat16", "float32"],
                  "--format=ctranslate2 only: weight type of the CTranslate2 model "
                  "(default float32, as trained).")
cli.define_decode_precision_flag("--format=savedmodel only")
flags.DEFINE_string("protect", "auto",
                    "--format=savedmodel only: the spans its text-in signatures keep exactly (see "
                    "docs/terminology.md): auto (every kind for the gettext problems, none for "
                    "others), none, or a comma list of printf, brace, markup, url, email, path, "
                    "option, number, identifier, placeholder.")


def main(argv):
    if FLAGS.quantization and FLAGS.format != "ctranslate2":
        raise cli.UserError("--quantization applies to --format=ctranslate2 only")
    if FLAGS.decode_precision != "float32" and FLAGS.format != "savedmodel":
        raise cli.UserError("--decode_precision applies to --format=savedmodel only (CTranslate2 "
                            "has --quantization)")
    if FLAGS.protect != "auto" and FLAGS.format != "savedmodel":
        raise cli.UserError("--protect applies to --format=savedmodel only (CTranslate2's "
                            "outputs are repaired by the decoder that runs them)")
    from absl import logging

    # TensorFlow's INFO lines about renamed function inputs and temporary paths are noise here.
    logging.set_verbosity(logging.WARNING)
    options = ({"quantization": FLAGS.quantization} if FLAGS.format == "ctranslate2" else
               {"precision": FLAGS.decode_precision, "protect": FLAGS.protect})
    print(exporters.make_exporter(FLAGS.format, **options).export(
        FLAGS.model_dir, FLAGS.export_dir, FLAGS.checkpoint_path, beam_size=FLAGS.beam_size,
        alpha=FLAGS.alpha, extra_length=FLAGS.extra_length,
        no_repeat_ngram_size=FLAGS.no_repeat_ngram_size))


def run():
    cli.run(main, required=('model_dir', 'export_dir'))


if __name__ == "__main__":
    run()
