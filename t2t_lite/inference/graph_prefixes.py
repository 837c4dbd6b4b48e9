"""The pieces a `*` prefix form bars, found in the graph from the vocabulary and the word being
written: the constrained search's prefix_bars (decoding/constrained_search.py).

`!Datei*` bars every word that begins with "Datei", however the vocabulary spells it: on the
demo's vocabulary "Dateien" and "Dateisystem" are single pieces (`▁Dateien`), "Dateityp" is
`▁Dateit` `yp`, "Dateien" may also be `▁Da` `te` `ien`, so barring the prefix's own tokens is
not enough. graph_constraints.encode ends a prefix form's tokens in PREFIX_END; PrefixPieces.texts
turns each such row into S, the text its tokens write (word_pieces.surfaces: "▁Datei" for the
spaced form; "Datei" for the glued one, whose row begins with a WORD_START). At every step,
PrefixPieces.barred reads the text of each hypothesis's last pieces: for the spaced form, the
word is the text since its last space ("▁"); for the glued form, every ending of that text
that follows a character that is no letter, mark, digit or space (or the sequence's start), as
"»" does in "»Datei". Punctuation inside a prefix ("E-Mail", `▁E` `-` `M` `ail`; "z.B.")
stays in its word: the word is read as text, not from the pieces that start or end words.
Where that word is a proper beginning of S (say "▁Da" `te`:
"▁Date"), the pieces whose text begins with the rest of S ("i", "ien", "isystem") are barred;
pieces that only go on along S ("i" of a longer rest) stay open, so the bar moves with the word.
The spaced form also bars, at every step, the pieces that begin with S itself ("▁Dateien").

So every spelling of a word that begins with the prefix is barred, in any number of pieces: the
window read covers S's length in characters, and every piece writes at least one. Pieces are
matched on their text as the vocabulary writes it (after its normalization), case-sensitively,
as the whole-word negatives are.
"""
import numpy as np
import tensorflow as tf

from t2t_lite.decoding import phrase_matching as matching
from t2t_lite.decoding.phrase_matching import phrase_lengths

# A negative phrase's last "token" in encode's tables when it is a `*` prefix form. Never reaches
# the search: texts() turns its row into the search's prefix text and drops it.
PREFIX_END = -4
# SentencePiece's word mark, with which a spaced form's text begins.
SPACE = "\u2581"
# What the sequence's start writes in the text a hypothesis's word is read from: no piece's
# surface holds a line end.
START = "\n"


def _lookup(keys, values):
    """A string -> int64 table (-1 for a missing key)."""
    return tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys, tf.string), tf.constant(values, tf.int64)), default_value=-1)


