"""t2t-lite-decoder: translate a file (or stdin) with a model_dir's checkpoint or an export.

    t2t-lite-decoder --model_dir=M --decode_from_file=in.en --decode_to_file=out.de
    t2t-lite-decoder --export_dir=E < in.en > out.de
    t2t-lite-decoder --model_dir=M --nbest=4 --print_scores ...   # score\\thyp\\tscore\\thyp ...
    t2t-lite-decoder --engine=ctranslate2 --export_dir=C [--compute_type=int8] ...
    t2t-lite-decoder --export_dir=E --chunk_lines=1          # interactive: a line in, a line out
    t2t-lite-decoder ... --num_shards=4 --shard_index=I --decode_to_file=out.I   # then cat out.*
    t2t-lite-decoder ... --glossary=terms.tsv [--constraints_file=C]   # terms that must appear

Writes exactly one line per input line, in input order, a chunk of lines at a time. A killed run
with --decode_to_file re-run with the same command continues after its last finished chunk.
Progress and a final summary (empty, truncated and invalid-UTF-8 line counts) go to stderr.
"""
import os
import stat
import sys

from absl import flags

from t2t_lite import cli, command_line
from t2t_lite.data import sentences
from t2t_lite.errors import UserError
from t2t_lite.file_decoding import DecodeOptions

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Trained model_dir (run.json, configs.json, checkpoints).")
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
cli.define_no_repeat_ngram_flag("An export's is fixed when it is exported.")
flags.DEFINE_integer("nbest", DecodeOptions.nbest,
                     "Hypotheses per line, tab-separated (at most the beam size).")
flags.DEFINE_bool("print_scores", DecodeOptions.print_scores,
                  "Precede each hypothesis with its score and a tab.")
flags.DEFINE_string("split_sentences", DecodeOptions.split_sentences,
                    f"Translate a long line ({sentences.MIN_WORDS} words or more) of several "
                    "sentences sentence by sentence and join the translations (1-best only): "
                    f"{sentences.SETTINGS_HELP}.")
flags.DEFINE_integer("batch_tokens", DecodeOptions.batch_tokens,
                     "Source tokens (with padding) per batch; a batch's logits and beam steps "
                     "are held to shares of it (docs/decoding.md).")
flags.DEFINE_integer("chunk_lines", DecodeOptions.chunk_lines,
                     "Lines read, sorted by length and translated together; each finished chunk "
                     "is appended to the output in input order. Memory grows with it; 1 gives a "
                     "translation per line as it arrives (interactive use, pipes).")
flags.DEFINE_string("summary_file", None,
                    "Also write the final summary (lines, seconds, lines/s, empty, truncated, "
                    "invalid UTF-8) to this file as JSON, for scripts.")
flags.DEFINE_bool("start_over", DecodeOptions.start_over,
                  "With --decode_to_file: translate from the start even if a progress record "
                  "of an interrupted run lies beside the output (default: resume after it).")
flags.DEFINE_integer("num_shards", DecodeOptions.num_shards,
                     "Split --decode_from_file into this many contiguous parts of nearly equal "
                     "line counts...")
flags.DEFINE_integer("shard_index", DecodeOptions.shard_index,
                     "...and translate part number this (0-based); the parts' outputs joined in "
                     "part order are the whole file's output.")
flags.DEFINE_integer("parallel_searches", DecodeOptions.parallel_searches,
                     "Beam searches run at once: each batch is split into that many interleaved "
                     "parts, each searched on its own CPU cores (same outputs, faster on a CPU). "
                     "0: one per CPU core (at most 4), 1 on a GPU.")
cli.define_decode_precision_flag("With --model_dir (TensorFlow; an export's precision is fixed "
                                 "when it is exported)")
flags.DEFINE_enum("engine", DecodeOptions.engine, ["tensorflow", "ctranslate2"],
                  "What runs the search: TensorFlow (a checkpoint or SavedModel), or CTranslate2 "
                  "(--export_dir: a folder from t2t-lite-exporter --format=ctranslate2; "
                  "--model_dir: converted on the fly).")
