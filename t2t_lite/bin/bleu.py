"""t2t-lite-bleu: sacreBLEU (BLEU, chrF) and the paper's tokenized BLEU of a translation file.

    t2t-lite-bleu --translation=out.de --reference=newstest2014.de [--tokenize=13a] [--lang=de]
"""
from absl import flags

from t2t_lite import cli
from t2t_lite.metrics import bleu, report

FLAGS = flags.FLAGS
flags.DEFINE_string("translation", None, "Detokenized system output, one sentence per line.")
flags.DEFINE_string("reference", None, "Detokenized reference, line-aligned with --translation.")
flags.DEFINE_enum("tokenize", bleu.DEFAULT_TOKENIZER, bleu.TOKENIZERS,
                  "sacreBLEU tokenizer for the detokenized BLEU.")
flags.DEFINE_string("lang", "de", "Target language for the paper's Moses-tokenized BLEU "
                    "(compounds are split for de, as in tensor2tensor's get_ende_bleu.sh).")


def main(argv):
    text, _ = report.score_files(FLAGS.translation, FLAGS.reference, tokenize=FLAGS.tokenize,
                                 lang=FLAGS.lang)
    print(text)


def run():
    cli.run(main, required=('translation', 'reference'))


if __name__ == "__main__":
    run()
