"""t2t-lite-table3: the paper's Table 3 (variations on the Transformer) as one resumable command.

    t2t-lite-table3 --problem=translate_ende_wmt14 --data_dir=D --out_dir=O [--rows=base,A,C_layers2]
        [--scale=cpu|paper] [--train_steps=N | --train_minutes=M]
    t2t-lite-table3 --print_mapping            # how --scale=cpu maps each row

Trains each selected row (hparams set table3/<row>) in O/<row>/model, evaluates its last
checkpoint (dev perplexity, dev BLEU with beam 4, alpha 0.6, no averaging) and writes
O/table3.md, .csv, .json and .png beside the paper's numbers. Re-running the same command skips
finished rows and resumes an interrupted one.
"""
from absl import flags

from t2t_lite import cli, command_line

FLAGS = flags.FLAGS
cli.define_problem_flags("Where the problem's vocabulary and TFRecords are (t2t-lite-datagen).")
flags.DEFINE_string("out_dir", None, "Folder of the table: one model_dir per row, the results.")
flags.DEFINE_string("rows", "all", "Comma-separated rows: the names of the table3/ sets without "
                    "that prefix (base, A_heads1_dk512, ...; --print_mapping lists them), group "
                    "letters A-E, or all.")
flags.DEFINE_enum("scale", None, ["cpu", "paper"], "cpu: every row mapped to a size a 2-core CPU "
                  "trains in minutes (see --print_mapping); paper: the sets as they are (GPUs). "
                  "Default: the out_dir's table's, else cpu.")
flags.DEFINE_integer("train_steps", None, "Steps every row trains (default: the out_dir's; a new "
                     "table: the sets' own at --scale=paper).")
flags.DEFINE_float("train_minutes", None, "Minutes base trains; the steps it reaches become "
                   "every row's step budget (default at --scale=cpu: 10).")
flags.DEFINE_multi_string("gin_param", [], "gin binding applied to every row after its set and "
                          "the scale's mapping (repeatable).")
flags.DEFINE_integer("dev_sentences", 0, "Decode only the first N dev sentences for BLEU (0: all; "
                     "perplexity always covers the whole dev split).")
flags.DEFINE_bool("print_mapping", False, "Print the --scale=cpu mapping of every row and exit.")


def main(argv):
    if FLAGS.print_mapping:
        from t2t_lite.table3.mapping import mapping_markdown

        print(mapping_markdown())
        return
    missing = [f"--{name}" for name in ("problem", "data_dir", "out_dir") if not FLAGS[name].value]
    if missing:
        raise cli.UserError(f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} "
                            "required (see --helpshort)")
    from t2t_lite.table3.run import TableOptions, run_table

    run_table(command_line.from_flags(TableOptions, FLAGS))


def run():
    cli.run(main, problem_flags=True)


if __name__ == "__main__":
    run()
