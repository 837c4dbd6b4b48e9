"""t2t-lite-table3: a tiny two-row table end to end (one row killed mid-training and resumed, the
finished row skipped), the CPU mapping of every row against its set, failed rows, bad input."""
import dataclasses
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import pytest

from t2t_lite import exit_status, hparams, problems
from t2t_lite.config import MODEL_DIMENSIONS
from t2t_lite.errors import UserError
from t2t_lite.table3 import mapping, row_runner, selection
from t2t_lite.table3.machine import machine
from t2t_lite.table3.paper import PAPER, PAPER_BY_ROW, ROWS, set_name
from t2t_lite.table3.result import DevMetrics, RowResult, RowSeconds
from t2t_lite.table3.run import TableOptions, run_table
from t2t_lite.table3.table import DEV_REFERENCE, DEV_SOURCE, DEV_TRANSLATION, FAILURE, Table
from t2t_lite.models.params import analytic_parameter_count

ROOT = pathlib.Path(__file__).resolve().parents[2]
PROBLEM = "algorithmic_copy"
PROBLEM_PARAMS = ["num_symbols=8", "max_length=8", "train_samples=2000", "eval_samples=24"]
# The tiny model and a handful of steps, on top of every row's set and the CPU mapping; a
# checkpoint every 5 steps so that a row can be killed between two.
TINY = ["ModelConfig.num_layers = 1", "ModelConfig.d_model = 16", "ModelConfig.d_ff = 32",
        "ModelConfig.num_heads = 2", "ModelConfig.d_k = 8", "ModelConfig.d_v = 8",
        "MAX_LENGTH = 24", "TrainConfig.batch_tokens = 512",
        "TrainConfig.max_tokens_per_replica = 512", "TrainConfig.checkpoint_steps = 5",
        "TrainConfig.checkpoint_minutes = 0.0", "TrainConfig.eval_batches = 1",
        "TrainConfig.log_every = 10", "TrainConfig.mixed_precision = 'float32'"]
STEPS = 30
ENV = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
# As a user runs it: the tool hides TensorFlow's start-up lines itself, so stderr is its own.
USER_ENV = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("table3_data") / "data"
    problems.build(PROBLEM, PROBLEM_PARAMS).generate_data(str(folder))
    return folder


def command(data_dir, out_dir, *extra):
    return [sys.executable, "-m", "t2t_lite.bin.table3", f"--problem={PROBLEM}",
            *[f"--problem_param={p}" for p in PROBLEM_PARAMS], f"--data_dir={data_dir}",
            f"--out_dir={out_dir}", *[f"--gin_param={g}" for g in TINY], *extra]


# ---- end to end ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def table_run(data_dir, tmp_path_factory):
    """The table run, killed (table and trainer) once the second row has a checkpoint, then
    re-run with the same command: (out_dir, first run's output, second run's CompletedProcess)."""
    out_dir = tmp_path_factory.mktemp("table3") / "out"
    log = out_dir.parent / "first.log"
    run = command(data_dir, out_dir, "--rows=D_smoothing0,base", "--scale=cpu",
                  f"--train_steps={STEPS}", "--dev_sentences=12")
    with open(log, "w") as output:
        first = subprocess.Popen(run, stdout=output, stderr=subprocess.STDOUT, env=ENV,
                                 cwd=ROOT, start_new_session=True)
        killed_row = out_dir / "D_smoothing0" / "model" / "checkpoint"
        deadline = time.monotonic() + 300
        while (not killed_row.exists() and first.poll() is None
               and time.monotonic() < deadline):
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)  # the table and the row's trainer
        first.wait()
    first_output = log.read_text()
    assert killed_row.exists(), first_output[-3000:]
    second = subprocess.run(run, capture_output=True, text=True, env=ENV, cwd=ROOT, timeout=600)
    assert second.returncode == 0, first_output[-2000:] + second.stdout[-3000:] + second.stderr[-3000:]
    return out_dir, first_output, second


@pytest.mark.slow
def test_a_killed_row_resumes_and_a_finished_row_is_skipped(table_run):
    out_dir, first, second = table_run
    # The first run finished base, and was killed in D_smoothing0's training.
    assert "[1/2] base: done: dev perplexity" in first
    assert "[2/2] D_smoothing0: training 30 steps, eps_ls=0.0" in first
    assert "table eta" in first
    assert "[D_smoothing0] step" in first or "[D_smoothing0] plan:" in first
    out = second.stdout
    assert "[1/2] base: finished before, skipped" in out
    assert "[base] $ t2t-lite-trainer" not in out
    assert "[D_smoothing0] resumed from" in out
    assert "[2/2] D_smoothing0: done: dev perplexity" in out
    assert (f"[D_smoothing0] $ t2t-lite-decoder --model_dir={out_dir / 'D_smoothing0' / 'model'} "
            f"--checkpoint_path=") in out
    assert "[D_smoothing0] decoded 12 lines in " in out


