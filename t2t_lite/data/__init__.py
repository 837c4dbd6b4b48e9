"""Data: Problem base classes, vocabularies, sharded datagen and the bucketed tf.data pipeline."""
