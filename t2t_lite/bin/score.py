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

from t2t_lite import cli, command_line
from t2t_lite.file_scoring import ScoreOptions

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
flags.DEFINE_integer("batch_tokens", ScoreOptions.batch_tokens,
                     "Tokens (the longer side, with padding) per batch.")
flags.DEFINE_integer("chunk_lines", ScoreOptions.chunk_lines,
                     "Pairs read, sorted by length and scored together.")
flags.DEFINE_bool("pad_shorter", ScoreOptions.pad_shorter,
                  "With --source_file and --target_file of different line counts: score the "
                  "shorter file's missing lines as empty (counted), instead of refusing the "
                  "files as not parallel.")
flags.DEFINE_bool("start_over", ScoreOptions.start_over,
                  "With --output_file: score from the start even if a progress record of an "
                  "interrupted run lies beside it.")


def main(argv):
    from t2t_lite.file_scoring import score_file

    stats = score_file(command_line.from_flags(ScoreOptions, FLAGS))
    print(stats.summary(), file=sys.stderr)


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
