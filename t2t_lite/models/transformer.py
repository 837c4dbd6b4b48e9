"""The Transformer of "Attention Is All You Need" (section 3), as a Keras 3 model.

Inputs and targets are int32 id matrices, 0 = pad, each sequence ending with EOS = 1. The decoder
input is the target shifted right with 0 (pad) as the start symbol.

Decoding is split for a model-agnostic search: `encode` once, `init_decode_state` once (the
self-attention caches plus the cross-attention keys/values, which never change), then
`decode_step(ids, index, cache, static)` per position, each step growing the caches by one
position.
"""
import keras
from keras import ops

from t2t_lite.config import ModelConfig
from t2t_lite.layers.attention import causal_bias, padding_bias
from t2t_lite.layers.embedding import PositionEncoding, SharedEmbedding
from t2t_lite.layers.packing import Packing
from t2t_lite.layers.transformer_layers import DecoderLayer, EncoderLayer, LayerNorm
from t2t_lite.models.layout import (
    CROSS_ATTENTION, DECODER, EMBEDDING, ENCODER, FEED_FORWARD, FINAL_NORM, POSITIONS,
    SELF_ATTENTION, SOURCE, TARGET, Attention, Layout, Role, Weight)
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

    @staticmethod
    def layout(config, vocab_size):
        """Every variable this class builds for `config`, by checkpoint name and role
        (models/layout.py); tests/model_dir/test_limits.py holds it equal to a built model's
        checkpoint, tests/export/test_ctranslate2_export.py every weight mapped to CTranslate2."""
        c = config
        d, heads, dk, dv = c.d_model, c.num_heads, c.key_dim, c.value_dim
        # The one matrix embeds both sides and is the pre-softmax projection of every target.
        weights = [Weight("embedding/embeddings", (vocab_size, d), TARGET, Role(part=EMBEDDING))]
        constants = []
        positions = Weight("positions/table", (c.max_length, d), role=Role(part=POSITIONS))
        (weights if c.position_encoding == "learned" else constants).append(positions)
        if c.norm_position == "pre":
            for prefix, stack in (("encoder_final_norm", ENCODER), ("decoder_final_norm", DECODER)):
                weights += [Weight(f"{prefix}/{part}", (d,),
                                   role=Role(stack, sublayer=FINAL_NORM, part=part))
                            for part in ("beta", "gamma")]
        attention = []

        def sublayer(prefix, role, parts):
            """One sub-layer's weights, (part, name under `prefix`, shape, tokens) each, then its
            residual's layer norm; `role` is the sub-layer's Role, without a part."""
            weights.extend(Weight(f"{prefix}/{name}", shape, tokens, role._replace(part=part))
                           for part, name, shape, tokens in parts)
            weights.extend(Weight(f"{prefix}_residual/norm/{part}", (d,),
                                  role=role._replace(part=f"norm_{part}"))
                           for part in ("beta", "gamma"))

        def attention_sublayer(prefix, role, queries, keys):
            parts = [("query_kernel", (d, heads, dk), queries),
                     ("key_kernel", (d, heads, dk), keys),
                     ("value_kernel", (d, heads, dv), keys),
                     ("output_kernel", (heads, dv, d), queries)]
            if c.attention_bias:
                parts += [("query_bias", (heads, dk), ""), ("key_bias", (heads, dk), ""),
                          ("value_bias", (heads, dv), ""), ("output_bias", (d,), "")]
            sublayer(prefix, role, [(part, part, *rest) for part, *rest in parts])
            attention.append(Attention(queries, keys, heads * (dk + dv)))

        def feed_forward_sublayer(prefix, role, tokens):
            sublayer(prefix, role, [  # two Dense layers, "inner" and "outer"
                ("inner_kernel", "inner/_kernel", (d, c.d_ff), tokens),
                ("inner_bias", "inner/bias", (c.d_ff,), ""),
                ("outer_kernel", "outer/_kernel", (c.d_ff, d), tokens),
                ("outer_bias", "outer/bias", (d,), "")])

        for i in range(c.num_layers):
            encoder, decoder = f"encoder_layer_{i}", f"decoder_layer_{i}"
            attention_sublayer(f"{encoder}/self_attention", Role(ENCODER, i, SELF_ATTENTION),
                               SOURCE, SOURCE)
            feed_forward_sublayer(f"{encoder}/feed_forward", Role(ENCODER, i, FEED_FORWARD),
                                  SOURCE)
            attention_sublayer(f"{decoder}/self_attention", Role(DECODER, i, SELF_ATTENTION),
                               TARGET, TARGET)
            attention_sublayer(f"{decoder}/cross_attention", Role(DECODER, i, CROSS_ATTENTION),
                               TARGET, SOURCE)
            feed_forward_sublayer(f"{decoder}/feed_forward", Role(DECODER, i, FEED_FORWARD),
                                  TARGET)
        return Layout(weights, attention, constants)

    def dropout_layers(self):
        """The layers P_drop applies to (section 5.4): each sub-layer's output and the sums of
        embeddings and positions."""
        residuals = [residual for layer in self.encoder_layers + self.decoder_layers
                     for residual in layer.residuals()]
        return [self.encoder_input_dropout, self.decoder_input_dropout,
                *(residual.dropout for residual in residuals)]

    def set_dropout(self, rate):
        """Changes P_drop of a built model (a budgeted run fits it to its plan). A rate above 0
        needs the model built with a rate above 0 (Keras makes a dropout layer's random state
        at construction); traced training steps keep the old rate until traced again."""
        for layer in self.dropout_layers():
            if rate > 0 and not hasattr(layer, "seed_generator"):
                raise ValueError(f"cannot set dropout {rate}: the model was built without "
                                 "dropout")
            layer.rate = rate

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
        """Runs the encoder.

        Args:
          inputs: int [B, S] source ids, 0-padded.
          training: whether dropout is on.
          return_weights: also return each layer's self-attention probabilities.

        Returns:
          {"outputs": [B, S, d_model], "padding_mask": bool [B, S]}; with return_weights,
          (that, a list over layers of [B, H, S, S]).
        """
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
        """Runs the teacher-forced decoder.

        Args:
          targets: int [B, T] target ids, 0-padded (the decoder sees them shifted right).
          encoded: what `encode` returned.
          training: whether dropout is on.
          return_weights: also return the attention probabilities.

        Returns:
          logits [B, T, vocab] float32, position t predicting targets[:, t]; with
          return_weights, (logits, self-attention weights, encoder-decoder weights), each a
          list over layers of [B, H, T, T] / [B, H, T, S].
        """
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
        """{"inputs": [B, S], "targets": [B, T]} -> logits [B, T, vocab] float32."""
        encoded = self.encode(features["inputs"], training=training)
        return self.decode(features["targets"], encoded, training=training)

    # ---- training on real tokens only ----------------------------------------------------------
    def output_matrix(self, dtype):
        """The pre-softmax projection [vocab, d_model] (the shared embedding), in `dtype`."""
        return ops.cast(self.embedding.embeddings, dtype)

    def packed_hidden(self, features, training=False):
        """The decoder's final hidden rows of the real target tokens only, for training.

        Everything token-wise (projections, feed-forward, norms, logits) runs on the real rows
        instead of the padded B*T; only attention's scores and context see the padded layout
        (layers/packing.py). Not for XLA: the row count depends on the data.

        Args:
          features: {"inputs": [B, S], "targets": [B, T]}, as for `call`.
          training: whether dropout is on.

        Returns:
          (hidden [n, d_model], targets [n]) for the n real target tokens in row-major order;
          hidden @ output_matrix^T gives the logits `call` gives at those positions.
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
        """Attention probabilities for plots (Figures 3-5).

        Args:
          inputs: int [B, S] source ids; targets: int [B, T] target ids.

        Returns:
          {"encoder_self", "decoder_self", "encoder_decoder"}: lists over layers of
          [B, H, queries, keys].
        """
        encoded, encoder_self = self.encode(inputs, return_weights=True)
        _, decoder_self, cross = self.decode(targets, encoded, return_weights=True)
        return {"encoder_self": encoder_self, "decoder_self": decoder_self,
                "encoder_decoder": cross}

    # ---- incremental decoding ------------------------------------------------------------------
    def init_decode_state(self, encoded):
        """The decoding state before the first position.

        Args:
          encoded: what `encode` returned for B examples.

        Returns:
          (cache, static):
          cache: {"layer_i": {"key": [B, H, 0, d_k], "value": [B, H, 0, d_v]}}, the
            self-attention keys and values, empty; each decode_step appends its position.
          static: {"cross_bias": [B, 1, 1, S], "layer_i": {"key": [B, H, S, d_k], "value":
            [B, H, S, d_v]}, "output_matrix": [d_model, vocab]}: computed once here and never
            changed. Not per beam: a search leaves it at B rows (translate passes
            tile_static=False).
        """
        outputs = encoded["outputs"]
        cache, static = {}, {"cross_bias": padding_bias(encoded["padding_mask"])}
        # The pre-softmax matrix transposed once per decode, [d_model, vocab]: a step's logits
        # matmul without transpose_b is faster under oneDNN.
        static["output_matrix"] = ops.transpose(self.output_matrix(outputs.dtype))
        for i, layer in enumerate(self.decoder_layers):
            cache[f"layer_{i}"], static[f"layer_{i}"] = layer.initial_cache(outputs)
        return cache, static

    def decode_step(self, ids, index, cache, static, training=False, queries_per_example=1):
        """One decoder position for N rows.

        Args:
          ids: int [N], the decoder input at position `index` (0, the start symbol, first).
          index: int scalar, the position.
          cache: the N rows' self-attention caches (init_decode_state's, grown by the steps
            before).
          static: init_decode_state's, for N / queries_per_example examples.
          training: whether dropout is on.
          queries_per_example: G; rows g * G .. g * G + G - 1 belong to example g of `static`
            (beam search passes its beam size and leaves the encoder state untiled).

        Returns:
          (logits [N, vocab] float32, the cache with this position appended). The logits use
          static's output_matrix, the same numbers as `call`'s.
        """
        ids = ops.cast(ids, "int32")[:, None]
        index = ops.cast(index, "int32")
        x = self.positions(self.embedding(ids), offset=index)
        x = self.decoder_input_dropout(x, training=training)
        new_cache = {}
        for i, layer in enumerate(self.decoder_layers):
            name = f"layer_{i}"
            x, new_cache[name] = layer.call_cached(x, cache[name], static[name],
                                                   static["cross_bias"], training=training,
                                                   queries_per_example=queries_per_example)
        x = self._decoder_output(x)
        logits = ops.matmul(x[:, 0, :], ops.cast(static["output_matrix"], x.dtype))
        return ops.cast(logits, "float32"), new_cache
