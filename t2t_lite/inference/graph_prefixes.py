"""The pieces a `*` prefix form bars, found in the graph from the vocabulary: the constrained
search's prefix_bars (decoding/constrained_search.py).

`!Datei*` bars every word that begins with "Datei", however the vocabulary spells it: on the
demo's vocabulary "Dateien" and "Dateisystem" are single pieces (`▁Dateien`), "Dateityp" is
`▁Dateit` `yp`, so barring the prefix's own tokens is not enough. graph_constraints.encode ends
a prefix form's tokens in PREFIX_END; PrefixPieces.bars turns each such row, S being the text its
tokens write (word_pieces.surfaces: "▁Datei" for the spaced form, "Datei" for the glued one
that follows a WORD_START), into rows of tokens, each with the pieces barred once a hypothesis
ends with it: those whose text begins with what S has left after the row.

    the prefix's own first i tokens, i < its length   pieces that begin with the rest of S
      (i = 0: the spaced form at any position, the     ("▁Dateien", "▁Dateit"; after "▁Datei"
      glued form where a word has just ended)          of "▁Dateiformat": "formate")
    one other piece that S begins with ("▁Date")       pieces that begin with the rest ("ien")

So every spelling in at most two pieces of a word that begins with the prefix is barred, and
every longer one that follows the prefix's own tokens. A spelling in three or more other pieces
(`▁Da` `te` `ien`) is not: the line's count (constraints.unmet_phrases, graph_constraints.unmet)
reports the word. Pieces are matched on their text as the vocabulary writes it (after its
normalization), case-sensitively, as the whole-word negatives are.
"""
import numpy as np
import tensorflow as tf

from t2t_lite.decoding.phrase_matching import WORD_START, phrase_lengths

# A negative phrase's last "token" in encode's tables when it is a `*` prefix form. Never reaches
# the search: bars() turns it into the search's prefix_bars and drops it.
PREFIX_END = -4


def _lookup(keys, values):
    """A string -> int64 table (-1 for a missing key)."""
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys, tf.string), tf.constant(values, tf.int64)), default_value=-1)