class PrefixPieces(tf.Module):
    """A vocabulary's lookups for bars: each token's surface and the tokens whose surface begins
    with a text. Tracked by the module that holds it: an export
    holds its tables."""

    def __init__(self, surfaces, name="prefix_pieces"):
        super().__init__(name=name)
        surfaces = [str(s) for s in surfaces]
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
        self.run_of = _lookup(heads, list(range(len(heads))))

    def texts(self, negative):
        """negative int32 [B, Q, T] as graph_constraints.encode gives it -> (negative with its
        PREFIX_ENDs dropped, texts string [B, F]: S of each prefix form of each example, "" to
        pad; see the module docstring). A dropped mark leaves the form's tokens a negative
        phrase of their own, barred whatever follows them."""
        negative = tf.convert_to_tensor(negative, tf.int32)
        # At least one column, so that a row's last token can be read.
        negative = tf.pad(negative, [[0, 0], [0, 0], [0, tf.maximum(1 - tf.shape(negative)[2], 0)]])
        lengths = phrase_lengths(negative)
        last = tf.gather(negative, tf.maximum(lengths - 1, 0), batch_dims=2)
        marked = tf.equal(last, PREFIX_END) & (lengths > 0)  # [B, Q]
        ids = tf.boolean_mask(negative, marked)  # [N, T]
        surfaces = tf.where(ids > 0, tf.gather(tf.constant(self._surfaces, tf.string),
                                               tf.maximum(ids, 0)), "")
        texts = tf.strings.reduce_join(surfaces, axis=1)  # [N]
        examples = tf.cast(tf.where(marked)[:, 0], tf.int64)
        per_example = tf.RaggedTensor.from_value_rowids(
            texts, examples, nrows=tf.shape(negative, out_type=tf.int64)[0])
        return (tf.where(tf.equal(negative, PREFIX_END), 0, negative),
                per_example.to_tensor(default_value=""))

    def barred(self, seqs, index, texts, word_starts, word_ends):
        """What the prefix forms bar now, as the search's banned tokens (int32 [N, 2] (row,
        token) indices into the flat [B*K, V] log probs). seqs int32 [B, K, L+1]: the alive
        hypotheses up to column `index`; texts string [B, F] as `texts` gives them. The word is
        read from the text the pieces write, so word_starts and word_ends (the search's
        interface) are not needed: a hyphen or a dot inside a prefix does not end its word."""
        del word_starts, word_ends
        shape = tf.shape(seqs)
        forms = tf.shape(texts)[1]
        s_texts = tf.broadcast_to(texts[:, None, :], [shape[0], shape[1], forms])  # [B, K, F]
        length = tf.strings.length(s_texts, unit="UTF8_CHAR")
        spaced = _is_spaced(s_texts)
        most = tf.reduce_max(tf.concat([tf.reshape(length, [-1]), [0]], axis=0))
        written = self._window_text(seqs, index, most)  # [B, K]
        rows = tf.range(shape[0])[:, None] * shape[1] + tf.range(shape[1])[None, :]  # [B, K]

        # The spaced form: the word since the last space, a proper beginning of S.
        word = tf.where(tf.strings.regex_full_match(written, "(?s).*" + SPACE + ".*"),
                        tf.strings.regex_replace(written, "(?s)^.*" + SPACE, SPACE), "\0")
        word = tf.broadcast_to(word[:, :, None], tf.shape(s_texts))
        begins = spaced & _proper_beginning(s_texts, length, word)
        cut = tf.minimum(tf.strings.length(word, unit="UTF8_CHAR"), length)
        rests = [tf.boolean_mask(_rest(s_texts, length, cut), begins),
                 # A spaced form's word may begin at any step: S itself is barred everywhere.
                 tf.boolean_mask(s_texts, spaced)]
        where = [tf.boolean_mask(tf.broadcast_to(rows[..., None], tf.shape(s_texts)), begins),
                 tf.boolean_mask(tf.broadcast_to(rows[..., None], tf.shape(s_texts)), spaced)]

        # The glued form: each ending of the text, c < most characters, that follows a character
        # that is no letter, mark, digit or space (or the sequence's start) and begins S.
        ending, after_mark = _glued_endings(written, most)  # [B, K, C]
        c = tf.range(most)
        s_c = tf.broadcast_to(s_texts[..., None], tf.concat([tf.shape(s_texts), [most]], 0))
        length_c = length[..., None] + tf.zeros_like(c)
        begins = (tf.logical_not(spaced)[..., None] & after_mark[:, :, None, :]
                  & _proper_beginning(s_c, length_c, tf.broadcast_to(ending[:, :, None, :],
                                                                      tf.shape(s_c))))
        cut = tf.minimum(c + tf.zeros_like(length_c), length_c)
        rests.append(tf.boolean_mask(_rest(s_c, length_c, cut), begins))
        where.append(tf.boolean_mask(tf.broadcast_to(rows[:, :, None, None], tf.shape(s_c)),
                                     begins))
        which, tokens = self._beginning_with(tf.concat(rests, axis=0))
        return tf.stack([tf.gather(tf.concat(where, axis=0), which), tokens], axis=1)

    def _window_text(self, seqs, index, most):
        """string [B, K]: the text each hypothesis's last `most` + 1 pieces write (each writes
        at least one character, so it holds S's length and one character before), the
        sequence's start written as START."""
        window = matching.windows(seqs, index, most + 1)  # [B, K, W]
        written = tf.where(window > 0, tf.gather(tf.constant(self._surfaces, tf.string),
                                                  tf.maximum(window, 0)),
                           tf.where(window < 0, START, ""))
        return tf.strings.reduce_join(written, axis=-1)

    def _beginning_with(self, rests):
        """(which int32 [N], tokens int32 [N]): every token whose surface begins with a rest,
        with the rest's index. Each rest's tokens are one run of the sorted surface starts; the
        runs are laid end to end without a ragged tensor, whose ops make several times the
        bytes (batching.SearchBudget.prefix_bytes)."""
        run = self.run_of.lookup(rests)
        found = run >= 0
        run = tf.maximum(run, 0)
        starts = tf.cast(tf.gather(tf.constant(self._runs), run), tf.int32)
        ends = tf.cast(tf.where(found, tf.gather(tf.constant(self._run_ends), run),
                                tf.gather(tf.constant(self._runs), run)), tf.int32)
        offsets = tf.cumsum(ends - starts)  # where each rest's tokens end
        positions = tf.range(tf.reduce_sum(ends - starts))
        which = tf.searchsorted(offsets, positions, side="right", out_type=tf.int32)
        first = tf.gather(offsets - (ends - starts), which)
        return which, tf.gather(tf.constant(self._tokens),
                                tf.gather(starts, which) + positions - first)


def _proper_beginning(texts, lengths, word):
    """bool, texts' shape: word is a beginning of texts shorter than it (lengths: texts'
    characters)."""
    written = tf.strings.length(word, unit="UTF8_CHAR")
    return (written < lengths) & tf.equal(
        tf.strings.substr(texts, tf.zeros_like(written), tf.minimum(written, lengths),
                          unit="UTF8_CHAR"), word)


def _rest(texts, lengths, cut):
    """texts from character `cut` (<= lengths) on."""
    return tf.strings.substr(texts, cut, lengths - cut, unit="UTF8_CHAR")


def _glued_endings(written, most):
    """(endings string [B, K, C], after_mark bool [B, K, C]) for c < C = most: the last c
    characters of each text, and whether the character before them marks where a glued word
    begins: not a letter, mark, digit or the word mark SPACE (a spaced word is the spaced form's),
    or START."""
    size = tf.strings.length(written, unit="UTF8_CHAR")[..., None]  # [B, K, 1]
    c = tf.range(most)[None, None, :]
    texts = tf.broadcast_to(written[..., None], tf.shape(size + c))
    endings = tf.strings.substr(texts, tf.maximum(size - c, 0), tf.minimum(c, size),
                                unit="UTF8_CHAR")
    before = tf.strings.substr(texts, tf.maximum(size - c - 1, 0), tf.ones_like(size + c),
                               unit="UTF8_CHAR")
    mark = tf.strings.regex_full_match(before, "(?s)[^\\pL\\pM\\pN" + SPACE + "]")
    return endings, mark & (size - c - 1 >= 0)


def _is_spaced(texts):
    """bool, texts' shape: a spaced form's S (it begins with the word mark "▁")."""
    return tf.equal(tf.strings.substr(texts, 0, len(SPACE.encode())), SPACE)