@pytest.mark.slow
def test_the_table_files_hold_every_row_as_table3_evaluates_it(table_run):
    out_dir, _, _ = table_run
    record = json.loads((out_dir / "table3.json").read_text())
    assert record["problem"] == PROBLEM and record["scale"] == "cpu"
    assert record["steps"] == STEPS and record["budget"] == {"train_steps": STEPS}
    assert record["data_dir"] == str(pathlib.Path(record["data_dir"]).resolve())
    assert record["precision"] == "float32" and record["machine"]["cores"] >= 1
    assert set(record["rows"]) == {"base", "D_smoothing0"}
    for row, entry in record["rows"].items():
        assert entry["status"] == "done" and entry["model_dir"] == str(out_dir / row / "model")
        result = entry["evaluation"]
        # The last checkpoint, not averaged, decoded with beam 4 and alpha 0.6.
        assert result["checkpoint"].endswith(f"ckpt-{STEPS}") and result["steps"] == STEPS
        assert result["averaged"] is False and not (out_dir / row / "model" / "averaged").exists()
        assert (result["beam_size"], result["alpha"]) == (4, 0.6)
        assert 1.0 < result["dev"]["perplexity"] < 20.0  # 8 symbols + EOS: at most ~11 at random
        assert 0.0 <= result["bleu"] <= 100.0 and "nrefs:1" in result["bleu_signature"]
        assert result["seconds"]["train"] > 0 and result["seconds"]["evaluate"] > 0
        assert entry["seconds"] == result["seconds"]
        lines = (out_dir / row / "dev.translation").read_text().split("\n")
        assert len(lines) == 13  # --dev_sentences=12, and the final newline
        decoded = json.loads((out_dir / row / "decode_summary.json").read_text())
        assert decoded["lines"] == 12 and decoded["lines_per_second"] > 0
    base, row = (record["rows"][r]["evaluation"] for r in ("base", "D_smoothing0"))
    assert base["columns"]["eps_ls"] == 0.1 and row["columns"]["eps_ls"] == 0.0
    assert row["varied"] == {"label_smoothing": 0.0}
    # The CPU mapping came first, the user's bindings last (they win).
    assert base["bindings"][:6] == mapping.cpu_bindings("base")[:6]
    assert base["bindings"][-len(TINY):] == TINY
    markdown = (out_dir / "table3.md").read_text()
    for text in ("| N | d_model | d_ff | h | d_k | d_v | P_drop | eps_ls | steps | PPL (dev) | "
                 "BLEU (dev) | params ×10^6 | paper PPL | paper BLEU | paper params ×10^6 |",
                 "| base | `base` | 1 | 16 | 32 | 2 | 8 | 8 | 0.1 | 0.1 | 30 |",
                 "| (D) | `D_smoothing0` |  |  |  |  |  |  |  | 0.0 |  |",
                 "| 4.92 | 25.8 | 65 |", "| 4.67 | 25.3 |  |", "AMD" if "AMD" in
                 record["machine"]["cpu"] else "cores", "Precision: float32",
                 "no checkpoint averaging", "beam-4, alpha-0.6", "table3.png"):
        assert text in markdown, text
    # The paper's label-smoothing finding, checked on the two rows' own dev output.
    smoothing = next(f for f in record["findings"] if f["key"] == "smoothing")
    comparison, = smoothing["comparisons"]
    assert (comparison["row"], comparison["against"]) == ("D_smoothing0", "base")
    assert comparison["bleu"] == pytest.approx(row["bleu"], abs=1e-6)
    assert comparison["ppl"] == row["dev"]["perplexity"] and 0 < comparison["p_value"] <= 1
    assert "## The paper's findings on this table" in markdown
    assert "- **Label smoothing hurts perplexity but improves BLEU**: " in markdown
    rows = (out_dir / "table3.csv").read_text().splitlines()
    assert rows[0].startswith("group,row,status,reason,N,d_model") and len(rows) == 3
    assert rows[1].startswith("base,base,done,,1,16,32,2,8,8,0.1,0.1,sinusoid,30,")
    assert (out_dir / "table3.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_an_out_dir_of_another_problem_or_scale_is_refused_and_kept(table_run, data_dir):
    out_dir, _, _ = table_run
    before = {p: p.read_bytes() for p in out_dir.iterdir() if p.is_file()}
    runs = [command(data_dir, out_dir, "--scale=paper", f"--train_steps={STEPS}"),
            [a.replace(PROBLEM, "algorithmic_reverse") for a in command(data_dir, out_dir)]]
    # Both at once (each only reads the table to refuse it): their start-ups overlap.
    processes = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env=USER_ENV, cwd=ROOT) for args in runs]
    for process in processes:
        _, err = process.communicate(timeout=300)
        assert process.returncode == exit_status.USER_ERROR, err[-2000:]
        errors = [l for l in err.splitlines() if l.strip()]
        assert len(errors) == 1 and errors[0].startswith("error: "), err
        assert "holds a Table 3 of another run" in errors[0] and "--out_dir" in errors[0]
    assert {p: p.read_bytes() for p in out_dir.iterdir() if p.is_file()} == before


