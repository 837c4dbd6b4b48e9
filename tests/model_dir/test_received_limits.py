"""What a received model_dir or export may ask for: values that are each in range must not add
up to more memory or decode steps than the machine has. Each case runs through the real loader or
CLI and ends in one `error:` line (exit 1, nothing written), or runs within a budget."""
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import pytest
import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.decoding import translate
from t2t_lite.errors import UserError
from t2t_lite.inference import batching, saved_model
from t2t_lite.model_dir import limits, loaded

from tests.conftest import REPO, finished


def _edited(model_dir, tmp_path, edits):
    """A copy of model_dir with `edits` {(file, section or None, field): value} applied."""
    copy = tmp_path / "edited"
    shutil.copytree(model_dir, copy)
    for (name, section, field), value in edits.items():
        data = json.loads((copy / name).read_text())
        (data[section] if section else data)[field] = value
        (copy / name).write_text(json.dumps(data))  # NaN is written as JSON's NaN, and read back
    return str(copy)


def _one_error_line(result):
    stderr = result.stderr.decode()
    assert result.returncode == exit_status.USER_ERROR, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    return stderr.strip().splitlines()[-1]


# ---- decode memory follows from rows × beam × decode length ----------------------------------
def _plans(lengths, beam, vocab, extra, max_length=256, batch_tokens=4096):
    fits = batching.search_budget(batch_tokens, beam, vocab, extra, max_length)
    return (batching.plan_batches(lengths, batch_tokens),
            batching.plan_batches(lengths, batch_tokens, fits=fits))


def _held(batches, lengths, beam, extra, max_length=256):
    """The most beams and beam steps (cache positions) any batch holds."""
    beams = max(len(b) * beam for b in batches)
    steps = max(len(b) * beam * min(max(lengths[i] for i in b) + 1 + extra, max_length)
                for b in batches)
    return beams, steps


def test_beam_4_batches_are_the_source_budgets_alone():
    """The default (beam 4, --batch_tokens=4096, extra_length 50) batches as before, whatever
    the lengths, for vocabularies up to 65,536."""
    rng = random.Random(5)
    cases = [[1] * 3000, [255] * 50, [rng.randint(1, 255) for _ in range(5000)],
             [rng.choice([1, 2, 3, 60, 200]) for _ in range(3000)]]
    for lengths in cases:
        for vocab, extra in ((60, 6), (8000, 50), (37000, 50), (65536, 60)):
            before, after = _plans(lengths, 4, vocab, extra)
            assert after == before, (vocab, extra)


def test_a_large_beam_holds_about_what_beam_4_holds_on_the_same_lines():
    lengths = [1] * 3000  # one-token lines: the source budget alone allows 1024 rows
    _, beam_4 = _plans(lengths, 4, 37000, 50)
    before, beam_512 = _plans(lengths, 512, 37000, 50)
    beams_4, steps_4 = _held(beam_4, lengths, 4, 50)
    assert _held(before, lengths, 512, 50)[0] == 1024 * 512  # what the source budget allowed
    beams_512, steps_512 = _held(beam_512, lengths, 512, 50)
    assert beams_512 <= 1.25 * beams_4 and steps_512 <= 1.25 * steps_4
    assert sorted(i for b in beam_512 for i in b) == list(range(3000))


def test_a_large_vocabulary_makes_smaller_batches():
    lengths = [20] * 1000
    _, batches = _plans(lengths, 4, 1 << 20, 50)
    assert max(len(b) for b in batches) * 4 * (1 << 20) <= 4096 * batching.LOGITS_PER_TOKEN
    fits = batching.logits_budget(4096, 1 << 20)  # the scorer's: [rows, width, vocab]
    scored = batching.plan_batches(lengths, 4096, fits=fits)
    assert max(len(b) for b in scored) * 21 * (1 << 20) <= 4096 * batching.LOGITS_PER_TOKEN
    assert batching.plan_batches(lengths, 4096, fits=batching.logits_budget(4096, 37000)) \
        == batching.plan_batches(lengths, 4096)


def test_a_line_too_big_for_the_budgets_alone_is_a_batch_alone():
    fits = batching.search_budget(16, 1024, 60, 50, 256)  # 1,024 beam steps: no line fits
    assert batching.plan_batches([1, 1, 1], 16, fits=fits) == [[0], [1], [2]]


