"""t2t-lite-score: the scores equal a teacher-forced pass of the model and the SavedModel's own
`score` signature; every pair gets its line, whatever it holds."""
import math

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text  # noqa: F401  the SavedModel's tokenizer ops

from t2t_lite import exit_status
from t2t_lite.ids import EOS_ID, PAD_ID
from t2t_lite.inference import scoring, translation_module
from t2t_lite.model_dir import loaded

PAIRS = [("the house is small .", "der Hund lief weg"), ("a cat sat on the mat", ""),
         ("", "die Katze"), ("we read books every day ?", "she said : no . der Hund"),
         ("the dog ran away", "the dog ran away")]


def _ids(tokenizer, texts, max_length):
    pieces = tokenizer.encode(tf.constant(texts))
    return translation_module.ids_with_eos(pieces, max_length).numpy()


def _teacher_forced(run, pairs, alpha):
    """log P(target + EOS | source) straight from the model's logits, and the GNMT score."""
    max_length = run.model_config.max_length
    sources = _ids(run.tokenizer, [s for s, _ in pairs], max_length)
    targets = _ids(run.tokenizer, [t for _, t in pairs], max_length)
    logits = run.model({"inputs": sources, "targets": targets}, training=False)
    log_probs = tf.nn.log_softmax(tf.cast(logits, tf.float64)).numpy()
    results = []
    for row, target in enumerate(targets):
        length = int((target != PAD_ID).sum())
        log_prob = sum(log_probs[row, i, target[i]] for i in range(length))
        assert target[length - 1] == EOS_ID
        results.append((log_prob, log_prob / ((5 + length) / 6) ** alpha))
    return results


def test_scores_equal_a_teacher_forced_pass(model_dir):
    run = loaded.load(model_dir)
    module = translation_module.TranslationModule(run.model, run.tokenizer, alpha=0.8)
    got = scoring.score_pairs(module, PAIRS, batch_tokens=16)  # several batches
    np.testing.assert_allclose(got, _teacher_forced(run, PAIRS, 0.8), rtol=1e-5, atol=1e-4)


def _read_scores(text):
    return [tuple(float(x) for x in line.split("\t")) for line in text.strip().split("\n")]


def test_the_library_call_scores_parallel_files_with_the_model_dirs_alpha(model_dir, tmp_path):
    """file_scoring.score_file, the scorer's one library call: a line per pair, the counts."""
    from t2t_lite.file_scoring import ScoreOptions, score_file

    source, target, out = tmp_path / "src", tmp_path / "tgt", tmp_path / "scores.txt"
    source.write_text("".join(s + "\n" for s, _ in PAIRS), encoding="utf-8")
    target.write_text("".join(t + "\n" for _, t in PAIRS), encoding="utf-8")
    stats = score_file(ScoreOptions(model_dir=str(model_dir), source_file=str(source),
                                    target_file=str(target), output_file=str(out), alpha=0.8))
    run = loaded.load(model_dir)
    np.testing.assert_allclose(_read_scores(out.read_text()), _teacher_forced(run, PAIRS, 0.8),
                               rtol=1e-5, atol=1e-4)
    assert (stats.pairs, stats.empty_target, stats.missing_side) == (5, 1, 0)


@pytest.mark.slow
def test_cli_scores_equal_the_saved_models_signature(cli, model_dir, export_version_dir,
                                                     tmp_path):
    pairs_file = tmp_path / "pairs.tsv"
    pairs_file.write_text("".join(f"{s}\t{t}\n" for s, t in PAIRS), encoding="utf-8")
    signature = tf.saved_model.load(export_version_dir).signatures["score"]
    expected = signature(inputs=tf.constant([s for s, _ in PAIRS]),
                         targets=tf.constant([t for _, t in PAIRS]))
    expected = list(zip(expected["log_prob"].numpy(), expected["score"].numpy()))

    from_export = cli("score", f"--export_dir={export_version_dir}",
                      f"--pairs_file={pairs_file}", "--batch_tokens=16")
    assert from_export.returncode == 0, from_export.stderr.decode()[-2000:]
    np.testing.assert_allclose(_read_scores(from_export.stdout.decode()), expected, atol=1e-4)

    source, target = tmp_path / "src", tmp_path / "tgt"
    source.write_text("".join(s + "\n" for s, _ in PAIRS), encoding="utf-8")
    target.write_text("".join(t + "\n" for _, t in PAIRS), encoding="utf-8")
    out = tmp_path / "scores.txt"
    from_checkpoint = cli("score", f"--model_dir={model_dir}", f"--source_file={source}",
                          f"--target_file={target}", f"--output_file={out}")
    assert from_checkpoint.returncode == 0, from_checkpoint.stderr.decode()[-2000:]
    np.testing.assert_allclose(_read_scores(out.read_text()), expected, atol=1e-4)
    assert "scored 5 pairs" in from_checkpoint.stderr.decode()


@pytest.mark.slow
def test_every_pair_gets_a_line_and_what_was_mended_is_counted(cli, model_dir, tmp_path):
    lines = [b"the house is small .\tdas Haus", b"no tab here", b"a cat\t", b"x\xff y\tz",
             b"the mat " * 200 + b"\tder Hund", b""]
    pairs_file = tmp_path / "pairs.tsv"
    pairs_file.write_bytes(b"\n".join(lines) + b"\n")
    result = cli("score", f"--model_dir={model_dir}", f"--pairs_file={pairs_file}")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    scores = _read_scores(result.stdout.decode())
    assert len(scores) == len(lines)
    assert all(math.isfinite(v) and v <= 0 for pair in scores for v in pair)
    summary = result.stderr.decode().strip().splitlines()[-1]
    assert summary.startswith("scored 6 pairs") and (
        "2 with a missing side, 3 with an empty target, 1 truncated, "
        "1 with invalid UTF-8 replaced") in summary

    # Parallel files of different lengths, padding asked for: the longer one's extra lines are
    # scored too.
    source, target = tmp_path / "src", tmp_path / "tgt"
    source.write_text("a\nb\nc\n", encoding="utf-8")
    target.write_text("x\n", encoding="utf-8")
    result = cli("score", f"--model_dir={model_dir}", f"--source_file={source}",
                 f"--target_file={target}", "--pad_shorter")
    assert result.returncode == 0 and len(_read_scores(result.stdout.decode())) == 3
    assert "2 with a missing side, 2 with an empty target" in result.stderr.decode()


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--pairs_file=/nonexistent"], "error: --pairs_file /nonexistent does not exist"),
    (["--source_file=a"], "error: --source_file and --target_file go together"),
    (["--export_dir={tmp}", "--alpha=1"], "error: --alpha needs --model_dir"),
    (["--export_dir={tmp}", "--checkpoint_path=x"], "error: --checkpoint_path needs --model_dir"),
])
def test_bad_flags_are_one_error_line(cli, model_dir, tmp_path, args, message):
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if not any(a.startswith("--export_dir") for a in args):
        args.append(f"--model_dir={model_dir}")
    result = cli("score", *args, stdin=b"a\tb\n")
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR and "Traceback" not in stderr
    assert stderr.strip().splitlines()[-1].startswith(message)
