"""t2t-lite-decoder: one output line per input line whatever it holds, input order kept, the same
translations from the checkpoint (--model_dir) and from the SavedModel (--export_dir)."""
import io
import os
import re

import pytest

from t2t_lite import exit_status
from t2t_lite.data.tokenizers import load_tokenizer
from t2t_lite.inference import batch_decode
from t2t_lite.model_dir import files as model_dir_lib
from tests.inference.test_batch_decode import TWO_SENTENCES

pytestmark = pytest.mark.slow  # every test here runs end to end

EMPTY = {1, 2}


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


def test_the_library_call_writes_the_tools_lines_and_returns_its_counts(
        checkpoint_decode, model_dir, hostile_lines, tmp_path):
    """file_decoding.decode_file, the decoder's one library call: the same output file, and the
    summary's counts as data."""
    from t2t_lite.file_decoding import DecodeOptions, decode_file

    source, output = tmp_path / "hostile.txt", tmp_path / "out.txt"
    source.write_bytes(b"\n".join(hostile_lines))
    progress = io.StringIO()
    stats = decode_file(DecodeOptions(model_dir=str(model_dir), decode_from_file=str(source),
                                      decode_to_file=str(output), nbest=2, print_scores=True),
                        progress=progress)
    assert output.read_bytes() == checkpoint_decode[0]
    untimed = re.compile(r" in \S+s \(\S+ lines/s\)")
    summary = [line for line in checkpoint_decode[1].splitlines()
               if line.startswith("decoded 11 lines")][-1]
    assert untimed.sub("", stats.summary()) == untimed.sub("", summary)
    assert (stats.lines, stats.empty, stats.invalid_utf8) == (11, 2, 1)
    assert "decoded 11/11 lines" in progress.getvalue()


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
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1].startswith("error: ")
    assert "Traceback" not in result.stderr.decode()


def test_bfloat16_decoding_is_wired_through_the_cli(cli, model_dir, hostile_lines, tmp_path):
    """--decode_precision=bfloat16 gives the bfloat16 module's lines, one per input line."""
    from t2t_lite.inference import translation_module

    result = cli("decoder", f"--model_dir={model_dir}", "--decode_precision=bfloat16",
                 stdin=b"\n".join(hostile_lines))
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    lines = result.stdout.decode("utf-8").split("\n")[:-1]
    module = translation_module.from_model_dir(model_dir, precision="bfloat16")
    defaults = module.settings
    assert defaults.values["decode_precision"] == "bfloat16"
    expected, _ = batch_decode.decode_lines(module, hostile_lines, alpha=defaults.alpha,
                                            extra_length=defaults.extra_length)
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
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1] == message


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
    assert bad.returncode == exit_status.USER_ERROR
    assert bad.stderr.decode().strip().splitlines()[-1].startswith(
        "error: no sentence splitting rules for language 'xx'")
