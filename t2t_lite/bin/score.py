"""t2t-lite-score: log P(target | source) of given translations, with a model_dir or an export.

    t2t-lite-score --model_dir=M --source_file=in.en --target_file=out.de --output_file=scores
    t2t-lite-score --export_dir=E --pairs_file=pairs.tsv > scores      # source<TAB>target lines

Writes one line per pair, in input order: "log_prob<TAB>score", score being log_prob over the
beam search's length penalty ((5 + length) / 6)^alpha, the length counting EOS. Pairs are read a
chunk at a time and batched by length; a killed run with --output_file resumes like the decoder.
What had to be mended (missing sides, empty targets, invalid UTF-8, truncation) is counted in the
summary on stderr.
"""
import sys

from absl import flags

from t2t_lite import cli, model_source
from t2t_lite.inference import resume

FLAGS = flags.FLAGS
flags.DEFINE_string("model_dir", None, "Trained model_dir (its averaged checkpoint if newest, "
                    "else its latest; or --checkpoint_path).")
flags.DEFINE_string("export_dir", None, "Exported SavedModel (a version folder or the folder of "
                    "versions: the newest); its `score` signature does the scoring.")
flags.DEFINE_string("checkpoint_path", None, "With --model_dir: the checkpoint to load.")
flags.DEFINE_string("pairs_file", None, "source<TAB>target per line (default: stdin, unless "
                    "--source_file and --target_file are given).")
flags.DEFINE_string("source_file", None, "Sources, one per line, aligned with --target_file.")
flags.DEFINE_string("target_file", None, "Targets to score, one per line.")
flags.DEFINE_string("output_file", None, "Where the scores go (default: stdout).")
flags.DEFINE_float("alpha", None, "With --model_dir: the length penalty's alpha for the score "
                   "column (default: the model's; an export's is fixed).")
flags.DEFINE_integer("batch_tokens", 4096, "Tokens (the longer side, with padding) per batch.")
flags.DEFINE_integer("chunk_lines", 10000, "Pairs read, sorted by length and scored together.")
flags.DEFINE_bool("pad_shorter", False, "With --source_file and --target_file of different line "
                  "counts: score the shorter file's missing lines as empty (counted), instead "
                  "of refusing the files as not parallel.")
flags.DEFINE_bool("start_over", False, "With --output_file: score from the start even if a "
                  "progress record of an interrupted run lies beside it.")


def _input():
    from t2t_lite.inference import line_input

    if FLAGS.pairs_file and (FLAGS.source_file or FLAGS.target_file):
        raise cli.UserError("give --pairs_file or --source_file with --target_file, not both")
    if bool(FLAGS.source_file) != bool(FLAGS.target_file):
        raise cli.UserError("--source_file and --target_file go together")
    if FLAGS.source_file:
        return line_input.ParallelInput(FLAGS.source_file, FLAGS.target_file,
                                        pad_shorter=FLAGS.pad_shorter)
    if FLAGS.pad_shorter:
        raise cli.UserError("--pad_shorter needs --source_file and --target_file")
    return line_input.open_input(FLAGS.pairs_file, flag="--pairs_file")


def _check_flags():
    model_source.check(FLAGS.model_dir, FLAGS.export_dir, FLAGS.checkpoint_path)
    if FLAGS.export_dir and FLAGS.alpha is not None:
        raise cli.UserError("--alpha needs --model_dir (an export's is fixed)")
    if FLAGS.alpha is not None:
        from t2t_lite.model_dir import check

        check.check_bounds({"alpha": FLAGS.alpha}, "--alpha")
    for name in ("batch_tokens", "chunk_lines"):
        if FLAGS[name].value < 1:
            raise cli.UserError(f"--{name} must be >= 1, got {FLAGS[name].value}")


def _identity(source):
    from t2t_lite.inference import line_input

    model = resume.model_identity(FLAGS.model_dir, FLAGS.checkpoint_path, FLAGS.export_dir)
    return {"input": source.identity(), "model": model, "alpha": FLAGS.alpha,
            "batch_tokens": FLAGS.batch_tokens, "chunk_lines": FLAGS.chunk_lines,
            "pairs": isinstance(source, line_input.LineInput), "pad_shorter": FLAGS.pad_shorter}


def main(argv):
    _check_flags()
    source = _input()
    with resume.open_output(FLAGS.output_file, flag="--output_file",
                            inputs=source.described_statuses()) as output:
        output.begin(_identity(source), start_over=FLAGS.start_over)
        scorer = model_source.load(FLAGS.model_dir, FLAGS.export_dir, FLAGS.checkpoint_path,
                                   alpha=FLAGS.alpha)
        from t2t_lite.inference import scoring

        stats = scoring.score_stream(scorer, source, output, FLAGS.chunk_lines,
                                     batch_tokens=FLAGS.batch_tokens)
    print(stats.summary(), file=sys.stderr)


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
