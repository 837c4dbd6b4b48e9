"""The Transformer: cached decoding equals the full pass, causality, padding, XLA, learning."""
import dataclasses

import keras
import numpy as np
import pytest
import tensorflow as tf

from t2t_lite import hparams
from t2t_lite.models.transformer import Transformer

VOCAB = 40


def tiny_config(**overrides):
    config = hparams.load("tiny")[0]
    return dataclasses.replace(config, **overrides)


def random_batch(seed=0, batch=3, source_len=7, target_len=6):
    rng = np.random.default_rng(seed)
    inputs = rng.integers(2, VOCAB, size=(batch, source_len)).astype("int32")
    targets = rng.integers(2, VOCAB, size=(batch, target_len)).astype("int32")
    # Ragged lengths: EOS then padding, as the data pipeline produces.
    for row, (s, t) in enumerate([(7, 6), (4, 3), (2, 5)][:batch]):
        inputs[row, s - 1], inputs[row, s:] = 1, 0
        targets[row, t - 1], targets[row, t:] = 1, 0
    return inputs, targets


def full_pass_logits(model, inputs, targets):
    return np.asarray(model({"inputs": inputs, "targets": targets}, training=False))


@pytest.mark.parametrize("overrides", [
    {"norm_position": "post"},
    {"norm_position": "pre"},
    {"position_encoding": "learned"},
    {"d_k": 4, "d_v": 12},  # Table 3 (B): d_k != d_v
])
def test_cached_step_decoding_equals_full_forward_pass(overrides):
    keras.utils.set_random_seed(1)
    model = Transformer(tiny_config(**overrides), VOCAB)
    inputs, targets = random_batch()
    expected = full_pass_logits(model, inputs, targets)
    decoder_inputs = np.pad(targets, [[0, 0], [1, 0]])[:, :-1]
    cache, static = model.init_decode_state(model.encode(inputs))
    for index in range(targets.shape[1]):
        logits, cache = model.decode_step(decoder_inputs[:, index], index, cache, static)
        assert np.abs(np.asarray(logits) - expected[:, index]).max() <= 1e-4, index
    assert cache["layer_0"]["key"].shape[2] == targets.shape[1]  # [N, H, t, k]: t grew


@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_cached_step_with_untiled_encoder_state_equals_full_pass(norm_position):
    # Beam search's configuration: `beams` consecutive rows per example share that example's
    # untiled encoder keys/values.
    keras.utils.set_random_seed(4)
    model = Transformer(tiny_config(norm_position=norm_position), VOCAB)
    inputs, targets = random_batch()
    beams = 2
    # Each example's beams decode different targets, so rows mixed up would show.
    beam_targets = np.concatenate([targets, np.roll(targets, 1, axis=1) * (targets > 0)])
    beam_targets = beam_targets.reshape(beams, -1, targets.shape[1]).transpose(1, 0, 2)
    beam_targets = beam_targets.reshape(-1, targets.shape[1])
    expected = full_pass_logits(model, np.repeat(inputs, beams, axis=0), beam_targets)
    decoder_inputs = np.pad(beam_targets, [[0, 0], [1, 0]])[:, :-1]
    cache, static = model.init_decode_state(model.encode(inputs))
    cache = {name: {part: tf.repeat(t, beams, axis=0) for part, t in layer.items()}
             for name, layer in cache.items()}
    for index in range(targets.shape[1]):
        logits, cache = model.decode_step(decoder_inputs[:, index], index, cache, static,
                                          queries_per_example=beams)
        assert np.abs(np.asarray(logits) - expected[:, index]).max() <= 1e-4, index
    assert cache["layer_0"]["key"].shape[2] == targets.shape[1]  # [N, H, t, k]: t grew


