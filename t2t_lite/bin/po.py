"""t2t-lite-po: translate the untranslated entries of a gettext catalog (PO or POT).

    t2t-lite-po --export_dir=E --input=x.po --output=y.po
    t2t-lite-po --model_dir=M --input=x.pot --output=de.po [--target_language=de]

Entries without a translation get one, marked fuzzy for a human to review (--no_fuzzy: not);
plural entries get every msgstr[n] of the target language, each from the singular or the plural
msgid as the language's Plural-Forms formula says. Every entry written passes msgfmt's own checks
(c-format / python-format / python-brace-format directives, newlines, accelerators); an entry no
translation of which passes is left untranslated and counted in the summary, and msgfmt judges
the catalog before it is written. What the tool does not translate stays byte for byte; a
catalog msgfmt refuses is refused in one line. The output is replaced whole when complete; a
killed run re-run with the same command continues (its work is kept in OUTPUT.t2t-po-work/).
Check the result with `msgfmt --check --use-fuzzy -o /dev/null y.po`.
"""
import sys

from absl import flags

from t2t_lite import cli, command_line
from t2t_lite.po.run import PoOptions

FLAGS = flags.FLAGS
flags.DEFINE_string("input", None, "The catalog to translate: a .po or .pot file.")
flags.DEFINE_string("output", None, "The translated catalog to write (never the input).")
flags.DEFINE_string("model_dir", None, "Trained model_dir (run.json, configs.json, checkpoints).")
flags.DEFINE_string("export_dir", None,
                    "Exported SavedModel: a version folder or the folder of versions (newest).")
flags.DEFINE_string("checkpoint_path", None, "With --model_dir: checkpoint to load "
                    "(default: the averaged one if newest, else the latest).")
flags.DEFINE_string("target_language", None,
                    "The translations' language code (de, pt_BR, ...), for a header that lacks "
                    "it (default: the model's problem's target language, else the catalog's "
                    "Language).")
flags.DEFINE_string("protect", PoOptions.protect,
                    "What is protected in the sources: auto (by each entry's format flags as "
                    "msgfmt -c reads them: c-format and possible-c-format protect printf, "
                    "python-brace-format brace; markup and code-like text always), none, or a "
                    "comma list of printf, brace, markup, url, email, path, option, number, "
                    "identifier, placeholder.")
flags.DEFINE_bool("no_fuzzy", PoOptions.no_fuzzy,
                  "Do not mark the new translations fuzzy (they are marked for review by "
                  "default).")
flags.DEFINE_bool("translate_fuzzy", PoOptions.translate_fuzzy,
                  "Also translate the fuzzy entries again (default: they stay as they are).")
flags.DEFINE_bool("start_over", PoOptions.start_over,
                  "Translate from the start even if an interrupted run's work lies beside the "
                  "output (default: continue it).")
flags.DEFINE_integer("beam_size", None, "Beam size (default: the model's; an export's is "
                     "fixed).")
cli.define_no_repeat_ngram_flag("An export's is fixed when it is exported.")
flags.DEFINE_integer("batch_tokens", PoOptions.batch_tokens,
                     "Source tokens (with padding) per batch, as the decoder's.")
flags.DEFINE_integer("chunk_lines", PoOptions.chunk_lines,
                     "Lines translated between two records of progress; a killed run "
                     "continues after its last finished chunk.")
cli.define_decode_precision_flag("With --model_dir")
flags.DEFINE_enum("engine", PoOptions.engine, ["tensorflow", "ctranslate2"],
                  "What runs the search, as the decoder's --engine.")


def main(argv):
    from t2t_lite.errors import UserError
    from t2t_lite.po.run import translate_catalog

    for name in ("input", "output"):
        if FLAGS[name].present > 1:  # absl keeps the last: the others would be dropped unsaid
            raise UserError(f"--{name} is given {FLAGS[name].present} times; t2t-lite-po "
                            "translates one catalog into one output per run: run it once for "
                            "each catalog")
    stats = translate_catalog(command_line.from_flags(PoOptions, FLAGS))
    print(stats.summary(), file=sys.stderr)


def run():
    cli.run(main, required=("input", "output"))


if __name__ == "__main__":
    run()