def _start_peak_rss(*args, stdin):
    """Starts the decoder CLI under a fresh parent that prints the child's peak RSS (KiB);
    _peak_rss_mib reads it. Each parent counts its own child alone, so two may run at once."""
    code = ("import resource, subprocess, sys; "
            "r = subprocess.run([sys.executable, '-m', 't2t_lite.bin.decoder', *sys.argv[1:]], "
            "stdin=sys.stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE); "
            "sys.stderr.write(r.stderr.decode()[-2000:]); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
            "sys.exit(r.returncode)")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    source = tempfile.TemporaryFile()
    source.write(stdin)
    source.seek(0)
    process = subprocess.Popen([sys.executable, "-c", code, *args], stdin=source,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=REPO)
    source.close()  # the child holds its own descriptor
    return process


def _peak_rss_mib(process):
    """The peak RSS in MiB of the decoder _start_peak_rss started."""
    stdout, _ = finished(process, timeout=600)
    return int(stdout.decode().split()[-1]) / 1024


@pytest.mark.slow
def test_configs_beam_512_on_one_token_lines_runs_in_about_beam_4s_memory(model_dir, tmp_path):
    # 512 one-token lines fit one batch's token budget: 512 rows × 512 beams would hold
    # gigabytes of cache (about 2 GiB more than beam 4 on this model) if the beam did not shrink
    # the rows a batch takes; shrunk, beam 512 takes 64 rows a batch, as it would of more lines.
    # The two decoders run at once, each measured alone.
    stdin = b"the\n" * 512
    edited = _edited(model_dir, tmp_path, {("configs.json", "decode", "beam_size"): 512})
    runs = [_start_peak_rss(f"--model_dir={model_dir}", "--beam_size=4",
                            "--parallel_searches=1", stdin=stdin),
            _start_peak_rss(f"--model_dir={edited}", "--parallel_searches=1", stdin=stdin)]
    try:
        beam_4, beam_512 = (_peak_rss_mib(run) for run in runs)
    finally:
        for run in runs:
            if run.poll() is None:
                run.kill()
                run.wait()
    assert beam_512 < beam_4 + 512, (beam_4, beam_512)


# ---- decode length: a step budget --------------------------------------------------------------
@pytest.mark.slow
def test_configs_max_length_and_extra_length_65536_are_refused(cli, model_dir, tmp_path):
    edited = _edited(model_dir, tmp_path, {("configs.json", "model", "max_length"): 65536,
                                           ("configs.json", "decode", "extra_length"): 65536})
    start = time.monotonic()
    line = _one_error_line(cli("decoder", f"--model_dir={edited}", stdin=b"the house\n"))
    assert "extra_length = 65536 is outside the sane range [-65536, 1024]" in line
    assert time.monotonic() - start < 60


@pytest.mark.slow
def test_a_huge_extra_length_decodes_at_most_the_step_budget(model_dir, tmp_path):
    """--extra_length past the step budget is clamped to it: on a model whose sinusoids reach
    65,536 positions, a 3-token line decodes at most 3 + 1 + 1,024 steps, not 65,536."""
    edited = _edited(model_dir, tmp_path, {("configs.json", "model", "max_length"): 65536})
    run = loaded.load(edited)
    assert translate.clamp_to_limit(2 ** 31 - 1, 65536) == translate.MAX_EXTRA_LENGTH == 1024
    search = tf.function(lambda ids, extra: translate.translate(
        run.model, ids, beam_size=1, alpha=0.6, extra_length=extra)[0], autograph=False)
    start = time.monotonic()
    sequences = search(tf.constant([[5, 6, 7, 1]], tf.int32), tf.constant(2 ** 31 - 1))
    assert sequences.shape[-1] == 4 + 1024
    assert time.monotonic() - start < 60


def test_ctranslate2_decodes_within_the_same_step_budget():
    from t2t_lite.inference import ctranslate2_engine

    # CTranslate2 counts generated tokens without the final EOS: 3 + 1 + 1,024 - 1.
    assert ctranslate2_engine.decode_limits(3, 2 ** 31 - 1, 65536) == 1027


