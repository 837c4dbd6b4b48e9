"""batch_decode: lines cleaned, batched longest first, formatted; each line tokenized once, a long
line translated sentence by sentence (the decoder CLI's own tests: test_decoder_cli.py)."""
import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.inference import batch_decode, batching, records
from t2t_lite.inference.translator import DecodeSettings


def test_clean_lines():
    assert batch_decode.clean_line(b"a\r") == ("a", False)
    assert batch_decode.clean_line(b"b\rc") == ("b c", False)
    assert batch_decode.clean_line(b"x\xffy") == ("x\ufffdy", True)
    assert batch_decode.clean_line("ok \ufffd".encode()) == ("ok \ufffd", False)


def test_batches_cover_every_line_longest_first_within_budget():
    lengths = [3, 0, 15, 7, 7, 1, 12, 2, 9, 4]
    batches = batching.plan_batches(lengths, batch_tokens=20)
    flat = [i for batch in batches for i in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert [lengths[i] for i in flat] == sorted(lengths, reverse=True)
    for batch in batches:
        width = max(lengths[i] for i in batch) + 1
        assert len(batch) == 1 or width * len(batch) <= 20


def test_nbest_format():
    hyps = [("das\tHaus", -1.25), ("ein Haus\r\n", -2.5)]
    assert records.format_hypotheses(hyps) == "das Haus\tein Haus  "
    assert records.format_hypotheses(hyps, print_scores=True) == (
        "-1.25\tdas Haus\t-2.5\tein Haus  ")
    assert records.format_hypotheses([], print_scores=True) == ""


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
        assert output.split("\t")[0] == records._one_line(best[0].decode("utf-8", "replace"))


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


# ---- the search's memory budget (search_budget) --------------------------------------------------
class _OldFits(batching.Budget):
    """The budget before bytes were counted: logits and beam steps, each within its share."""

    def __init__(self, batch_tokens, beam_size, vocab_size, extra_length, max_length):
        self.batch_tokens, self.beam_size, self.vocab_size = batch_tokens, beam_size, vocab_size
        self.extra_length, self.max_length = extra_length, max_length

    def __call__(self, rows, width, constraints=None):
        beams = rows * self.beam_size
        steps = max(1, min(width + self.extra_length, self.max_length))
        return (beams * self.vocab_size <= self.batch_tokens * (1 << 16)
                and beams * steps <= self.batch_tokens * 64)


# The demo's model (gin/small.gin, its 8,000-token vocabulary) and decode (beam 4, extra 50).
DEMO = dict(beam_size=4, vocab_size=8000, extra_length=50, max_length=128)
DEMO_DIMS = dict(num_layers=3, d_model=256, num_heads=4)
# Token counts of the demo's test split (562 gettext messages: {tokens: lines}).
DEMO_TEST_LENGTHS = {
    1: 9, 2: 17, 3: 21, 4: 43, 5: 53, 6: 50, 7: 52, 8: 61, 9: 46, 10: 37, 11: 37, 12: 29, 13: 17,
    14: 12, 15: 11, 16: 9, 17: 7, 18: 8, 19: 6, 20: 6, 21: 7, 22: 2, 24: 1, 25: 2, 27: 4, 28: 1,
    30: 1, 31: 2, 32: 1, 36: 2, 37: 1, 38: 2, 57: 1, 59: 1, 70: 1, 87: 1, 110: 1}


def _demo_plans(lengths, batch_tokens=4096):
    new = batching.search_budget(batch_tokens, **DEMO, **DEMO_DIMS)
    old = _OldFits(batch_tokens, *DEMO.values())
    return (batching.plan_batches(lengths, batch_tokens, fits=new),
            batching.plan_batches(lengths, batch_tokens, fits=old))


def test_the_demos_batches_are_as_before_at_the_default_batch_tokens():
    import random

    rng = random.Random(7)
    realistic = [n for n, count in DEMO_TEST_LENGTHS.items() for _ in range(count)]
    rng.shuffle(realistic)
    for lengths in (realistic, realistic * 8, [1] * 3000, [3] * 3000, [127] * 50,
                    [rng.randint(1, 127) for _ in range(5000)]):
        new, old = _demo_plans(lengths)
        assert new == old
    # At every width and the rows the source budget allows, the demo's step holds < 2 GiB.
    budget = batching.search_budget(4096, **DEMO, **DEMO_DIMS)
    for width in range(2, 129):
        rows = min(1024, 4096 // width)
        assert budget(rows, width)
        assert sum(budget.search_bytes(rows, width).values()) < 1.6 * 2 ** 30
        budget.check_line(width)


def test_the_byte_formula():
    budget = batching.search_budget(4096, **DEMO, **DEMO_DIMS)
    rows, width = 10, 21  # 20 tokens and EOS: a decode of 71 steps
    beams, steps = 40, 71
    assert budget.search_bytes(rows, width) == {
        "logits": 2 * beams * 8000 * 4,
        "cache": (beams * steps + rows * width) * 3 * 2 * 256 * 4,
        "attention": (beams * 4 * (steps + width) + rows * 4 * width * width) * 4,
        "constraints": 0}
    assert budget.limit == 4096 * batching.SEARCH_BYTES_PER_TOKEN == 2 * 2 ** 30


# ---- the constrained search's state in the budget (constraint_bytes) ----------------------------
def test_a_lines_constraint_shape_is_its_own_extents():
    import numpy as np

    from t2t_lite.inference.graph_prefixes import PREFIX_END

    positive, negative = np.zeros([3, 4, 3, 5], np.int32), np.zeros([3, 2, 3], np.int32)
    positive[0, 1, 0, :2] = 7  # 2 phrases (the first absent), 1 alternative, 2 tokens
    positive[1, 3, 2, 4] = 9
    negative[1, 1, 2] = 5
    negative[2, 0, :2] = [5, PREFIX_END]  # a `*` prefix form
    assert batching.constraint_shapes(positive, negative) == [
        (2, 1, 2, 0, 0, 0), (4, 3, 5, 2, 3, 0), (0, 0, 0, 1, 2, 1)]
    # No line with a negative phrase: encode_constraints' negative is [N, 0, U].
    assert batching.constraint_shapes(positive, np.zeros([3, 0, 1], np.int32))[1] == (
        4, 3, 5, 0, 0, 0)


def test_large_constraint_sets_split_a_batch_that_fits_without_them():
    budget = batching.search_budget(4096, **DEMO, **DEMO_DIMS)
    lengths = [3] * 800
    plain = batching.plan_batches(lengths, 4096, fits=budget)
    assert plain == [list(range(800))]
    # 3 phrases of one alternative of 3 tokens and a word end: the batch stays whole.
    small = [batching.ConstraintShape(3, 1, 4, 1, 2)] * 800
    assert batching.plan_batches(lengths, 4096, fits=budget, constraints=small) == plain
    # The largest shape the caps allow: the state splits the batch, each part within budget.
    large = batching.ConstraintShape(16, 16, 33, 128, 34)
    split = batching.plan_batches(lengths, 4096, fits=budget, constraints=[large] * 800)
    assert len(split) > 1 and sorted(sum(split, [])) == list(range(800))
    assert all(budget(len(batch), 4, large) for batch in split)
    assert budget.search_bytes(800, 4, large)["constraints"] > budget.limit
    # One such line among unconstrained ones: its batch holds the state for every line, the
    # batches after it none.
    mixed = [large] + [batching.ConstraintShape()] * 799
    first, *rest = batching.plan_batches(lengths, 4096, fits=budget, constraints=mixed)
    assert first == split[0] and rest == [list(range(len(first), 800))]


def test_prefix_forms_count_in_a_batchs_state():
    budget = batching.search_budget(4096, **DEMO, **DEMO_DIMS)
    lengths = [3] * 800
    without = batching.ConstraintShape(0, 0, 0, 16, 4)
    with_prefixes = without._replace(prefixes=16)
    assert (budget.constraint_bytes(4, with_prefixes) - budget.constraint_bytes(4, without)
            == budget.prefix_bytes(16, 4) > 16 * 4 * DEMO["vocab_size"])
    assert batching.plan_batches(lengths, 4096, fits=budget, constraints=[without] * 800) == [
        list(range(800))]
    split = batching.plan_batches(lengths, 4096, fits=budget, constraints=[with_prefixes] * 800)
    assert len(split) > 1 and all(budget(len(batch), 4, with_prefixes) for batch in split)


def test_the_demos_constrained_batches_are_as_before():
    realistic = [n for n, count in DEMO_TEST_LENGTHS.items() for _ in range(count)]
    budget = batching.search_budget(4096, **DEMO, **DEMO_DIMS)
    shapes = [batching.ConstraintShape(3, 1, 4, 1, 2)] * len(realistic)
    assert (batching.plan_batches(realistic, 4096, fits=budget, constraints=shapes)
            == batching.plan_batches(realistic, 4096, fits=budget))


class _ConstrainedDemoTranslator:
    """The demo's settings, every line 3 tokens, each constraint line "big" the largest shape the
    caps allow; records the lines of each search."""

    settings = DecodeSettings(**DEMO, alpha=0.6, **DEMO_DIMS)
    supports_constraints = True

    def __init__(self):
        self.searched = []

    def tokenize(self, texts):
        rows = len(texts.numpy())
        return {"ids": tf.constant([[5, 5, 5, 1]] * rows, tf.int32),
                "token_counts": tf.fill([rows], 3)}

    def encode_constraints(self, lines):
        import numpy as np

        big = np.array([line == b"big" for line in lines.numpy()])
        positive = np.zeros([len(big), 16, 16, 33], np.int32)
        positive[big] = 7
        negative = np.zeros([len(big), 128, 34], np.int32)
        negative[big] = 9
        return {"positive": tf.constant(positive), "negative": tf.constant(negative)}

    def translate_ids(self, ids, alpha, extra_length):
        self.searched.append(int(ids.shape[0]))
        return {"outputs": tf.fill([ids.shape[0], 4], "x"), "scores": tf.zeros([ids.shape[0], 4])}

    def translate_constrained_ids(self, ids, positive, negative, alpha, extra_length):
        result = self.translate_ids(ids, alpha, extra_length)
        return dict(result, unmet=tf.zeros([ids.shape[0], 4], tf.int32))


def test_the_decoder_plans_constrained_lines_with_their_state():
    translator = _ConstrainedDemoTranslator()
    texts = ["a b c"] * 800
    batch_decode.translate_texts(translator, texts, 0.6, 50, constraints=[""] * 800)
    assert translator.searched == [800]
    translator.searched = []
    batch_decode.translate_texts(translator, texts, 0.6, 50, constraints=["big"] * 800)
    assert len(translator.searched) > 1 and sum(translator.searched) == 800


# The export: each setting within its bound, the product not.
HUGE_VOCABULARY = dict(beam_size=1024, vocab_size=1 << 22, extra_length=50, max_length=1024)


def test_a_beam_over_a_huge_vocabulary_is_refused_naming_the_beam():
    from t2t_lite.errors import UserError
    from t2t_lite.model_dir import limits

    limits.check_bounds({name: value for name, value in HUGE_VOCABULARY.items()
                        if name != "extra_length"}, "the export")
    limits.check_beam_steps(1024, 1024, "the export")
    budget = batching.search_budget(4096, **HUGE_VOCABULARY, num_layers=1, d_model=2,
                                        num_heads=1)
    assert budget.search_bytes(1, 2)["logits"] == 2 * 16 * 2 ** 30
    assert not budget(1, 2)
    with pytest.raises(UserError) as error:
        budget.check_line(2)
    message = str(error.value)
    assert message.startswith("--beam_size=1024 with a 4,194,304-token vocabulary needs 16.0 GiB "
                              "of logits per search step for one line")
    assert "more than the 2.0 GiB --batch_tokens=4096 allows one line" in message
    assert message.endswith("lower --beam_size, or raise --batch_tokens")
    assert "\n" not in message
    # plan_batches refuses it before any batch, even a row that would run alone.
    with pytest.raises(UserError, match="lower --beam_size"):
        batching.plan_batches([1, 1, 5], 4096, fits=budget)
    # Beam 1 over the same vocabulary fits (32 MiB of logits).
    small = batching.search_budget(4096, **dict(HUGE_VOCABULARY, beam_size=1),
                                       num_layers=1, d_model=2, num_heads=1)
    small.check_line(1024)
    assert batching.plan_batches([1, 1, 5], 4096, fits=small) == [[2, 0, 1]]


def test_a_long_decode_on_a_wide_model_is_refused_naming_the_cache():
    from t2t_lite.errors import UserError

    budget = batching.search_budget(4096, beam_size=64, vocab_size=32000, extra_length=1024,
                                        max_length=2048, num_layers=24, d_model=4096,
                                        num_heads=32)
    with pytest.raises(UserError, match=r"^--beam_size=64 on a 100-token line decoding up to "
                                        r"1,125 tokens with 24 layers of d_model 4096 needs "
                                        r"[\d.,]+ GiB of decode cache .* lower --beam_size or "
                                        r"--extra_length, or raise --batch_tokens$"):
        budget.check_line(101)


def test_a_small_batch_tokens_does_not_refuse_what_the_default_decodes():
    base = dict(beam_size=4, vocab_size=37000, extra_length=50, max_length=256, num_layers=6,
                d_model=512, num_heads=8)
    budget = batching.search_budget(1, **base)
    budget.check_line(256)  # the longest line, alone
    assert batching.plan_batches([255, 3, 3], 1, fits=budget) == [[0], [1], [2]]
    # --batch_tokens past the default raises what one line may hold.
    assert batching.search_budget(8192, **base).line_limit == 4 * 2 ** 30


class _HugeVocabularyTranslator:
    """The issue's export as the decoder sees it: its settings, a tokenizer, and a search that
    must never run."""

    settings = DecodeSettings(**HUGE_VOCABULARY, alpha=0.6, num_layers=1, d_model=2, num_heads=1)
    supports_constraints = False

    def __init__(self):
        self.searches = 0

    def tokenize(self, texts):
        counts = [len(t.split()) for t in texts.numpy()]
        ids = [[5] * c + [1] + [0] * (max(counts) - c) for c in counts]
        return {"ids": tf.constant(ids, tf.int32), "token_counts": tf.constant(counts, tf.int32)}

    def translate_ids(self, *args):
        self.searches += 1
        raise AssertionError("searched")


def test_the_decoder_refuses_an_over_budget_line_before_searching():
    from t2t_lite.errors import UserError

    translator = _HugeVocabularyTranslator()
    with pytest.raises(UserError, match=r"^--beam_size=1024 with a 4,194,304-token vocabulary "
                                        r"needs 16.0 GiB of logits per search step"):
        batch_decode.decode_lines(translator, [b"a b c", b"d"], alpha=0.6, extra_length=50,
                                  postprocess=lambda source, output: output)
    assert translator.searches == 0


@pytest.mark.slow
def test_an_absurd_beam_on_the_tiny_model_is_one_error_line(model_dir, tmp_path):
    """Through the decoder CLI, with the byte budget scaled down (the tiny model cannot reach
    the real one): --beam_size=1024 is refused in one line naming it, nothing is written;
    its own beam decodes within the same budget."""
    import os
    import re
    import subprocess
    import sys

    from tests.conftest import REPO

    code = ("import sys; from t2t_lite.inference import batching; "
            "batching.SEARCH_BYTES_PER_TOKEN = 1 << 10; "
            "from t2t_lite.bin import decoder; sys.argv[0] = 't2t-lite-decoder'; decoder.run()")
    out = tmp_path / "out.txt"

    def decoder(*args):
        return subprocess.run([sys.executable, "-c", code, f"--model_dir={model_dir}",
                               f"--decode_to_file={out}", *args], input=b"the house\nthe dog\n",
                              capture_output=True, cwd=REPO, timeout=300,
                              env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))

    result = decoder("--beam_size=1024")
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors == stderr.strip().splitlines()[-1:], stderr[-2000:]
    assert re.match(r"error: --beam_size=1024 on a \d+-token line decoding up to \d+ tokens "
                    r"with 2 layers of d_model 32 needs [\d.]+ MiB of decode cache", errors[0])
    assert "lower --beam_size or --extra_length, or raise --batch_tokens" in errors[0]
    assert not out.exists() or out.read_bytes() == b""
    result = decoder("--beam_size=2")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert len(out.read_bytes().splitlines()) == 2
