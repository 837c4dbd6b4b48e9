"""t2t-lite-decoder: one output line per input line whatever it holds, input order kept, the same
translations from the checkpoint (--model_dir) and from the SavedModel (--export_dir)."""
import os
import re

import pytest
import tensorflow as tf

from t2t_lite.data.tokenizers import load_tokenizer
from t2t_lite.inference import batch_decode
from t2t_lite.model_dir import files as model_dir_lib

EMPTY = {1, 2}


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


def test_one_line_per_input_line(checkpoint_decode, hostile_lines):
    output, _ = checkpoint_decode
    assert output.endswith(b"\n")
    lines = output.decode("utf-8").split("\n")[:-1]
    assert len(lines) == len(hostile_lines)
    for i, line in enumerate(lines):
        if i in EMPTY:
            assert line == ""
            continue
        fields = line.split("\t")
        assert len(fields) == 4, line  # score, hypothesis, score, hypothesis
        assert float(fields[0]) >= float(fields[2])
        assert fields[1] and fields[3]


def test_counts_are_reported(checkpoint_decode, model_dir, hostile_lines):
    _, stderr = checkpoint_decode
    tokenizer = load_tokenizer(model_dir_lib.vocab_path(model_dir))
    texts = [batch_decode.clean_line(line)[0] for line in hostile_lines]
    limit = 16 - 1  # max_length minus EOS
    truncated = sum(len(ids) > limit for ids in tokenizer.encode_batch(texts))
    assert truncated >= 1
    summary = [line for line in stderr.splitlines() if line.startswith("decoded 11 lines")]
    assert summary, stderr[-2000:]
    assert re.search(rf"2 empty, {truncated} truncated to {limit} tokens, 1 with invalid UTF-8",
                     summary[-1])
    assert "decoded 11/11 lines" in stderr  # progress


def test_export_gives_the_checkpoints_translations(cli, checkpoint_decode, export_version_dir,
                                                  hostile_lines):
    """stdin -> stdout through the SavedModel, with other batches (one line each): same lines."""
    result = cli("decoder", f"--export_dir={os.path.dirname(export_version_dir)}",
                 "--batch_tokens=1", stdin=b"\n".join(hostile_lines))
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    from_export = result.stdout.decode("utf-8").split("\n")[:-1]
    from_checkpoint = checkpoint_decode[0].decode("utf-8").split("\n")[:-1]
    best = [line.split("\t")[1] if line else "" for line in from_checkpoint]
    assert from_export == best


def test_user_errors_are_one_line(cli, tmp_path):
    result = cli("decoder", f"--model_dir={tmp_path}", stdin=b"hello\n")
    assert result.returncode == 1
    assert result.stderr.decode().strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in result.stderr.decode()


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


def test_bfloat16_decoding_is_wired_through_the_cli(cli, model_dir, hostile_lines, tmp_path):
    """--decode_precision=bfloat16 gives the bfloat16 module's lines, one per input line."""
    from t2t_lite.inference import translation_module

    result = cli("decoder", f"--model_dir={model_dir}", "--decode_precision=bfloat16",
                 stdin=b"\n".join(hostile_lines))
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    lines = result.stdout.decode("utf-8").split("\n")[:-1]
    module = translation_module.from_model_dir(model_dir, precision="bfloat16")
    defaults = batch_decode.settings(module)
    assert defaults["decode_precision"] == "bfloat16"
    expected, _ = batch_decode.decode_lines(module, hostile_lines, alpha=defaults["alpha"],
                                            extra_length=defaults["extra_length"])
    assert lines == expected and len(lines) == len(hostile_lines)


@pytest.mark.parametrize("tool, args, message", [
    ("decoder", ["--export_dir=E", "--decode_precision=bfloat16"],
     "error: --decode_precision needs --model_dir: an export's precision is fixed "
     "(t2t-lite-exporter --decode_precision)"),
    ("decoder", ["--model_dir=M", "--engine=ctranslate2", "--decode_precision=bfloat16"],
     "error: --decode_precision is TensorFlow's; CTranslate2 has --compute_type"),
    ("exporter", ["--model_dir=M", "--export_dir=C", "--format=ctranslate2",
                  "--decode_precision=bfloat16"],
     "error: --decode_precision applies to --format=savedmodel only (CTranslate2 has "
     "--quantization)"),
])
def test_precision_flags_in_the_wrong_place_are_one_line_errors(cli, tmp_path, tool, args,
                                                                message):
    result = cli(tool, *args, stdin=b"hello\n")
    assert result.returncode == 1
    assert result.stderr.decode().strip().splitlines()[-1] == message


# Two sentences of 12 words each: long enough (sentences.MIN_WORDS) to be split.
TWO_SENTENCES = ("The house is small and the dog ran away and we read books every day. "
                 "She said no and the cat sat on the mat and the dog ran away.")


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


def test_the_decoder_splits_sentences_on_request(cli, model_dir):
    lines = ["the house is small .", TWO_SENTENCES]
    stdin = "\n".join(lines).encode()
    split = cli("decoder", f"--model_dir={model_dir}", "--split_sentences=en", stdin=stdin)
    assert split.returncode == 0, split.stderr.decode()[-3000:]
    assert "1 split into sentences" in split.stderr.decode()
    # The test problem names no source language: "auto" translates whole lines.
    whole = cli("decoder", f"--model_dir={model_dir}", stdin=stdin)
    assert "0 split into sentences" in whole.stderr.decode()
    split_lines, whole_lines = (r.stdout.decode().split("\n")[:-1] for r in (split, whole))
    assert len(split_lines) == len(whole_lines) == 2
    assert split_lines[0] == whole_lines[0]
    bad = cli("decoder", f"--model_dir={model_dir}", "--split_sentences=xx", stdin=stdin)
    assert bad.returncode == 1
    assert bad.stderr.decode().strip().splitlines()[-1].startswith(
        "error: no sentence splitting rules for language 'xx'")