def test_beam_times_max_length_is_bounded(model_dir, tmp_path):
    edited = _edited(model_dir, tmp_path, {("configs.json", "model", "max_length"): 65536,
                                           ("configs.json", "decode", "beam_size"): 1024})
    with pytest.raises(UserError, match=r"beam_size 1024 × max_length 65536 = 67,108,864 beam "
                                        r"steps per line is more than the sane 1,048,576"):
        loaded.load(edited)
    # The same through --beam_size over a model_dir whose own beam is small.
    from t2t_lite.inference import translation_module

    edited = _edited(model_dir, tmp_path / "flag", {("configs.json", "model", "max_length"): 65536})
    with pytest.raises(UserError, match=r"^decoding: beam_size 1024 × max_length 65536"):
        translation_module.from_model_dir(edited, beam_size=1024)


# ---- alpha -------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [float("nan"), float("inf"), 1e30, -6.0, "0.6", True])
def test_configs_alpha_must_be_a_finite_sane_number(model_dir, tmp_path, alpha):
    edited = _edited(model_dir, tmp_path, {("configs.json", "decode", "alpha"): alpha})
    with pytest.raises(UserError, match="alpha"):
        loaded.load(edited)


@pytest.mark.slow
def test_configs_alpha_nan_is_one_error_line(cli, model_dir, tmp_path):
    edited = _edited(model_dir, tmp_path, {("configs.json", "decode", "alpha"): float("nan")})
    out = tmp_path / "out.txt"
    line = _one_error_line(cli("decoder", f"--model_dir={edited}", f"--decode_to_file={out}",
                               stdin=b"the house\n"))
    assert "alpha = nan is outside the sane range [-5.0, 5.0]" in line
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize("tool, flag", [("decoder", "--decode_to_file"),
                                        ("score", "--output_file")])
def test_alpha_flag_nan_is_one_error_line_and_writes_nothing(cli, model_dir, tmp_path, tool,
                                                             flag):
    out = tmp_path / "out.txt"
    stdin = b"the house\tdas Haus\n" if tool == "score" else b"the house\n"
    line = _one_error_line(cli(tool, f"--model_dir={model_dir}", "--alpha=nan", f"{flag}={out}",
                               stdin=stdin))
    assert "alpha = nan is outside the sane range" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_check_bounds_takes_alpha_for_the_flag_paths():
    limits.check_bounds({"alpha": 0.6}, "--alpha")
    limits.check_bounds({"alpha": 1}, "--alpha")
    with pytest.raises(UserError, match=r"^--alpha: alpha = nan is outside the sane range"):
        limits.check_bounds({"alpha": float("nan")}, "--alpha")


# ---- the size of the model itself --------------------------------------------------------------
@pytest.mark.slow
def test_a_huge_embedding_is_refused_before_the_index_is_compared(cli, model_dir, tmp_path):
    # [4,194,304 × 65,536]: each bound holds, the product is 1 TiB of float32.
    edited = _edited(model_dir, tmp_path, {("run.json", None, "vocab_size"): 1 << 22,
                                           ("configs.json", "model", "d_model"): 1 << 16})
    start = time.monotonic()
    with pytest.raises(UserError, match=r"describes a model of [\d,]+ weights \([\d,.]+ GiB as "
                                        r"float32\), more than the sane 8,589,934,592"):
        loaded.load(edited)
    assert time.monotonic() - start < 5
    line = _one_error_line(cli("decoder", f"--model_dir={edited}", stdin=b"the house\n"))
    assert "GiB as float32" in line


def test_a_model_larger_than_the_machines_memory_is_refused(model_dir, monkeypatch):
    config = loaded.files.load_configs(model_dir)[0]
    elements = limits.model_elements(config, loaded.files.read_run_info(model_dir)["vocab_size"])
    monkeypatch.setattr(limits, "machine_memory", lambda: elements * 4 - 1)
    with pytest.raises(UserError, match=r"more than this machine's [\d.]+ GiB of memory"):
        loaded.load(model_dir)
    monkeypatch.setattr(limits, "machine_memory", lambda: elements * 4)
    loaded.load(model_dir)  # exactly fits


def test_model_elements_count_the_sinusoid_table(model_dir):
    run = loaded.load(model_dir)
    weights = sum(math.prod(w.shape) for w in run.model.weights)
    table = run.model_config.max_length * run.model_config.d_model
    assert limits.model_elements(run.model_config, run.model.vocab_size) == weights + table


