"""t2t-lite-parseval: labelled bracket precision / recall / F1 of parses, EVALB (COLLINS.prm) style.

    t2t-lite-parseval --gold=wsj23.mrg --test=parsed.trees

--gold: the treebank's trees (.mrg files as the LDC ships them, or one tree per line); --test: one
tree per line in the same order, e.g. from t2t-lite-decoder on a parsing model. Prints results for
all sentences and for those of at most 40 words; see t2t_lite.metrics.parseval for the conventions.
"""
from absl import flags

from t2t_lite import cli
from t2t_lite.metrics import parseval

FLAGS = flags.FLAGS
flags.DEFINE_string("gold", None, "Gold trees (.mrg style or one bracketed tree per line).")
flags.DEFINE_string("test", None, "Parsed trees, one per line, in the gold's order.")


def main(argv):
    print(parseval.format_result(parseval.evaluate_files(FLAGS.gold, FLAGS.test)))


def run():
    cli.run(main, required=('gold', 'test'))


if __name__ == "__main__":
    run()
