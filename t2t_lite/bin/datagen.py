"""t2t-lite-datagen: stream a problem's raw data into a vocabulary and TFRecord shards.

    t2t-lite-datagen --problem=translate_ende_gettext --data_dir=D [--tmp_dir=T]
    t2t-lite-datagen --problem=translate_text_files --data_dir=D \
        --problem_param=train=corpus.en,corpus.de
    t2t-lite-datagen --problem_module=mypkg.myproblems --problem=my_problem --data_dir=D
    t2t-lite-datagen --registry_help

A re-run skips finished splits and shards, so an interrupted run resumes.
"""

from absl import flags

from t2t_lite import cli

FLAGS = flags.FLAGS
cli.define_problem_flags("Where the vocabulary and TFRecord shards go.")
flags.DEFINE_string("tmp_dir", None, "Scratch space for downloads (default: <data_dir>/tmp).")
flags.DEFINE_multi_string("gin_file", [], "Gin files configuring the problem (repeatable).")
flags.DEFINE_multi_string("gin_param", [], "Gin bindings, e.g. "
                          "'translate_text_files.train=\"a.tsv\"' (repeatable).")


def main(argv):
    from t2t_lite import hparams

    hparams.check_gin_files(FLAGS.gin_file)  # before TensorFlow loads (datagen brings it)
    from t2t_lite.data import datagen
    from t2t_lite.problem_spec import ProblemSpec

    spec = ProblemSpec(FLAGS.problem, tuple(FLAGS.problem_param), tuple(FLAGS.problem_module))
    spec.import_modules()
    hparams.bind(FLAGS.gin_file, FLAGS.gin_param)  # after every problem's configurables exist
    print(datagen.run(spec.build(), FLAGS.data_dir, FLAGS.tmp_dir))


def run():
    cli.run(main, required=("problem", "data_dir"), problem_flags=True)


if __name__ == "__main__":
    run()