@pytest.mark.slow
def test_forward_pass_compiles_under_xla():
    # Training may compile its step (TrainConfig.jit_compile): the padded forward pass.
    keras.utils.set_random_seed(2)
    model = Transformer(tiny_config(), VOCAB)
    inputs, targets = random_batch()
    expected = full_pass_logits(model, inputs, targets)
    forward = tf.function(lambda i, t: model({"inputs": i, "targets": t}), jit_compile=True)
    np.testing.assert_allclose(np.asarray(forward(inputs, targets)), expected, atol=1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("norm_position", ["post", "pre"])
def test_changing_a_target_token_never_changes_earlier_logits(norm_position):
    keras.utils.set_random_seed(3)
    model = Transformer(tiny_config(norm_position=norm_position), VOCAB)
    inputs, targets = random_batch()
    base = full_pass_logits(model, inputs, targets)
    for t in range(targets.shape[1]):
        changed = targets.copy()
        changed[:, t] = (changed[:, t] + 7) % (VOCAB - 2) + 2
        logits = full_pass_logits(model, inputs, changed)
        # Token t feeds the decoder at position t + 1: positions <= t must not move.
        np.testing.assert_allclose(logits[:, :t + 1], base[:, :t + 1], atol=1e-5)
        if t + 1 < targets.shape[1]:
            assert np.abs(logits[:, t + 1:] - base[:, t + 1:]).max() > 1e-4


def test_padded_positions_never_change_real_outputs():
    keras.utils.set_random_seed(4)
    model = Transformer(tiny_config(), VOCAB)
    inputs = np.array([[5, 6, 7, 1, 0, 0, 0]], dtype="int32")
    targets = np.array([[8, 9, 1, 0, 0]], dtype="int32")
    base = full_pass_logits(model, inputs, targets)
    encoded = np.asarray(model.encode(inputs)["outputs"])
    # Same sentence, more padding, and garbage written into the padded slots' embeddings cannot
    # matter: compare against a longer padded batch and against a shorter unpadded one.
    longer = np.pad(inputs, [[0, 0], [0, 5]])
    np.testing.assert_allclose(full_pass_logits(model, longer, targets), base, atol=1e-5)
    shorter = inputs[:, :4]
    np.testing.assert_allclose(full_pass_logits(model, shorter, targets), base, atol=1e-5)
    np.testing.assert_allclose(np.asarray(model.encode(shorter)["outputs"]), encoded[:, :4],
                               atol=1e-5)
    # Target padding only follows real tokens; changing it leaves real positions alone.
    padded_targets = np.pad(targets[:, :3], [[0, 0], [0, 4]])
    padded_targets_garbage = padded_targets.copy()
    padded_targets_garbage[:, 3:] = 0
    np.testing.assert_allclose(full_pass_logits(model, inputs, padded_targets)[:, :3], base[:, :3],
                               atol=1e-5)


def test_embedding_matrix_is_shared_by_source_target_and_softmax():
    model = Transformer(tiny_config(), VOCAB)
    matrices = [w for w in model.trainable_weights if w.shape == (VOCAB, 32)]
    assert len(matrices) == 1
    inputs, targets = random_batch()
    with tf.GradientTape(persistent=True) as tape:
        encoded = model.encode(inputs)["outputs"]
        logits = model({"inputs": inputs, "targets": targets})
        source_only = tf.reduce_sum(encoded)
        projection_only = tf.reduce_sum(model.embedding.logits(tf.ones((1, 32))))
    assert tf.reduce_sum(tf.abs(tape.gradient(source_only, matrices[0]))) > 0
    assert tf.reduce_sum(tf.abs(tape.gradient(projection_only, matrices[0]))) > 0
    del logits


@pytest.mark.slow
def test_tiny_model_overfits_a_few_pairs_and_every_weight_learns():
    keras.utils.set_random_seed(5)
    config = tiny_config(dropout=0.0)
    model = Transformer(config, VOCAB)
    inputs, targets = random_batch(seed=7)
    optimizer = keras.optimizers.Adam(learning_rate=3e-3)
    before = [np.array(w) for w in model.trainable_weights]

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            logits = model({"inputs": inputs, "targets": targets}, training=True)
            loss = keras.losses.sparse_categorical_crossentropy(targets, logits, from_logits=True)
            weights = tf.cast(targets != 0, tf.float32)
            loss = tf.reduce_sum(loss * weights) / tf.reduce_sum(weights)
        grads = tape.gradient(loss, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights))
        return loss, grads

    loss, grads = step()
    for weight, grad in zip(model.trainable_weights, grads):
        assert grad is not None and float(tf.reduce_sum(tf.abs(grad))) > 0, weight.path
    for _ in range(250):
        loss, _ = step()
    assert float(loss) < 0.02
    for weight, old in zip(model.trainable_weights, before):
        assert not np.allclose(np.asarray(weight), old), weight.path


def test_model_only_checkpoint_restores_every_weight(tmp_path):
    keras.utils.set_random_seed(6)
    config = tiny_config()
    model = Transformer(config, VOCAB)
    path = tf.train.Checkpoint(model=model).save(str(tmp_path / "model"))
    saved = [n for n in tf.train.load_checkpoint(path).get_variable_to_shape_map()
             if n.startswith("model/")]
    assert len(saved) == len(model.weights)
    keras.utils.set_random_seed(7)
    other = Transformer(config, VOCAB)
    tf.train.Checkpoint(model=other).restore(path).assert_existing_objects_matched()
    inputs, targets = random_batch()
    np.testing.assert_array_equal(full_pass_logits(other, inputs, targets),
                                  full_pass_logits(model, inputs, targets))