flags.DEFINE_enum("compute_type", DecodeOptions.compute_type,
                  ["default", "auto", "float32", "int8", "int8_float32", "int16", "bfloat16",
                   "int8_bfloat16"],
                  "With --engine=ctranslate2: CTranslate2's compute type (default: the folder's "
                  "own; int8 quantizes float32 weights while loading).")

flags.DEFINE_string("constraints_file", None,
                    "Target phrases per input line (line-aligned): tab-separated phrases that "
                    "must appear, `|` between a phrase's alternatives, `!` before one that must "
                    "not appear; an empty line for none (docs/terminology.md).")
flags.DEFINE_string("glossary", None,
                    "A TSV of `source term<TAB>target term[|alternative...]` (`!` before the "
                    "target: do not use); each term found as whole words in a line becomes "
                    "that line's constraint.")
flags.DEFINE_bool("glossary_ignore_case", DecodeOptions.glossary_ignore_case,
                  "Match --glossary source terms ignoring case.")
flags.DEFINE_bool("eos_until_met", DecodeOptions.eos_until_met,
                  "With --constraints_file / --glossary and --model_dir: a hypothesis may not end "
                  "before it meets every phrase while they still fit before the length limit "
                  "(fairseq's and Sockeye's rule; off by default, docs/design.md says why).")
flags.DEFINE_string("protect", DecodeOptions.protect,
                    "Keep format specifiers, markup and code-like text byte for byte: auto (on "
                    "for the gettext problems), none, or a comma list of printf, brace, markup, "
                    "url, email, path, option, number, identifier, placeholder.")
flags.DEFINE_enum("output_format", DecodeOptions.output_format, ["text", "jsonl"],
                  "text: the translation (with --nbest / --print_scores, tab-separated); jsonl: "
                  "one JSON object per line with the source, every hypothesis and its score, "
                  "and what happened to the line (docs/decoding.md).")


def main(argv):
    from t2t_lite import file_decoding

    options = command_line.from_flags(DecodeOptions, FLAGS)
    file_decoding.check_options(options)  # a bad flag is refused before TensorFlow loads
    # Checked before the first line is read: a summary that cannot be written would otherwise
    # fail the run after all its work.
    summary_path = _summary_path(FLAGS.summary_file) if FLAGS.summary_file else None
    stats = file_decoding.decode_file(options)
    print(stats.summary(), file=sys.stderr)
    if summary_path:
        from t2t_lite import atomic

        atomic.write_json(summary_path, stats.as_dict(), indent=1, sort_keys=True)


def _summary_path(path):
    """Where --summary_file's JSON goes (through a link to its target), or a UserError now when
    it could not be written there at the end: its folder missing or not writable, a directory,
    a stream (the summary replaces its file whole; it is on stderr too), or a file this run
    reads or writes (the input, the translations)."""
    from t2t_lite.inference import resume

    flag = "--summary_file"
    if resume.is_stream_path(path):
        raise UserError(f"{flag} {path} is not a regular file: the summary replaces its file "
                        "whole when the run ends (it is also printed on stderr); name a file")
    target = os.path.realpath(path)
    resume.check_output_path(target, flag)
    folder = os.path.dirname(target)
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UserError(f"{flag} {path}: folder {folder} is not writable")

    def status(name=None, descriptor=None):
        try:
            return os.stat(name) if name else os.fstat(descriptor)
        except (OSError, ValueError):
            return None

    output = FLAGS.decode_to_file
    if output and os.path.realpath(output) == target:
        raise UserError(f"{flag} {path} is also --decode_to_file; name another file")
    others = [("the input --decode_from_file",
               status(FLAGS.decode_from_file) if FLAGS.decode_from_file else None),
              ("the input on stdin", None if FLAGS.decode_from_file else status(descriptor=0)),
              ("the output --decode_to_file", status(output) if output else None),
              ("the file on stdout", None if output else status(descriptor=1)),
              ("the file on stderr", status(descriptor=2))]
    summary = status(target)
    for name, other in others:
        if (summary and other and stat.S_ISREG(other.st_mode)
                and (other.st_dev, other.st_ino) == (summary.st_dev, summary.st_ino)):
            raise UserError(f"{flag} {path} is {name}: the summary would replace it; name "
                            "another file")
    return target


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