# ---- bad input ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_unknown_rows_and_missing_data_are_one_error_line_and_nothing_is_written(
        data_dir, tmp_path):
    empty = tmp_path / "empty_data"
    empty.mkdir()
    cases = {
        "unknown": (command(data_dir, tmp_path / "out1", "--rows=base,A_heads2,Z"),
                    ["unknown Table 3 rows 'A_heads2', 'Z'", "A_heads1_dk512"]),
        "no data": (command(empty, tmp_path / "out2", "--rows=base"),
                    ["t2t-lite-datagen", str(empty)]),
        "both budgets": (command(data_dir, tmp_path / "out3", "--train_steps=5",
                                 "--train_minutes=1"), ["not both"]),
    }
    processes = {name: subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        text=True, env=USER_ENV, cwd=ROOT)
                 for name, (args, _) in cases.items()}
    for name, process in processes.items():
        out, err = process.communicate(timeout=300)
        assert process.returncode == exit_status.USER_ERROR, (name, err[-2000:])
        errors = [l for l in err.splitlines() if l.strip()]
        assert len(errors) == 1 and errors[0].startswith("error: "), (name, err)
        for text in cases[name][1]:
            assert text in errors[0], (name, errors[0])
    assert not any((tmp_path / f"out{i}").exists() for i in (1, 2, 3))


def test_a_folder_that_is_not_a_table_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(UserError, match="holds files but no table3.json"):
        Table(str(tmp_path))


def test_rows_are_selected_by_name_or_group_in_the_papers_order():
    assert selection.select_rows("D_smoothing0,base") == ["base", "D_smoothing0"]
    assert selection.select_rows("B,e") == ["B_dk16", "B_dk32", "E_learned_positions"]
    assert selection.select_rows(None) == list(ROWS) == selection.select_rows("all")
    with pytest.raises(UserError, match="unknown Table 3 row 'F'"):
        selection.select_rows("F")


# ---- the paper's table and the CPU mapping --------------------------------------------------------

def test_every_row_is_a_set_and_the_paper_numbers_are_the_papers():
    sets = [s.split("/", 1)[1] for s in hparams.list_hparams_sets() if s.startswith("table3/")]
    assert sorted(sets) == sorted(ROWS)
    assert [PAPER_BY_ROW[r].group for r in ROWS] == (
        ["base"] + ["A"] * 4 + ["B"] * 2 + ["C"] * 7 + ["D"] * 4 + ["E"])
    paper = {r.name: (r.ppl, r.bleu) for r in PAPER}
    assert paper["base"] == (4.92, 25.8) and paper["A_heads1_dk512"] == (5.29, 24.9)
    assert paper["C_dmodel1024_dk128"] == (4.66, 26.0) and paper["E_learned_positions"] == (
        4.92, 25.7)
    # The sets' analytic size at the paper's ~37k vocabulary is the paper's column (within 7%).
    for row in PAPER:
        if row.params:
            count = analytic_parameter_count(hparams.load(set_name(row.name))[0], 37000)
            assert abs(count / 1e6 - row.params) / row.params < 0.07, (row.name, count)


def _fields(configs):
    values = {}
    for config in configs:
        values.update(dataclasses.asdict(config))
        if hasattr(config, "key_dim"):
            values.update(d_k=config.key_dim, d_v=config.value_dim)
    return values


