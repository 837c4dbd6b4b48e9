"""t2t-lite-decoder: translate a file (or stdin) with a model_dir's checkpoint or an export.

    t2t-lite-decoder --model_dir=M --decode_from_file=in.en --decode_to_file=out.de
    t2t-lite-decoder --export_dir=E < in.en > out.de
    t2t-lite-decoder --model_dir=M --nbest=4 --print_scores ...   # score\\thyp\\tscore\\thyp ...
    t2t-lite-decoder --engine=ctranslate2 --export_dir=C [--compute_type=int8] ...

Writes exactly one line per input line, in input order. Progress and a final summary (empty,
truncated and invalid-UTF-8 line counts) go to stderr.
"""
import os
import sys

from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Trained model_dir (checkpoint path).")
flags.DEFINE_string("export_dir", None,
                    "Exported SavedModel: a version folder or the folder of versions (newest).")
flags.DEFINE_string("checkpoint_path", None, "With --model_dir: checkpoint to load "
                    "(default: the averaged one if newest, else the latest).")
flags.DEFINE_string("decode_from_file", None, "Source sentences, one per line (default: stdin).")
flags.DEFINE_string("decode_to_file", None, "Output file (default: stdout).")
flags.DEFINE_integer("beam_size", None, "Beam size (default: the model_dir's DecodeConfig; "
                     "an export's beam size is fixed).")
flags.DEFINE_float("alpha", None, "Length penalty exponent (default: the model's setting).")
flags.DEFINE_integer("extra_length", None,
                     "Max output length = input length + this, capped at the model's max_length "
                     "(default: the model's setting).")
flags.DEFINE_integer("nbest", 1, "Hypotheses per line, tab-separated (at most the beam size).")
flags.DEFINE_bool("print_scores", False, "Precede each hypothesis with its score and a tab.")
flags.DEFINE_integer("batch_tokens", 4096, "Source tokens (with padding) per batch.")
flags.DEFINE_integer("parallel_searches", 0,
                     "Beam searches run at once: each batch is split into that many interleaved "
                     "parts, each searched on its own CPU cores (same outputs; 1.3-1.4x faster on "
                     "a 2-core CPU). 0: one per CPU core (at most 4), 1 on a GPU.")
cli.define_decode_precision_flag("With --model_dir (TensorFlow; an export's precision is fixed "
                                 "when it is exported)")
flags.DEFINE_enum("engine", "tensorflow", ["tensorflow", "ctranslate2"],
                  "What runs the search: TensorFlow (a checkpoint or SavedModel), or CTranslate2 "
                  "(--export_dir: a folder from t2t-lite-exporter --format=ctranslate2; "
                  "--model_dir: converted on the fly).")
flags.DEFINE_enum("compute_type", "default", ["default", "auto", "float32", "int8",
                                              "int8_float32", "int16", "bfloat16", "int8_bfloat16"],
                  "With --engine=ctranslate2: CTranslate2's compute type (default: the folder's "
                  "own; int8 quantizes float32 weights while loading).")


def _parallel_searches(num_lines):
    """Resolves --parallel_searches and sets TensorFlow's threads for it (before any op runs).
    Never more searches than lines: a single line keeps every core for its one search."""
    from t2t_lite.inference import parallel_search

    on_gpu = FLAGS.engine == "tensorflow" and parallel_search.tensorflow_on_gpu()
    searches = min(parallel_search.resolve(FLAGS.parallel_searches, on_gpu), max(num_lines, 1))
    parallel_search.configure_tensorflow(searches)
    return searches


