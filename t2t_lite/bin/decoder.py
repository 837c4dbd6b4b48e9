"""t2t-lite-decoder: translate a file (or stdin) with a model_dir's checkpoint or an export.

    t2t-lite-decoder --model_dir=M --decode_from_file=in.en --decode_to_file=out.de
    t2t-lite-decoder --export_dir=E < in.en > out.de
    t2t-lite-decoder --model_dir=M --nbest=4 --print_scores ...   # score\\thyp\\tscore\\thyp ...
    t2t-lite-decoder --engine=ctranslate2 --export_dir=C [--compute_type=int8] ...
    t2t-lite-decoder --export_dir=E --chunk_lines=1          # interactive: a line in, a line out
    t2t-lite-decoder ... --num_shards=4 --shard_index=I --decode_to_file=out.I   # then cat out.*

Writes exactly one line per input line, in input order, a chunk of lines at a time. A killed run
with --decode_to_file re-run with the same command continues after its last finished chunk.
Progress and a final summary (empty, truncated and invalid-UTF-8 line counts) go to stderr.
"""
import sys

from absl import flags

from t2t_lite import cli, model_source
from t2t_lite.data import sentences
from t2t_lite.inference import resume

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
                     "and at 1,024, the step budget (default: the model's setting).")
flags.DEFINE_integer("nbest", 1, "Hypotheses per line, tab-separated (at most the beam size).")
flags.DEFINE_bool("print_scores", False, "Precede each hypothesis with its score and a tab.")
flags.DEFINE_string("split_sentences", "auto",
                    f"Translate a long line ({sentences.MIN_WORDS} words or more) of several "
                    "sentences sentence by sentence and join the translations (1-best only): "
                    f"{sentences.SETTINGS_HELP}.")
flags.DEFINE_integer("batch_tokens", 4096, "Source tokens (with padding) per batch; a batch's "
                     "logits and beam steps are held to shares of it (docs/decoding.md).")
flags.DEFINE_integer("chunk_lines", 10000,
                     "Lines read, sorted by length and translated together; each finished chunk "
                     "is appended to the output in input order. Memory grows with it; 1 gives a "
                     "translation per line as it arrives (interactive use, pipes).")
flags.DEFINE_string("summary_file", None,
                    "Also write the final summary (lines, seconds, lines/s, empty, truncated, "
                    "invalid UTF-8) to this file as JSON, for scripts.")
flags.DEFINE_bool("start_over", False,
                  "With --decode_to_file: translate from the start even if a progress record "
                  "of an interrupted run lies beside the output (default: resume after it).")
flags.DEFINE_integer("num_shards", 1, "Split --decode_from_file into this many contiguous parts "
                     "of nearly equal line counts...")
flags.DEFINE_integer("shard_index", 0, "...and translate part number this (0-based); the parts' "
                     "outputs joined in part order are the whole file's output.")
flags.DEFINE_integer("parallel_searches", 0,
                     "Beam searches run at once: each batch is split into that many interleaved "
                     "parts, each searched on its own CPU cores (same outputs, faster on a CPU). "
                     "0: one per CPU core (at most 4), 1 on a GPU.")
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


def _check_flags():
    model_source.check(FLAGS.model_dir, FLAGS.export_dir, FLAGS.checkpoint_path, FLAGS.engine,
                       FLAGS.decode_precision, FLAGS.compute_type)
    for name in ("beam_size", "chunk_lines", "num_shards", "batch_tokens"):
        value = FLAGS[name].value
        if value is not None and value < 1:
            raise cli.UserError(f"--{name} must be >= 1, got {value}")
    from t2t_lite.model_dir import check

    if FLAGS.beam_size is not None:
        check.check_bounds({"beam_size": FLAGS.beam_size}, "--beam_size")
    if FLAGS.alpha is not None:
        check.check_bounds({"alpha": FLAGS.alpha}, "--alpha")


