"""A model's layout is the one description of its variables: the checks, the parameter count and
the FLOP count follow it, so a second registered model is checked, counted and loaded without a
change anywhere else."""
import dataclasses

import keras
import numpy as np
import tensorflow as tf

from t2t_lite import hparams, models
from t2t_lite.model_dir import files, limits, loaded
from t2t_lite.models import params
from t2t_lite.models.layout import CROSS_ATTENTION, DECODER, POSITIONS, TARGET, Role, Weight
from t2t_lite.models.transformer import Transformer
from t2t_lite.training import flops


def _paper_forward_flops(config, vocab_size, s, t):
    """The Transformer's forward FLOPs written out term by term (an independent count)."""
    d, h, k, v, f = (config.d_model, config.num_heads, config.key_dim, config.value_dim,
                     config.d_ff)
    projections = lambda q, n: 2 * (q * d * h * k + n * d * h * (k + v) + q * h * v * d)  # noqa
    scores = lambda q, n: 2 * q * n * h * (k + v)  # noqa: E731
    feed_forward = lambda n: 4 * n * d * f  # noqa: E731
    encoder = projections(s, s) + scores(s, s) + feed_forward(s)
    decoder = projections(t, t) + scores(t, t) + projections(t, s) + scores(t, s) + feed_forward(t)
    return config.num_layers * (encoder + decoder) + 2 * t * d * vocab_size


def test_the_paper_sets_flops_and_parameters_follow_from_the_layout():
    for name, count in (("base", 63_045_632), ("big", 214_171_648)):
        config = hparams.load(name)[0]
        assert params.analytic_parameter_count(config, 37000) == count
        for lengths in ((25, 25), (7, 31)):
            assert flops.forward_flops(config, 37000, *lengths) == _paper_forward_flops(
                config, 37000, *lengths)


@models.register_model("transformer_with_output_scale_test")
class ScaledTransformer(Transformer):
    """A test-only variant with one more weight: a learned scale of the logits."""

    def __init__(self, config, vocab_size, **kwargs):
        super().__init__(config, vocab_size, **kwargs)
        self.output_scale = self.add_weight(name="output_scale", shape=(), initializer="ones")

    def _logits(self, x):
        return super()._logits(x) * self.output_scale

    @staticmethod
    def layout(config, vocab_size):
        layout = Transformer.layout(config, vocab_size)
        layout.weights.append(Weight("output_scale", ()))
        return layout


def test_a_second_registered_model_is_checked_counted_and_loaded(tmp_path, model_dir):
    run_info = files.read_run_info(model_dir)  # the session's vocabulary, for a real model_dir
    size = run_info["vocab_size"]
    tiny = hparams.load("tiny", ["MAX_LENGTH = 20"])
    config = dataclasses.replace(tiny[0], model="transformer_with_output_scale_test")
    keras.utils.set_random_seed(4)
    model = models.build(config, size)
    assert isinstance(model, ScaledTransformer)
    assert params.analytic_parameter_count(config, size) == model.count_params()
    plain = dataclasses.replace(config, model="transformer")
    assert (params.analytic_parameter_count(config, size)
            == params.analytic_parameter_count(plain, size) + 1)
    assert flops.forward_flops(config, size, 5, 6) == flops.forward_flops(plain, size, 5, 6)

    model.output_scale.assign(2.5)
    directory = str(tmp_path / "model")
    files.write_run_info(directory, run_info["problem"], "tiny", ["MAX_LENGTH = 20"],
                         files.vocab_path(model_dir), size, (config, *tiny[1:]))
    path = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory, 1).save(1)
    assert limits.expected_shapes(config, size) == limits.checkpoint_shapes(path)
    assert "model/output_scale" in limits.expected_shapes(config, size)

    run = loaded.load(directory)  # checked against the layout, then built and restored
    assert isinstance(run.model, ScaledTransformer)
    assert float(run.model.output_scale.numpy()) == 2.5
    ids = np.array([[5, 6, 1]], np.int32)
    np.testing.assert_allclose(run.model({"inputs": ids, "targets": ids}).numpy(),
                               model({"inputs": ids, "targets": ids}).numpy(), rtol=1e-6)


def test_the_layout_marks_the_shared_matrix_as_the_targets_projection():
    config = hparams.load("tiny")[0]
    embedding = models.layout_of(config, 50).weights[0]
    assert (embedding.name, embedding.shape, embedding.tokens) == (
        "embedding/embeddings", (50, config.d_model), TARGET)


def test_every_weight_and_constant_of_the_transformer_has_one_role():
    """Roles (models/layout.py) are what export/ctranslate2_export.py maps, whatever the names."""
    for overrides in ({}, {"norm_position": "pre", "position_encoding": "learned",
                           "attention_bias": False}):
        config = dataclasses.replace(hparams.load("tiny")[0], **overrides)
        layout = models.layout_of(config, 50)
        roles = [w.role for w in layout.weights + layout.constants]
        assert None not in roles and len(set(roles)) == len(roles)
        assert layout.by_role()[Role(part=POSITIONS)].name == "positions/table"
        assert layout.by_role()[Role(DECODER, 0, CROSS_ATTENTION, "query_kernel")].name == (
            "decoder_layer_0/cross_attention/query_kernel")