def test_the_cpu_mapping_of_every_row_varies_what_its_set_varies_in_proportion():
    paper_base = _fields(hparams.load("table3/base"))
    cpu_base = _fields(hparams.load("table3/base", mapping.cpu_bindings("base")))
    assert {k: cpu_base[k] for k in MODEL_DIMENSIONS} == mapping.CPU_BASE
    assert cpu_base["batch_tokens"] == 4096 and cpu_base["budget_schedule"] is True
    for row in ROWS:
        paper = _fields(hparams.load(set_name(row)))
        mapped = _fields(hparams.load(set_name(row), mapping.cpu_bindings(row)))
        paper_changes = {k for k in paper if paper[k] != paper_base[k]}
        cpu_changes = {k for k in mapped if mapped[k] != cpu_base[k]}
        assert paper_changes == cpu_changes, row
        for name in paper_changes:
            if name not in MODEL_DIMENSIONS:  # dropout, smoothing, positions: the paper's
                assert mapped[name] == paper[name], (row, name)
            elif name == "num_heads" and mapped[name] == 1:  # one head cannot be halved
                assert paper[name] / paper_base[name] < 1 / cpu_base[name]
            elif name in ("d_k", "d_v"):  # the total width h * d_k keeps its ratio
                assert (mapped[name] * mapped["num_heads"] / (cpu_base[name] * cpu_base["num_heads"])
                        == paper[name] * paper["num_heads"] / (paper_base[name] *
                                                               paper_base["num_heads"])), row
            else:
                assert mapped[name] / cpu_base[name] == paper[name] / paper_base[name], (row, name)
        # Rows A keep h * d_k = d_model, as in the paper.
        if row.startswith("A_"):
            assert mapped["num_heads"] * mapped["d_k"] == mapped["d_model"]
    heads = {r: _fields(hparams.load(set_name(r), mapping.cpu_bindings(r)))["num_heads"]
             for r in ROWS if r.startswith("A_")}
    assert heads == {"A_heads1_dk512": 1, "A_heads4_dk128": 2, "A_heads16_dk32": 8,
                     "A_heads32_dk16": 16}


def test_docs_show_the_mapping_the_code_applies():
    docs = (ROOT / "docs" / "table3.md").read_text(encoding="utf-8")
    assert mapping.mapping_markdown() in docs


# ---- failures, minutes -----------------------------------------------------------------------------

def test_the_dev_decode_is_the_decoders_call_its_stats_printed_and_kept(tmp_path, monkeypatch):
    from t2t_lite import isolated
    from t2t_lite.file_decoding import DecodeOptions, decode_file

    calls, lines = [], []
    stats = {"lines": 12, "empty": 0, "truncated": 1, "invalid_utf8": 0, "split": 0,
             "bom_stripped": 0, "seconds": 2.0, "max_source_tokens": 24}
    from t2t_lite.inference.batch_decode import DecodeStats

    def call(*args, result_type=None):
        calls.append((*args, result_type))
        return result_type(**stats)  # as isolated.call builds it back

    monkeypatch.setattr(isolated, "call", call)
    table = Table(str(tmp_path / "out"))
    (tmp_path / "out" / "base").mkdir(parents=True)  # the row's folder, as training leaves it
    runner = row_runner.RowRunner(table, None, None, lambda line, **_: lines.append(line))
    decoded = runner.decode("base", "M", "M/ckpt-30", "T")
    (function, options, prefix, _, result_type), = calls
    assert (function, prefix, result_type) == (decode_file, "[base]", DecodeStats)
    assert options == DecodeOptions(model_dir="M", checkpoint_path="M/ckpt-30", beam_size=4,
                                    alpha=0.6, decode_from_file=table.path(DEV_SOURCE),
                                    decode_to_file="T", start_over=True)
    summary = tmp_path / "out" / "base" / "decode_summary.json"
    assert json.loads(summary.read_text()) == DecodeStats(**stats).as_dict()
    assert DecodeStats(**stats).as_dict()["lines_per_second"] == 6.0
    assert lines == [
        f"[base] $ t2t-lite-decoder --model_dir=M --checkpoint_path=M/ckpt-30 "
        f"--decode_from_file={table.path(DEV_SOURCE)} --decode_to_file=T --beam_size=4 "
        f"--alpha=0.6 --start_over --summary_file={summary}",
        f"[base] {decoded.summary()}"]
    assert decoded.summary().startswith("decoded 12 lines in 2.0s (6.0 lines/s); 0 empty, 1 "
                                        "truncated to 24 tokens")

    def refused(*args, **kwargs):
        raise isolated.Failed(1, "--beam_size must be >= 1, got 0", [])

    monkeypatch.setattr(isolated, "call", refused)
    with pytest.raises(row_runner.RowFailed, match="^t2t-lite-decoder: --beam_size must be"):
        runner.decode("base", "M", "M/ckpt-30", "T")


