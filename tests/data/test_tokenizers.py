"""Tokenizers: reserved ids, lossless round trips, decode cuts at EOS/pad, SavedModel survival."""
import pytest
import tensorflow as tf

from t2t_lite.data import tokenizers, vocab
from t2t_lite.ids import EOS_ID, PAD_ID, RESERVED_TOKENS, UNK_ID
from t2t_lite.errors import UserError

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Der schnelle braune Fuchs springt über den faulen Hund!",
    "Le renard brun rapide saute par-dessus le chien paresseux, n'est-ce pas ?",
    "Cannot open file '%s': permission denied (error 13).",
]


@pytest.fixture(scope="module")
def sample_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "sample.txt"
    path.write_text("\n".join(SENTENCES * 50) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module", params=["bpe", "wordpiece"])
def learned(request, sample_file, tmp_path_factory):
    out = tmp_path_factory.mktemp(request.param)
    if request.param == "bpe":
        path = vocab.train_sentencepiece(sample_file, str(out / "v.spm.model"), vocab_size=120)
    else:
        path = vocab.train_wordpiece(sample_file, str(out / "v.wordpiece.txt"), vocab_size=120)
    return tokenizers.load_tokenizer(path)


def test_reserved_ids(learned):
    ids = learned.encode(tf.constant(SENTENCES)).flat_values.numpy()
    assert ids.min() > UNK_ID  # pad, EOS never appear; known text has no <unk>
    assert ids.max() < learned.vocab_size
    # WordPiece always keeps the whole alphabet, so a tiny request may grow a little.
    assert len(RESERVED_TOKENS) < learned.vocab_size <= 150


def test_round_trip_is_lossless(learned):
    ids = learned.encode(tf.constant(SENTENCES))
    eos = tf.fill([len(SENTENCES), 1], EOS_ID)
    decoded = learned.decode(tf.concat([ids.to_tensor(), eos], axis=1))
    assert [s.decode("utf-8") for s in decoded.numpy()] == SENTENCES


def test_decode_stops_at_first_eos_or_pad(learned):
    ids = learned.encode_batch(["The quick brown fox", "lazy dog"])
    junk = learned.encode_batch(["Hund"])[0]
    rows = [ids[0] + [EOS_ID] + junk, ids[1] + [PAD_ID] + junk]
    width = max(map(len, rows))
    dense = tf.constant([r + [0] * (width - len(r)) for r in rows], tf.int32)
    assert learned.decode(dense).numpy().tolist() == [b"The quick brown fox", b"lazy dog"]


@pytest.mark.slow
def test_works_inside_tf_function_and_saved_model(learned, tmp_path):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def round_trip(texts):
        return learned.decode(learned.encode(texts).to_tensor())

    assert round_trip(tf.constant(SENTENCES[:1])).numpy()[0].decode() == SENTENCES[0]

    tf.saved_model.save(learned, str(tmp_path / "tok"))
    loaded = tf.saved_model.load(str(tmp_path / "tok"))
    restored = loaded.decode(loaded.encode(tf.constant(SENTENCES)).to_tensor())
    assert [s.decode() for s in restored.numpy()] == SENTENCES
    assert int(loaded.saved_vocab_size.numpy()) == learned.vocab_size
    asset = loaded.vocab_asset.asset_path.numpy().decode()
    assert asset.startswith(str(tmp_path / "tok" / "assets"))
    assert tf.io.gfile.exists(asset)


def test_symbol_tokenizer(tmp_path):
    path = vocab.write_symbol_vocab(str(tmp_path / "s.symbols.txt"), ["a", "b", "c"])
    tok = tokenizers.load_tokenizer(path)
    assert tok.vocab_size == 6
    assert tok.encode_batch(["a b c", "c x"]) == [[3, 4, 5], [5, UNK_ID]]
    assert tok.decode(tf.constant([[5, 4, 1, 3]])).numpy().tolist() == [b"c b"]


def test_unknown_vocab_file_type(tmp_path):
    with pytest.raises(ValueError, match="unknown vocabulary file type"):
        tokenizers.load_tokenizer(str(tmp_path / "v.json"))


def test_reservoir_sample_is_bounded_and_deterministic():
    sample = vocab.reservoir_sample(iter(range(10_000)), 100, seed=3)
    assert len(sample) == 100 and len(set(sample)) == 100
    assert sample == vocab.reservoir_sample(iter(range(10_000)), 100, seed=3)
    assert max(sample) > 5000  # drawn from the whole stream, not its head
    assert vocab.reservoir_sample(iter(range(5)), 100) == list(range(5))


def test_encode_batch_matches_the_graph_op(learned):
    texts = SENTENCES + ["unseen words: Quokka, Zebu ünd Ölfass", ""]
    graph = learned.encode(tf.constant(texts)).to_list()
    assert learned.encode_batch(texts) == graph


def _rows(tokenizer, texts):
    ids = tokenizer.encode_batch(texts)
    return tf.ragged.constant([row + [EOS_ID] for row in ids], dtype=tf.int64)


def test_resegmenter_samples_other_segmentations_of_the_same_text(learned):
    if not isinstance(learned, tokenizers.SentencePieceTokenizer):
        with pytest.raises(UserError, match="needs a SentencePiece vocabulary"):
            learned.resegmenter(0.1)
        return
    rows = _rows(learned, SENTENCES)
    rate = tf.Variable(0.0)
    resegment = learned.resegmenter(rate)
    # Rate 0 is the stored segmentation, EOS kept at the end.
    assert resegment(rows).to_list() == rows.to_list()
    rate.assign(0.3)  # read at each call: a plan can change it while the pipeline runs
    samples = [resegment(rows) for _ in range(5)]
    texts = set()
    for sample in samples:
        assert sample.dtype == tf.int64
        assert all(row[-1] == EOS_ID and EOS_ID not in row[:-1]
                   for row in sample.to_list())
        # BPE-dropout only skips merges: never fewer pieces, the same text back.
        assert all(a >= b for a, b in zip(sample.row_lengths().numpy(), rows.row_lengths().numpy()))
        decoded = learned.decode(sample.to_tensor().numpy().astype("int32"))
        assert [s.decode("utf-8") for s in decoded.numpy()] == SENTENCES
        texts.add(tuple(map(tuple, sample.to_list())))
    assert len(texts) > 1, "a rate of 0.3 should sample different segmentations"