class PrefixPieces(tf.Module):
    """A vocabulary's lookups for bars: each token's surface, the token of a surface, and the
    tokens whose surface begins with a text. Tracked by the module that holds it: an export
    holds its tables."""

    def __init__(self, surfaces, name="prefix_pieces"):
        super().__init__(name=name)
        surfaces = [str(s) for s in surfaces]
        first = {}
        for token, surface in enumerate(surfaces):
            if surface:
                first.setdefault(surface, token)
        # Every text a surface begins with (whole characters), with the token: the tokens that
        # begin with a text are one run of these, sorted by text.
        starts = sorted((surface[:end], token) for token, surface in enumerate(surfaces)
                        for end in range(1, len(surface) + 1))
        texts = [text for text, _ in starts]
        heads = sorted(set(texts))
        self._surfaces = np.array(surfaces or [""], dtype=object)
        self._tokens = np.array([token for _, token in starts] or [0], np.int32)
        self._runs = np.searchsorted(np.array(texts, dtype=object),
                                     np.array(heads, dtype=object), side="left").astype(np.int64)
        self._run_ends = np.searchsorted(np.array(texts, dtype=object),
                                         np.array(heads, dtype=object),
                                         side="right").astype(np.int64)
        self.token_of = _lookup(list(first), list(first.values()))
        self.run_of = _lookup(heads, list(range(len(heads))))

    def bars(self, negative):
        """negative int32 [B, Q, T] as graph_constraints.encode gives it -> (negative with its
        PREFIX_ENDs dropped, rows int32 [B, R, W], tokens int32 [B, R, E]): tokens[b, r] are
        barred once a hypothesis of example b ends with rows[b, r] (see the module docstring);
        both 0-padded, only rows that bar a token."""
        negative = tf.convert_to_tensor(negative, tf.int32)
        # At least one column, so that a row's first token can be read.
        negative = tf.pad(negative, [[0, 0], [0, 0], [0, tf.maximum(1 - tf.shape(negative)[2], 0)]])
        lengths = phrase_lengths(negative)
        last = tf.gather(negative, tf.maximum(lengths - 1, 0), batch_dims=2)
        marked = tf.where(tf.equal(last, PREFIX_END) & (lengths > 0))
        ids = tf.gather_nd(negative, marked)  # [N, T]
        ids = tf.where(tf.equal(ids, PREFIX_END), 0, ids)
        surfaces = tf.where(ids > 0, tf.gather(tf.constant(self._surfaces, tf.string),
                                               tf.maximum(ids, 0)), "")
        texts = tf.strings.reduce_join(surfaces, axis=1)  # S [N]
        glued = tf.equal(ids[:, 0], WORD_START)
        width = tf.maximum(tf.shape(ids)[1], 2)
        own_rows, own_rests, own_of = self._own_rows(ids, surfaces, texts, glued, marked[:, 0])
        other_rows, other_rests, other_of = self._other_rows(texts, glued, marked[:, 0])
        rows = tf.concat([_widened(own_rows, width), _widened(other_rows, width)], axis=0)
        examples = tf.concat([own_of, other_of], axis=0)
        tokens = self._beginning_with(tf.concat([own_rests, other_rests], axis=0))
        barring = tokens.row_lengths() > 0
        rows, examples = tf.boolean_mask(rows, barring), tf.boolean_mask(examples, barring)
        tokens = tf.ragged.boolean_mask(tokens, barring)
        order = tf.argsort(examples, stable=True)
        examples = tf.gather(examples, order)
        batch = tf.shape(negative, out_type=tf.int64)[0]

        def per_example(values):
            return tf.RaggedTensor.from_value_rowids(tf.gather(values, order), examples,
                                                     nrows=batch)

        return (tf.where(tf.equal(negative, PREFIX_END), 0, negative),
                per_example(rows).to_tensor(),
                per_example(tokens).to_tensor())

    def _own_rows(self, ids, surfaces, texts, glued, examples):
        """The rows along the prefix's own tokens: (rows int32 [M, T], rests string [M],
        examples int64 [M]). A row holds the first `cut` columns of ids: the WORD_START of a
        glued form, then i < the prefix's length of its tokens."""
        columns = tf.shape(ids)[1]
        lead = tf.cast(glued, tf.int32)[:, None]
        real = tf.reduce_sum(tf.cast(ids > 0, tf.int32), axis=1)[:, None]
        cut = tf.range(columns)[None, :]  # [1, T]
        valid = (cut >= lead) & (cut < lead + real)  # [N, T]
        written = tf.cumsum(tf.strings.length(surfaces), axis=1, exclusive=True)  # [N, T]
        whole = tf.broadcast_to(texts[:, None], tf.shape(written))
        rests = tf.strings.substr(whole, written, tf.strings.length(whole) - written)
        rows = tf.where(tf.range(columns)[None, None, :] < cut[:, :, None], ids[:, None, :], 0)
        return (tf.boolean_mask(rows, valid), tf.boolean_mask(rests, valid),
                tf.boolean_mask(tf.broadcast_to(examples[:, None], tf.shape(valid)), valid))

    def _other_rows(self, texts, glued, examples):
        """The rows of one piece that S begins with (after a glued form's WORD_START): (rows
        int32 [M, 2], rests string [M], examples int64 [M])."""
        _, offsets = tf.strings.unicode_split_with_offsets(texts, "UTF-8")
        inner = offsets.flat_values > 0  # a cut after S's first character
        which = tf.boolean_mask(offsets.value_rowids(), inner)
        cuts = tf.cast(tf.boolean_mask(offsets.flat_values, inner), tf.int32)
        whole = tf.gather(texts, which)
        heads = tf.strings.substr(whole, tf.zeros_like(cuts), cuts)
        rests = tf.strings.substr(whole, cuts, tf.strings.length(whole) - cuts)
        pieces = tf.cast(self.token_of.lookup(heads), tf.int32)
        is_glued = tf.gather(glued, which)
        rows = tf.stack([tf.where(is_glued, WORD_START, pieces),
                         tf.where(is_glued, pieces, 0)], axis=1)
        found = pieces >= 0
        return (tf.boolean_mask(rows, found), tf.boolean_mask(rests, found),
                tf.boolean_mask(tf.gather(examples, which), found))

    def _beginning_with(self, rests):
        """ragged int32 [M, (e)]: the tokens whose surface begins with each rest."""
        run = self.run_of.lookup(rests)
        found = run >= 0
        run = tf.maximum(run, 0)
        starts = tf.gather(tf.constant(self._runs), run)
        limits = tf.where(found, tf.gather(tf.constant(self._run_ends), run), starts)
        return tf.gather(tf.constant(self._tokens), tf.ragged.range(starts, limits))


def _widened(rows, width):
    """rows int32 [M, w] 0-padded to [M, width] (width >= w)."""
    return tf.pad(rows, [[0, 0], [0, width - tf.shape(rows)[1]]])