def _fake_result(row, steps, ppl, bleu):
    return RowResult(
        row=row, status="done", set=set_name(row), bindings=[], model_dir="M", checkpoint="C",
        steps=steps, averaged=False, columns={}, varied={}, params=1000, precision="float32",
        dev=DevMetrics(loss=1.0, perplexity=ppl, token_accuracy=0.5), bleu=bleu, chrf=50.0,
        bleu_signature="nrefs:1", bleu_report="", beam_size=4, alpha=0.6, translation="T",
        seconds=RowSeconds(train=10.0 * steps, evaluate=5.0, perplexity=2.0, decode=3.0),
        machine=machine(), finished="2026-12-04 00:00:00")


def test_a_failed_row_is_reported_the_others_run_and_a_rerun_tries_it_again(
        data_dir, tmp_path, monkeypatch):
    calls = []
    fail = {"C_layers2"}

    def run(self, row, plan, steps, minutes):
        calls.append((row, steps, minutes))
        if row in fail:
            raise row_runner.RowFailed("t2t-lite-trainer: training diverged at step 7: loss is nan")
        # A finished row leaves its dev translation, which the findings read.
        shutil.copyfile(self.table.path(DEV_REFERENCE), self.table.row_path(row, DEV_TRANSLATION))
        # Under --train_minutes base sets everyone's steps: it reaches 17.
        return _fake_result(row, 17 if minutes else steps, 5.0 + len(calls), 20.0 + len(calls))

    monkeypatch.setattr(row_runner.RowRunner, "run", run)
    lines = []
    options = TableOptions(problem=PROBLEM, data_dir=str(data_dir),
                           out_dir=str(tmp_path / "out"), rows="C_layers2,C_layers4",
                           train_minutes=0.5, gin_params=TINY, problem_params=PROBLEM_PARAMS)
    record = run_table(options, echo=lambda *a, **k: lines.append(" ".join(a)))
    # base was not selected, but --train_minutes trains it first: its steps are the budget.
    assert calls == [("base", None, 0.5), ("C_layers2", 17, None), ("C_layers4", 17, None)]
    assert record["steps"] == 17
    assert {r: e["status"] for r, e in record["rows"].items()} == {
        "base": "done", "C_layers2": "failed", "C_layers4": "done"}
    assert "diverged at step 7" in record["rows"]["C_layers2"]["reason"]
    markdown = (tmp_path / "out" / "table3.md").read_text()
    assert "| failed |" in markdown
    assert "- `C_layers2` failed: t2t-lite-trainer: training diverged at step 7" in markdown
    assert "base trained 0.5 minutes and reached step 17" in markdown
    assert any("C_layers2: FAILED" in line for line in lines)
    assert any("table eta" in line for line in lines)

    fail.clear()
    calls.clear()
    lines.clear()
    record = run_table(options, echo=lambda *a, **k: lines.append(" ".join(a)))
    assert calls == [("C_layers2", 17, None)]  # finished rows skipped, the failed one retried
    assert any("failed before (t2t-lite-trainer: training diverged" in l for l in lines)
    assert all(e["status"] == "done" for e in record["rows"].values())
    assert not (tmp_path / "out" / "C_layers2" / FAILURE).exists()


def test_a_finished_rows_missing_translation_is_named_in_one_error(data_dir, tmp_path,
                                                                   monkeypatch):
    def run(self, row, plan, steps, minutes):
        shutil.copyfile(self.table.path(DEV_REFERENCE), self.table.row_path(row, DEV_TRANSLATION))
        return _fake_result(row, steps, 5.0, 20.0)

    monkeypatch.setattr(row_runner.RowRunner, "run", run)
    options = TableOptions(problem=PROBLEM, data_dir=str(data_dir), out_dir=str(tmp_path / "out"),
                           rows="base,E_learned_positions", train_steps=2, gin_params=TINY,
                           problem_params=PROBLEM_PARAMS)
    run_table(options, echo=lambda *a, **k: None)
    assert "## The paper's findings on this table" in (tmp_path / "out" / "table3.md").read_text()
    translation = tmp_path / "out" / "E_learned_positions" / DEV_TRANSLATION
    os.remove(translation)
    with pytest.raises(UserError) as error:  # the tool prints it as its one "error:" line
        run_table(options, echo=lambda *a, **k: None)
    assert str(error.value) == ("cannot check the paper's findings on row E_learned_positions: "
                                f"translation file not found: {translation}")