def _translator(searches):
    if bool(FLAGS.model_dir) == bool(FLAGS.export_dir):
        raise cli.UserError("give exactly one of --model_dir and --export_dir")
    if FLAGS.beam_size is not None and FLAGS.beam_size < 1:
        raise cli.UserError(f"--beam_size must be >= 1, got {FLAGS.beam_size}")
    if FLAGS.engine == "ctranslate2":
        if FLAGS.decode_precision != "float32":
            raise cli.UserError("--decode_precision is TensorFlow's; CTranslate2 has "
                                "--compute_type")
        return _ctranslate2_translator(searches)
    if FLAGS.compute_type != "default":
        raise cli.UserError("--compute_type applies to --engine=ctranslate2 only")
    if FLAGS.model_dir:
        from t2t_lite.inference import translator
        return translator.from_model_dir(FLAGS.model_dir, FLAGS.checkpoint_path,
                                         beam_size=FLAGS.beam_size,
                                         precision=FLAGS.decode_precision)
    if FLAGS.decode_precision != "float32":
        raise cli.UserError("--decode_precision needs --model_dir: an export's precision is "
                            "fixed (t2t-lite-exporter --decode_precision)")
    if FLAGS.checkpoint_path:
        raise cli.UserError("--checkpoint_path needs --model_dir (an export holds one checkpoint)")
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  registers the tokenizer ops the SavedModel uses

    from t2t_lite.export import exporter
    from t2t_lite.inference import batch_decode
    version_dir = exporter.latest_version_dir(FLAGS.export_dir)
    translator = tf.saved_model.load(version_dir)
    beam_size = batch_decode.settings(translator)["beam_size"]
    if FLAGS.beam_size is not None and FLAGS.beam_size != beam_size:
        raise cli.UserError(f"{version_dir} was exported with beam size {beam_size}; re-export "
                            f"with --beam_size={FLAGS.beam_size} or decode with --model_dir")
    return translator


def _ctranslate2_translator(searches):
    from t2t_lite.export import ctranslate2_export
    from t2t_lite.inference import ctranslate2_engine

    folder, keep_alive = FLAGS.export_dir, None
    if FLAGS.model_dir:
        folder, keep_alive = ctranslate2_export.export_temporary(FLAGS.model_dir,
                                                                 FLAGS.checkpoint_path)
    elif FLAGS.checkpoint_path:
        raise cli.UserError("--checkpoint_path needs --model_dir (an export holds one checkpoint)")
    return ctranslate2_engine.CTranslate2Translator(
        folder, compute_type=FLAGS.compute_type, beam_size=FLAGS.beam_size, keep_alive=keep_alive,
        searches=searches)


def _read_input():
    path = FLAGS.decode_from_file
    if not path:
        return sys.stdin.buffer.read()
    if not os.path.isfile(path):
        raise cli.UserError(f"--decode_from_file {path} does not exist")
    with open(path, "rb") as f:
        return f.read()


def _write_output(lines):
    text = "".join(line + "\n" for line in lines)
    path = FLAGS.decode_to_file
    if not path:
        sys.stdout.buffer.write(text.encode("utf-8"))
        sys.stdout.flush()
        return
    tmp = path + ".incomplete"
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, path)
    except OSError as error:  # e.g. a full disk, or a folder that appeared since the check
        if os.path.isfile(tmp):
            os.remove(tmp)
        raise cli.UserError(f"--decode_to_file {path}: cannot write ({error.strerror})") from None


def main(argv):
    out_dir = os.path.dirname(os.path.abspath(FLAGS.decode_to_file or "."))
    if FLAGS.decode_to_file and not os.path.isdir(out_dir):
        raise cli.UserError(f"--decode_to_file: folder {out_dir} does not exist")
    # Checked before decoding, which may take hours.
    if FLAGS.decode_to_file and os.path.isdir(FLAGS.decode_to_file):
        raise cli.UserError(f"--decode_to_file {FLAGS.decode_to_file} is a directory; name a file")
    from t2t_lite.inference import batch_decode  # after the flag checks: TensorFlow takes seconds

    raw_lines = batch_decode.split_lines(_read_input())
    searches = _parallel_searches(len(raw_lines))
    translator = _translator(searches)
    defaults = batch_decode.settings(translator)
    outputs, stats = batch_decode.decode_lines(
        translator, raw_lines,
        alpha=defaults["alpha"] if FLAGS.alpha is None else FLAGS.alpha,
        # translate_texts clamps it to the model's max_length (huge values stay inside int32).
        extra_length=defaults["extra_length"] if FLAGS.extra_length is None
        else FLAGS.extra_length,
        nbest=FLAGS.nbest, print_scores=FLAGS.print_scores, batch_tokens=FLAGS.batch_tokens,
        progress=batch_decode.Progress(), parallel_searches=searches)
    _write_output(outputs)
    print(stats.summary(), file=sys.stderr)


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
