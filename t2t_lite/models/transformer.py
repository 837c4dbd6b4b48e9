"""The Transformer of "Attention Is All You Need" (section 3), as a Keras 3 model.

Inputs and targets are int32 id matrices, 0 = pad, each sequence ending with EOS = 1. The decoder
input is the target shifted right with 0 (pad) as the start symbol.

Decoding is split for a model-agnostic search: `encode` once, `init_decode_state` once (the
self-attention caches plus the cross-attention keys/values, which never change), then
`decode_step(ids, index, cache, static)` per position.
"""
import keras
from keras import ops

from t2t_lite.config import ModelConfig
from t2t_lite.layers.attention import causal_bias, padding_bias
from t2t_lite.layers.embedding import PositionEncoding, SharedEmbedding
from t2t_lite.layers.packing import Packing
from t2t_lite.layers.transformer_layers import DecoderLayer, EncoderLayer, LayerNorm
from t2t_lite.models.registry import register_model


def shift_right(targets):
    """[B, T] -> [B, T] with 0 (the start symbol) prepended and the last position dropped."""
    return ops.pad(targets, [[0, 0], [1, 0]])[:, :-1]


@register_model("transformer")
class Transformer(keras.Model):
    """The paper's encoder-decoder (Figure 1), as a Keras model on id matrices.

    Args:
      config: the ModelConfig (N, d_model, d_ff, h, d_k, d_v, P_drop, norm position, positions).
      vocab_size: ids in the shared source/target vocabulary; one matrix serves both embeddings
        and the pre-softmax projection (section 3.4).

    Called on {"inputs": [B, S], "targets": [B, T]} (int32, 0-padded, each ending with EOS), it
    returns logits [B, T, vocab_size] for teacher-forced training. Decoding goes through
    `encode`, `init_decode_state` and `decode_step` (see the module docstring).
    """

    def __init__(self, config: ModelConfig, vocab_size: int, **kwargs):
        super().__init__(**kwargs)
        self.config = config
        self.vocab_size = vocab_size
        self.embedding = SharedEmbedding(vocab_size, config.d_model, name="shared_embedding")
        self.positions = PositionEncoding(config.max_length, config.d_model,
                                          config.position_encoding, config.sinusoid_layout,
                                          name="positions")
        self.encoder_input_dropout = keras.layers.Dropout(config.dropout)
        self.decoder_input_dropout = keras.layers.Dropout(config.dropout)
        self.encoder_layers = [EncoderLayer(config, name=f"encoder_layer_{i}")
                               for i in range(config.num_layers)]
        self.decoder_layers = [DecoderLayer(config, name=f"decoder_layer_{i}")
                               for i in range(config.num_layers)]
        # tf.train.Checkpoint and SavedModel track attributes, not Python lists: give each layer
        # its own attribute so every variable is saved under a readable path.
        for layer in self.encoder_layers + self.decoder_layers:
            setattr(self, layer.name, layer)
        pre = config.norm_position == "pre"
        eps = config.layer_norm_epsilon
        self.encoder_final_norm = (LayerNorm(epsilon=eps, name="encoder_final_norm")
                                   if pre else None)
        self.decoder_final_norm = (LayerNorm(epsilon=eps, name="decoder_final_norm")
                                   if pre else None)
        self._build_all()

    def _build_all(self):
        """Creates every variable up front so checkpoints restore before the first call."""
        hidden = (None, None, self.config.d_model)
        self.embedding.build()
        self.positions.build()
        for layer in self.encoder_layers + self.decoder_layers:
            layer.build(hidden)
        for norm in (self.encoder_final_norm, self.decoder_final_norm):
            if norm is not None:
                norm.build(hidden)
        self.built = True

    # ---- encoder -------------------------------------------------------------------------------
    def _embed(self, ids, dropout, training, offset=0):
        x = self.positions(self.embedding(ids), offset=offset)
        return dropout(x, training=training)

    def encode(self, inputs, training=False, return_weights=False):
        """inputs [B, S] -> {"outputs": [B, S, d], "padding_mask": bool [B, S]}."""
        inputs = ops.cast(inputs, "int32")
        padding_mask = ops.not_equal(inputs, 0)
        bias = padding_bias(padding_mask)
        x = self._embed(inputs, self.encoder_input_dropout, training)
        weights = []
        for layer in self.encoder_layers:
            x, w = layer(x, bias, training=training, return_weights=True)
            weights.append(w)
        if self.encoder_final_norm is not None:
            x = self.encoder_final_norm(x)
        encoded = {"outputs": x, "padding_mask": padding_mask}
        return (encoded, weights) if return_weights else encoded

    # ---- teacher-forced decoder ----------------------------------------------------------------
    def decode(self, targets, encoded, training=False, return_weights=False):
        """targets [B, T] -> logits [B, T, vocab] (float32), position t predicting targets[:, t]."""
        targets = ops.cast(targets, "int32")
        x = self._embed(shift_right(targets), self.decoder_input_dropout, training)
        self_bias = causal_bias(ops.shape(targets)[1])
        cross_bias = padding_bias(encoded["padding_mask"])
        self_weights, cross_weights = [], []
        for layer in self.decoder_layers:
            x, sw, cw = layer(x, encoded["outputs"], self_bias, cross_bias, training=training,
                              return_weights=True)
            self_weights.append(sw)
            cross_weights.append(cw)
        logits = self._logits(x)
        return (logits, self_weights, cross_weights) if return_weights else logits

    def _logits(self, x):
        return ops.cast(self.embedding.logits(self._decoder_output(x)), "float32")

    def _decoder_output(self, x):
        """The last decoder layer's output -> what the pre-softmax projection sees."""
        return x if self.decoder_final_norm is None else self.decoder_final_norm(x)

    def call(self, features, training=False):
        encoded = self.encode(features["inputs"], training=training)
        return self.decode(features["targets"], encoded, training=training)

    # ---- training on real tokens only ----------------------------------------------------------
    def output_matrix(self, dtype):
        """The pre-softmax projection [vocab, d_model] (the shared embedding), in `dtype`."""
        return ops.cast(self.embedding.embeddings, dtype)

    def packed_hidden(self, features, training=False):
        """The decoder's final hidden rows of the real target tokens only, for training:
        (hidden [n, d_model], targets [n]); logits = hidden @ output_matrix^T. Everything
        token-wise (projections, feed-forward, norms, logits) runs on the real rows instead of
        the padded B*T; only attention's scores and context see the padded layout
        (layers/packing.py). Not for XLA: the row count depends on the data.
        """
        inputs = ops.cast(features["inputs"], "int32")
        targets = ops.cast(features["targets"], "int32")
        source, target = Packing(inputs), Packing(targets)
        source_bias = padding_bias(source.mask)
        x = self._embed_rows(source.gather(inputs), source.positions,
                             self.encoder_input_dropout, training)
        for layer in self.encoder_layers:
            x = layer.call_packed(x, source, source_bias, training)
        if self.encoder_final_norm is not None:
            x = self.encoder_final_norm(x)
        y = self._embed_rows(target.gather(shift_right(targets)), target.positions,
                             self.decoder_input_dropout, training)
        self_bias = causal_bias(ops.shape(targets)[1])
        for layer in self.decoder_layers:
            y = layer.call_packed(y, target, x, source, self_bias, source_bias, training)
        return self._decoder_output(y), target.gather(targets)

    def _embed_rows(self, ids, positions, dropout, training):
        x = self.embedding(ids) + self.positions.vectors(positions)
        return dropout(x, training=training)

    def attention_weights(self, inputs, targets):
        """Attention probabilities for plots (Figures 3-5): lists over layers of [B, H, q, k]."""
        encoded, encoder_self = self.encode(inputs, return_weights=True)
        _, decoder_self, cross = self.decode(targets, encoded, return_weights=True)
        return {"encoder_self": encoder_self, "decoder_self": decoder_self,
                "encoder_decoder": cross}

    # ---- incremental decoding ------------------------------------------------------------------
    def init_decode_state(self, encoded, max_decode_length, growing=False):
        """Self-attention caches and the once-computed cross-attention state.

        cache:  {"layer_i": {"key": ..., "value": ...}}, either growing=True: heads-first
                [B, H, 0, d_k] / [B, H, 0, d_v], appended to along axis 2 by each decode_step;
                or fixed-size zeros [B, L, H, d_k] / [B, L, H, d_v] written in place (XLA)
        static: {"cross_bias": [B, 1, 1, S], "layer_i": {"key": [B, H, S, d_k], "value": ...},
                "output_matrix": [d_model, vocab]}: computed once here, heads-first so no step
                transposes them; not per example, so a search must not tile it (translate
                passes tile_static=False)
        """
        outputs = encoded["outputs"]
        batch = ops.shape(outputs)[0]
        heads, key_dim, value_dim = (self.config.num_heads, self.config.key_dim,
                                     self.config.value_dim)
        dtype = outputs.dtype
        if growing:
            shapes = (batch, heads, 0, key_dim), (batch, heads, 0, value_dim)
        else:
            shapes = ((batch, max_decode_length, heads, key_dim),
                      (batch, max_decode_length, heads, value_dim))
        cache, static = {}, {"cross_bias": padding_bias(encoded["padding_mask"])}
        # The pre-softmax matrix transposed once per decode, [d_model, vocab]: a step's logits
        # matmul without transpose_b runs ~12% faster under oneDNN.
        static["output_matrix"] = ops.transpose(self.output_matrix(dtype))
        for i, layer in enumerate(self.decoder_layers):
            cache[f"layer_{i}"] = {"key": ops.zeros(shapes[0], dtype),
                                   "value": ops.zeros(shapes[1], dtype)}
            key, value = layer.cross_attention.project_key_value(outputs)
            static[f"layer_{i}"] = {"key": ops.transpose(key, [0, 2, 1, 3]),
                                    "value": ops.transpose(value, [0, 2, 1, 3])}
        return cache, static

    def decode_step(self, ids, index, cache, static, training=False, growing=False,
                    queries_per_example=1):
        """ids [N] (the decoder input at position `index`) -> (logits [N, vocab], updated cache).

        `growing` must match init_decode_state's. `static` holds N / queries_per_example
        examples, each serving that many consecutive rows (beam search passes its beam size and
        leaves the encoder state untiled); the cache holds N rows. The logits use static's
        output_matrix, the shared embedding transposed once (same numbers as `_logits`).
        """
        ids = ops.cast(ids, "int32")[:, None]
        index = ops.cast(index, "int32")
        x = self.positions(self.embedding(ids), offset=index)
        x = self.decoder_input_dropout(x, training=training)
        new_cache = {}
        for i, layer in enumerate(self.decoder_layers):
            name = f"layer_{i}"
            x, new_cache[name] = layer.step(x, index, cache[name], static[name]["key"],
                                            static[name]["value"], static["cross_bias"],
                                            training=training, growing=growing,
                                            queries_per_example=queries_per_example)
        x = self._decoder_output(x)
        logits = ops.matmul(x[:, 0, :], ops.cast(static["output_matrix"], x.dtype))
        return ops.cast(logits, "float32"), new_cache
