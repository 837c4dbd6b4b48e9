"""The README's main job, shortened: tiny set, a few steps, a few test sentences, real CLIs."""
import json
import os
import subprocess
import sys

import pytest


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("demo") / "run"
    # Plumbing, not quality: 4 steps, a checkpoint every 2, so that the last 2 are averaged.
    command = [sys.executable, "-m", "t2t_lite.bin.demo", f"--run_dir={run_dir}",
               "--hparams_set=tiny", "--train_minutes=0.5", "--train_steps=4",
               "--test_sentences=12", "--average_last=2",
               "--gin_param=TrainConfig.checkpoint_steps = 2",
               "--gin_param=TrainConfig.checkpoint_minutes = 0"]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    first = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    second = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    return run_dir, first.stdout, second.stdout


@pytest.mark.slow  # trains end to end
def test_every_artefact_exists(demo_run):
    run_dir, _, _ = demo_run
    for relative in ("data", "model/run.json", "model/config.gin", "model/checkpoint",
                     "model/averaged/checkpoint", "test.src", "test.ref", "test.translation",
                     "results.json"):
        assert (run_dir / relative).exists(), relative
    results = json.loads((run_dir / "results.json").read_text())
    assert os.path.isfile(os.path.join(results["export"], "saved_model.pb"))
    assert results["test_sentences"] == 12
    assert 0.0 <= results["bleu"] <= 100.0 and "nrefs:1" in results["bleu_signature"]
    # The decoder's own rate excludes start-up and model load, so it beats the stage's.
    assert results["decode_sentences_per_second"] > results[
        "decode_sentences_per_second_with_startup"] > 0


@pytest.mark.slow  # trains end to end
def test_one_translated_line_per_test_sentence(demo_run):
    run_dir, _, _ = demo_run
    source = (run_dir / "test.src").read_text(encoding="utf-8").split("\n")
    translation = (run_dir / "test.translation").read_text(encoding="utf-8").split("\n")
    assert len(source) == len(translation) == 13  # 12 lines and the final newline


@pytest.mark.slow  # trains end to end
def test_output_names_the_results_and_rerun_reuses_finished_stages(demo_run):
    run_dir, first, second = demo_run
    for text in (first, second):
        assert "test BLEU" in text and f"run folder: {run_dir}" in text
        assert "lines/s in the decoder" in text
    # The decoder's stderr joins the demo's output (for its summary line), without TF's noise.
    assert "$ t2t-lite-decoder" in first and "decoded 12 lines in" in first
    assert "absl::InitializeLog" not in first and "cuda drivers" not in first
    # The re-run finds the step budget spent, so it neither exports nor decodes again.
    assert "$ t2t-lite-exporter" in first and "$ t2t-lite-exporter" not in second
    assert "$ t2t-lite-decoder" in first and "$ t2t-lite-decoder" not in second
    assert "resumed from" in second


def test_a_state_file_pointing_outside_the_run_is_not_trusted(tmp_path):
    from t2t_lite.demo import _export_exists

    export_dir = tmp_path / "run" / "export"
    for folder in (export_dir / "1", tmp_path / "elsewhere" / "1"):
        folder.mkdir(parents=True)
        (folder / "saved_model.pb").write_bytes(b"")
    assert _export_exists({"export_path": str(export_dir / "1")}, str(export_dir))
    assert not _export_exists({"export_path": str(tmp_path / "elsewhere" / "1")}, str(export_dir))
    assert not _export_exists({"export_path": str(export_dir / ".." / ".." / "elsewhere" / "1")},
                              str(export_dir))
    assert not _export_exists({"export_path": ["not", "a", "path"]}, str(export_dir))



def test_train_steps_alone_is_the_plan_with_no_budget():
    from t2t_lite.demo import DEFAULT_TRAIN_MINUTES, DemoOptions, budget_minutes

    assert budget_minutes(DemoOptions()) == DEFAULT_TRAIN_MINUTES == 20.0
    assert budget_minutes(DemoOptions(train_steps=300)) == 0.0
    assert budget_minutes(DemoOptions(train_steps=300, train_minutes=5)) == 5
    assert budget_minutes(DemoOptions(train_minutes=0)) == 0
