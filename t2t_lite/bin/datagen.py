"""t2t-lite-datagen: stream a problem's raw data into a vocabulary and TFRecord shards.

    t2t-lite-datagen --problem=translate_ende_gettext --data_dir=D [--tmp_dir=T]
    t2t-lite-datagen --problem=translate_text_files --data_dir=D \
        --problem_param=train=corpus.en,corpus.de
    t2t-lite-datagen --problem_module=mypkg.myproblems --problem=my_problem --data_dir=D
    t2t-lite-datagen --registry_help

A re-run skips finished splits and shards, so an interrupted run resumes.
"""

from absl import app, flags

from t2t_lite import cli, registry
from t2t_lite.data import datagen
from t2t_lite.errors import UserError

FLAGS = flags.FLAGS
flags.DEFINE_string("problem", None, "Registered problem name (see --registry_help).")
flags.DEFINE_string("data_dir", None, "Where the vocabulary and TFRecord shards go.")
flags.DEFINE_string("tmp_dir", None, "Scratch space for downloads (default: <data_dir>/tmp).")
flags.DEFINE_bool("registry_help", False, "List problems and hparams sets, then exit.")
flags.DEFINE_multi_string("problem_module", [], "Your module registering problems: a dotted "
                          "name or a path to a .py file (repeatable).")
flags.DEFINE_multi_string("problem_param", [], "key=value for the problem's constructor, "
                          "e.g. target_lang=es (repeatable).")
flags.DEFINE_multi_string("gin_file", [], "Gin files configuring the problem (repeatable).")
flags.DEFINE_multi_string("gin_param", [], "Gin bindings, e.g. "
                          "'translate_text_files.train=\"a.tsv\"' (repeatable).")


def main(argv):
    if len(argv) > 1:
        raise app.UsageError(f"unexpected arguments: {' '.join(argv[1:])}")
    if FLAGS.registry_help:
        for module in FLAGS.problem_module:
            registry.import_problem_module(module)
        print(registry.registry_help())
        return
    if not FLAGS.problem or not FLAGS.data_dir:
        raise UserError("--problem and --data_dir are required (see --registry_help)")
    print(datagen.run(FLAGS.problem, FLAGS.data_dir, FLAGS.tmp_dir,
                      problem_modules=FLAGS.problem_module, problem_params=FLAGS.problem_param,
                      gin_files=FLAGS.gin_file, gin_params=FLAGS.gin_param))


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
