"""t2t-lite-print-params: the parameter count of an hparams set at a vocabulary size."""
from absl import flags

from t2t_lite import cli, hparams
from t2t_lite.model_dir import limits
from t2t_lite.models import params

FLAGS = flags.FLAGS
flags.DEFINE_string("hparams_set", "base", "hparams set name (t2t-lite-trainer --registry_help lists them)")
flags.DEFINE_integer("vocab_size", 37000, "shared source/target vocabulary size")
flags.DEFINE_multi_string("gin_param", [], "gin binding overriding one value of the set")
flags.DEFINE_bool("build", False, "also build the Keras model and count its variables")


def main(argv):
    limits.check_bounds({"vocab_size": FLAGS.vocab_size}, "--vocab_size")
    model_config = hparams.load(FLAGS.hparams_set, FLAGS.gin_param)[0]
    print(params.describe(FLAGS.hparams_set, model_config, FLAGS.vocab_size))
    if FLAGS.build:
        print(f"built model: {params.built_parameter_count(model_config, FLAGS.vocab_size):,}")


def run():
    cli.run(main)


if __name__ == "__main__":
    run()