def test_a_table_is_the_same_under_a_problems_alias(tmp_path):
    from t2t_lite.table3.table import table_identity

    def identity(problem):
        return table_identity(TableOptions(problem=problem, data_dir=str(tmp_path),
                                           out_dir=str(tmp_path / "O")), "cpu", None)

    assert identity("wmt14_ende") == identity("translate_ende_wmt14")
    assert identity("wmt14_ende")["problem"] == "translate_ende_wmt14"
    assert identity("translate_ende_gettext")["problem"] == "translate_ende_gettext"


def test_a_result_written_before_the_row_result_type_reads_back_and_writes_the_same():
    """result.json as a table of 2026-12-04 (before RowResult) wrote it: read as a RowResult
    (the row is finished, not run again), and written back key for key as it was."""
    from t2t_lite.table3.result import RowResult

    path = ROOT / "tests" / "table3" / "data" / "result_2026-12-04.json"
    values = json.loads(path.read_text())
    result = RowResult.from_json(values)
    assert result.steps == 30 and result.dev.perplexity == values["dev"]["perplexity"]
    assert result.seconds.wall_this_run == values["seconds"]["wall_this_run"]
    assert json.dumps(result.to_json(), indent=2) + "\n" == path.read_text()
    assert RowResult.from_json(dict(values, dev={"loss": 1.0})) is None  # damaged: run again
    assert RowResult.from_json(dict(values, status="failed")) is None
    assert RowResult.from_json([]) is None


def test_a_rows_steps_are_its_trainers_result_and_its_command_the_options_that_ran(
        tmp_path, monkeypatch):
    from t2t_lite import command_line, isolated
    from t2t_lite.table3.plan import RowPlan
    from t2t_lite.table3.result import RowResult
    from t2t_lite.training.trainer import TrainOptions, TrainResult, train

    calls, lines = [], []
    trained = TrainResult(step=29, stopped_because="train_steps", last_checkpoint="ckpt-29",
                          best_metrics=None, total_flops=1.0, last_train_metrics=None)
    monkeypatch.setattr(isolated, "call", lambda *args, **kwargs: calls.append(args) or trained)
    configs = hparams.load("tiny", [])
    plan = RowPlan("base", ["ModelConfig.d_model = 16"], configs, 100, 1.0)
    options = TableOptions(problem=PROBLEM, data_dir="D", out_dir=str(tmp_path),
                           problem_params=PROBLEM_PARAMS)
    runner = row_runner.RowRunner(Table(str(tmp_path / "out")), None, options,
                                  lambda line, **_: lines.append(line))
    assert runner.train("base", plan, 30, None) is trained
    (function, sent, prefix, _), = calls
    assert (function, prefix, sent.configs, sent.train_steps) == (train, "[base]", configs, 30)
    printed = command_line.to_args(sent, omit=("configs",))
    assert lines == [f"[base] {command_line.shown('trainer', printed)}"]
    assert dataclasses.replace(sent, configs=None) == TrainOptions(
        problem=PROBLEM, problem_params=PROBLEM_PARAMS, problem_modules=[],
        data_dir=os.path.abspath("D"),
        model_dir=str(tmp_path / "out" / "base" / "model"), hparams_set="table3/base",
        gin_params=["ModelConfig.d_model = 16"], bleu_sentences=0, train_steps=30,
        train_minutes=0.0)

    monkeypatch.setattr(row_runner.RowRunner, "train", lambda *args: trained)
    dev = DevMetrics(loss=2.0, perplexity=7.4, token_accuracy=0.3)
    monkeypatch.setattr(row_runner.RowRunner, "evaluate", lambda *args: (
        "M/ckpt-30", dev, {"bleu": 1.0, "chrf": 2.0, "signature": "s"}, "report", 1.0, 2.0))
    monkeypatch.setattr(row_runner, "trained_seconds", lambda checkpoint: 12.0)
    result = runner.run("base", plan, 30, None)
    assert isinstance(result, RowResult) and result.dev is dev
    assert (result.steps, result.checkpoint) == (29, "M/ckpt-30")  # the trainer's step
    assert result.seconds == RowSeconds(train=12.0, evaluate=3.0, perplexity=1.0, decode=2.0)