# ---- exports carry the same checks -------------------------------------------------------------
def _edited_export(export_version_dir, tmp_path, **values):
    copy = tmp_path / "export" / "1"
    shutil.copytree(export_version_dir, copy)
    path = copy / saved_model.METADATA_FILE
    data = json.loads(path.read_text())
    data.update(values)
    path.write_text(json.dumps(data))
    return str(copy)


EXPORT_EDITS = [
    (dict(beam_size=10 ** 6), "beam_size = 1000000 is outside the sane range"),
    (dict(alpha=float("nan")), "alpha = nan is outside the sane range"),
    (dict(max_length=1 << 20), "max_length = 1048576 is outside the sane range"),
    (dict(extra_length=65536), "extra_length = 65536 is outside the sane range"),
    (dict(vocab_size=1 << 30), "vocab_size = 1073741824 is outside the sane range"),
    (dict(beam_size=1024, max_length=65536), "beam steps per line is more than the sane"),
]


@pytest.mark.slow
@pytest.mark.parametrize("values, message", EXPORT_EDITS)
def test_saved_model_settings_are_checked_before_it_loads(export_version_dir, tmp_path, values,
                                                          message):
    edited = _edited_export(export_version_dir, tmp_path, **values)
    with pytest.raises(UserError, match=message):
        saved_model.check_export(edited)


@pytest.mark.slow
def test_decoder_refuses_an_edited_export_in_one_line(cli, export_version_dir, tmp_path):
    edited = _edited_export(export_version_dir, tmp_path, alpha=float("nan"))
    out = tmp_path / "out.txt"
    line = _one_error_line(cli("decoder", f"--export_dir={edited}", f"--decode_to_file={out}",
                               stdin=b"the house\n"))
    assert "t2t_lite.json: alpha = nan is outside the sane range" in line
    assert not out.exists()


@pytest.mark.slow
def test_saved_model_weights_are_bounded_by_the_machine(export_version_dir, tmp_path,
                                                       monkeypatch):
    saved_model.check_export(export_version_dir)  # passes
    monkeypatch.setattr(limits, "machine_memory", lambda: 1000)
    with pytest.raises(UserError, match=r"t2t_lite.json describes a model of [\d,]+ weights"):
        saved_model.check_export(export_version_dir)
    # Without its metadata file, the variables' own index still bounds it.
    bare = tmp_path / "1"
    shutil.copytree(export_version_dir, bare)
    os.remove(bare / saved_model.METADATA_FILE)
    with pytest.raises(UserError, match=r"variables declares [\d,]+ weights"):
        saved_model.check_export(str(bare))


@pytest.mark.slow
def test_an_unedited_export_loads_and_describes_its_vocabulary(export_version_dir):
    settings = saved_model.load(export_version_dir).settings
    assert settings.vocab_size > 3
    limits.check_settings(dict(settings.values), "describe()")


@pytest.fixture(scope="module")
def ct2_folder(model_dir, tmp_path_factory):
    pytest.importorskip("ctranslate2")
    from t2t_lite.export import exporters

    return exporters.make_exporter("ctranslate2").export(
        model_dir, str(tmp_path_factory.mktemp("ct2") / "model"))


@pytest.mark.parametrize("values, message", EXPORT_EDITS)
def test_ctranslate2_settings_are_checked_before_it_loads(ct2_folder, tmp_path, values, message):
    from t2t_lite.inference import ctranslate2_engine

    copy = tmp_path / "ct2"
    shutil.copytree(ct2_folder, copy)
    path = copy / saved_model.METADATA_NAME
    data = json.loads(path.read_text())
    data.update(values)
    path.write_text(json.dumps(data))
    with pytest.raises(UserError, match=message):
        ctranslate2_engine.CTranslate2Translator(str(copy))
    ctranslate2_engine.CTranslate2Translator(ct2_folder)  # the unedited folder loads


@pytest.mark.slow
def test_exporters_refuse_settings_a_reader_would_refuse(cli, model_dir, tmp_path):
    for args in (["--alpha=nan"], ["--format=ctranslate2", "--alpha=nan"]):
        export_dir = tmp_path / "exports"
        line = _one_error_line(cli("exporter", f"--model_dir={model_dir}",
                                   f"--export_dir={export_dir}", *args))
        assert "alpha = nan is outside the sane range" in line
        assert not export_dir.exists() or not os.listdir(export_dir)
