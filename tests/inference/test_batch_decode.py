"""batch_decode: lines cleaned, batched longest first, formatted; each line tokenized once, a long
line translated sentence by sentence (the decoder CLI's own tests: test_decoder_cli.py)."""
import pytest
import tensorflow as tf

from t2t_lite.inference import batch_decode


def test_clean_lines():
    assert batch_decode.clean_line(b"a\r") == ("a", False)
    assert batch_decode.clean_line(b"b\rc") == ("b c", False)
    assert batch_decode.clean_line(b"x\xffy") == ("x\ufffdy", True)
    assert batch_decode.clean_line("ok \ufffd".encode()) == ("ok \ufffd", False)


def test_batches_cover_every_line_longest_first_within_budget():
    lengths = [3, 0, 15, 7, 7, 1, 12, 2, 9, 4]
    batches = batch_decode.plan_batches(lengths, batch_tokens=20)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    for batch in batches:
        width = max(lengths[i] for i in batch) + 1
        assert len(batch) == 1 or width * len(batch) <= 20


def test_nbest_format():
    hyps = [("das\tHaus", -1.25), ("ein Haus\r\n", -2.5)]
    assert batch_decode.format_hypotheses(hyps) == "das Haus\tein Haus  "
    assert batch_decode.format_hypotheses(hyps, print_scores=True) == (
        "-1.25\tdas Haus\t-2.5\tein Haus  ")
    assert batch_decode.format_hypotheses([], print_scores=True) == ""


class _CountingTranslator:
    """Forwards to a TranslationModule, counting every text that enters a function that
    tokenizes (tokenize, translate_with_settings, nbest, serve)."""

    def __init__(self, module):
        self.module, self.texts_tokenized = module, 0

    def __getattr__(self, name):
        function = getattr(self.module, name)
        if name not in ("tokenize", "translate_with_settings", "nbest", "serve"):
            return function

        def counted(texts, *args):
            self.texts_tokenized += int(texts.shape[0])
            return function(texts, *args)
        return counted


@pytest.mark.slow
def test_the_decoder_tokenizes_each_line_once(model_dir, hostile_lines):
    from t2t_lite.inference import translation_module

    module = translation_module.from_model_dir(model_dir)
    translator = _CountingTranslator(module)
    outputs, stats = batch_decode.decode_lines(translator, hostile_lines, alpha=0.6,
                                               extra_length=6, nbest=2, batch_tokens=64)
    assert translator.texts_tokenized == len(hostile_lines) == len(outputs)
    # The same translations as the one-call-per-batch string path.
    texts = [batch_decode.clean_line(line)[0] for line in hostile_lines]
    direct = module.translate_with_settings(tf.constant(texts), tf.constant(0.6),
                                            tf.constant(6))["outputs"].numpy()
    for output, best, text in zip(outputs, direct, texts):
        assert output.split("\t")[0] == batch_decode._one_line(best[0].decode("utf-8", "replace"))


# Two sentences of 12 words each: long enough (sentences.MIN_WORDS) to be split.
TWO_SENTENCES = ("The house is small and the dog ran away and we read books every day. "
                 "She said no and the cat sat on the mat and the dog ran away.")


@pytest.mark.slow
def test_a_long_line_is_translated_sentence_by_sentence(model_dir):
    from t2t_lite.data import sentences
    from t2t_lite.inference import translation_module

    module = translation_module.from_model_dir(model_dir)
    splitting = sentences.SentenceSplitting("en")
    pieces = splitting.split(TWO_SENTENCES)
    assert len(pieces) == 2
    texts = ["the house is small .", TWO_SENTENCES, ""]
    stats = batch_decode.DecodeStats()
    split = batch_decode.translate_texts(module, texts, 0.6, 6, stats=stats, splitting=splitting)
    whole = batch_decode.translate_texts(module, texts, 0.6, 6)
    by_piece = batch_decode.translate_texts(module, pieces, 0.6, 6)
    assert stats.split == 1
    assert split[0] == whole[0] and split[2] == whole[2] == []
    assert split[1] == [(sentences.join_translations(h[0][0] for h in by_piece),
                         pytest.approx(sum(h[0][1] for h in by_piece)))]
    # n-best lists are of whole lines.
    assert batch_decode.translate_texts(module, texts, 0.6, 6, nbest=2,
                                        splitting=splitting) == (
        batch_decode.translate_texts(module, texts, 0.6, 6, nbest=2))