# Flags that change what is written: a resumed run must use the same values. (The number of
# parallel searches is not one: the outputs are the same, so a resume may use other cores.)
OUTPUT_FLAGS = ("engine", "compute_type", "decode_precision", "beam_size", "alpha",
                "extra_length", "nbest", "print_scores", "split_sentences", "batch_tokens",
                "chunk_lines", "num_shards", "shard_index")


def _recorded(output, name):
    """A setting as the unfinished run beside the output resolved it, or None."""
    return ((output.recorded_run or {}).get("settings") or {}).get(name)


def _resolve_precision(output):
    """--decode_precision as it will run: `auto` becomes what the run being resumed chose, or
    what the probe chooses now."""
    if FLAGS.decode_precision not in resume.MACHINE_CHOICES or FLAGS.engine != "tensorflow" \
            or not FLAGS.model_dir:
        return FLAGS.decode_precision
    recorded = None if FLAGS.start_over else _recorded(output, "decode_precision")
    if recorded in ("float32", "bfloat16"):
        return recorded
    from t2t_lite.decoding import precision

    return precision.choose(FLAGS.decode_precision)[0]


def _resolve_compute_type(output):
    """--compute_type to load with: `auto` / `default` become what the run being resumed
    resolved them to (CTranslate2 resolves them by the machine and the folder)."""
    if FLAGS.compute_type not in resume.MACHINE_CHOICES or FLAGS.start_over:
        return FLAGS.compute_type
    return _recorded(output, "compute_type") or FLAGS.compute_type


def _settings(precision, compute_type):
    settings = {name: FLAGS[name].value for name in OUTPUT_FLAGS}
    settings.update(decode_precision=precision, compute_type=compute_type)
    return settings


def main(argv):
    _check_flags()
    from t2t_lite.inference import line_input

    sentences.splitting_for(None, FLAGS.split_sentences)  # a bad language fails before any work

    source = line_input.open_input(FLAGS.decode_from_file, num_shards=FLAGS.num_shards,
                                   shard_index=FLAGS.shard_index)
    with resume.open_output(FLAGS.decode_to_file, inputs=source.described_statuses()) as output:
        searches = _parallel_searches(min(FLAGS.chunk_lines, source.total_lines
                                          if source.total_lines is not None
                                          else FLAGS.chunk_lines))
        precision, compute_type = _resolve_precision(output), _resolve_compute_type(output)
        # Before the model loads: a run that cannot resume says so at once.
        output.begin({"input": source.identity(),
                      "model": resume.model_identity(FLAGS.model_dir, FLAGS.checkpoint_path,
                                                     FLAGS.export_dir, FLAGS.engine),
                      "settings": _settings(precision, compute_type)},
                     start_over=FLAGS.start_over)
        translator = model_source.load(
            FLAGS.model_dir, FLAGS.export_dir, FLAGS.checkpoint_path, FLAGS.engine,
            beam_size=FLAGS.beam_size, precision=precision, compute_type=compute_type,
            searches=searches)
        if FLAGS.engine == "ctranslate2" and output.identity:
            # What `auto` / `default` became on this machine is what a resume must reuse.
            output.identity["settings"]["compute_type"] = translator.compute_type
        from t2t_lite.inference import batch_decode

        defaults = batch_decode.settings(translator)
        splitting = batch_decode.sentence_splitting(defaults.get("problem"),
                                                    FLAGS.split_sentences)
        stats = batch_decode.decode_stream(
            translator, source, output, FLAGS.chunk_lines,
            alpha=defaults["alpha"] if FLAGS.alpha is None else FLAGS.alpha,
            # translate_texts clamps it to the model's max_length (huge values stay in int32).
            extra_length=defaults["extra_length"] if FLAGS.extra_length is None
            else FLAGS.extra_length,
            nbest=FLAGS.nbest, print_scores=FLAGS.print_scores,
            batch_tokens=FLAGS.batch_tokens, parallel_searches=searches, splitting=splitting)
    print(stats.summary(), file=sys.stderr)
    if FLAGS.summary_file:
        from t2t_lite import atomic

        atomic.write_json(FLAGS.summary_file, stats.as_dict(), indent=1, sort_keys=True)


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
