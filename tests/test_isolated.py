"""isolated.call: a library call in a child process, its options and result as JSON, its output
streamed with a prefix, a UserError or a crash as Failed with the reason a table row records."""
import importlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from t2t_lite import exit_status, isolated

PROBE = textwrap.dedent('''
    import dataclasses
    import os
    from typing import Dict, List, Optional, Sequence

    from t2t_lite.errors import UserError


    @dataclasses.dataclass
    class Numbers:
        values: Sequence[int]
        then: str = "return"


    @dataclasses.dataclass
    class Total:
        total: int
        count: int


    def add(numbers):
        print(f"adding {len(numbers.values)} numbers", flush=True)
        if numbers.then == "refuse":
            raise UserError("no numbers today")
        if numbers.then == "crash":
            os._exit(3)
        return Total(sum(numbers.values), len(numbers.values))


    @dataclasses.dataclass
    class Groups:
        groups: List[Numbers]
        first: Optional[Numbers] = None


    @dataclasses.dataclass
    class Part:
        name: str
        total: Total


    @dataclasses.dataclass
    class Report:
        whole: Total
        parts: List[Part]
        best: Optional[Total]
        by_name: Dict[str, Total]
        names: tuple


    def report(groups: Groups) -> Report:
        # The options arrive as they were sent: nested dataclasses built back.
        assert all(isinstance(group, Numbers) for group in groups.groups)
        assert isinstance(groups.first, Numbers)
        totals = [add(group) for group in groups.groups]
        parts = [Part(f"g{index}", total) for index, total in enumerate(totals)]
        return Report(whole=Total(sum(t.total for t in totals), sum(t.count for t in totals)),
                      parts=parts, best=max(totals, key=lambda t: t.total),
                      by_name={part.name: part.total for part in parts},
                      names=tuple(part.name for part in parts))


    def totals(groups: Groups) -> Dict[str, Total]:
        return {f"g{index}": add(group) for index, group in enumerate(groups.groups)}


    if __name__ == "__main__":  # run as `python -m isolated_probe`: its functions named so
        from t2t_lite import isolated

        print(isolated.call(totals, Groups([Numbers([5])]), "", lambda *a, **k: None))
''')


@pytest.fixture
def probe(tmp_path, monkeypatch):
    (tmp_path / "isolated_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    # The child finds the module through the caller's sys.path, handed to it.
    return importlib.import_module("isolated_probe")


def test_the_call_runs_in_a_child_and_returns_its_result(probe):
    lines = []
    value = isolated.call(probe.add, probe.Numbers([1, 2, 3]), "[row]",
                          lambda line, **_: lines.append(line))
    # Without an annotation or result_type, the JSON values; with result_type, the type.
    assert value == {"total": 6, "count": 3}
    assert lines == ["[row] adding 3 numbers"]
    typed = isolated.call(probe.add, probe.Numbers([1, 2, 3]), "", lambda *a, **k: None,
                          result_type=probe.Total)
    assert typed == probe.Total(total=6, count=3)


def test_the_result_is_built_back_as_the_functions_annotation_nested_dataclasses_too(probe):
    groups = probe.Groups([probe.Numbers([1, 2]), probe.Numbers([10])], first=probe.Numbers([4]))
    result = isolated.call(probe.report, groups, "", lambda *a, **k: None)
    total = probe.Total
    assert result == probe.Report(
        whole=total(13, 3), parts=[probe.Part("g0", total(3, 2)), probe.Part("g1", total(10, 1))],
        best=total(10, 1), by_name={"g0": total(3, 2), "g1": total(10, 1)}, names=("g0", "g1"))
    assert isinstance(result.parts[0].total, probe.Total)


def test_a_dict_of_dataclasses_crosses_and_a_main_modules_function_runs(probe, tmp_path):
    groups = probe.Groups([probe.Numbers([1, 2]), probe.Numbers([10])])
    assert isolated.call(probe.totals, groups, "", lambda *a, **k: None) == {
        "g0": probe.Total(3, 2), "g1": probe.Total(10, 1)}
    # A module run with -m is __main__ in its process: the child imports it by its own name.
    ran = subprocess.run([sys.executable, "-m", "isolated_probe"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr[-2000:]
    assert ran.stdout.strip() == "{'g0': Total(total=5, count=1)}"


def test_rebuild_is_asdicts_inverse_and_refuses_what_does_not_fit(probe):
    import dataclasses
    import json

    groups = probe.Groups([probe.Numbers([1, 2], then="x")], first=None)
    values = json.loads(json.dumps(dataclasses.asdict(groups)))
    assert isolated.rebuild(probe.Groups, values) == groups
    assert isolated.rebuild(probe.Total, None) is None
    with pytest.raises(TypeError):
        isolated.rebuild(probe.Total, {"total": 1, "count": 2, "unknown": 3})
    with pytest.raises(TypeError):
        isolated.rebuild(probe.Total, {"total": 1})


def test_a_user_error_and_a_crash_are_failures_with_their_reason(probe):
    lines = []
    with pytest.raises(isolated.Failed) as refused:
        isolated.call(probe.add, probe.Numbers([1], then="refuse"), "[row]",
                      lambda line, **_: lines.append(line))
    assert refused.value.reason("adding") == "adding: no numbers today"
    assert "[row] error: no numbers today" in lines
    with pytest.raises(isolated.Failed) as crashed:
        isolated.call(probe.add, probe.Numbers([1], then="crash"), "", lambda *a, **k: None)
    assert crashed.value.reason("adding") == "adding: exit 3: adding 1 numbers"
    assert isolated.Failed(-9, None, []).reason("t2t-lite-trainer") == (
        "t2t-lite-trainer: killed by signal 9 (out of memory?)")


# ---- the caller's t2t_lite, whatever the working directory holds --------------------------------

ORIGIN = textwrap.dedent('''
    import dataclasses
    import os
    import sys


    @dataclasses.dataclass
    class Nothing:
        pass


    def origin(nothing):
        import t2t_lite
        return {"t2t_lite": t2t_lite.__file__, "cwd": os.getcwd(), "path": sys.path}
''')


def test_the_child_runs_the_callers_t2t_lite_not_a_clone_in_its_working_directory(
        tmp_path, monkeypatch):
    import t2t_lite

    modules, clone = tmp_path / "modules", tmp_path / "clone"
    modules.mkdir()
    (modules / "isolated_origin.py").write_text(ORIGIN)
    # A source clone's package in the working directory, which must not be the one imported.
    (clone / "t2t_lite").mkdir(parents=True)
    (clone / "t2t_lite" / "__init__.py").write_text(
        'raise ImportError("the working directory\'s t2t_lite was imported")\n')
    monkeypatch.syspath_prepend(str(modules))
    monkeypatch.chdir(clone)
    origin = importlib.import_module("isolated_origin")
    value = isolated.call(origin.origin, origin.Nothing(), "", lambda *a, **k: None)
    assert value["t2t_lite"] == t2t_lite.__file__
    assert value["cwd"] == str(clone)
    assert str(clone) not in value["path"] and "" not in value["path"]
    assert value["path"][0] == str(modules)


# ---- signals: passed to the child, waited for, the caller ends as they ask ----------------------

SIGNAL_PROBE = textwrap.dedent('''
    import dataclasses
    import os
    import signal


    @dataclasses.dataclass
    class Folder:
        path: str
        slow_save: bool = False  # after the first signal, never finishes saving


    def note(folder, name, text=""):
        with open(os.path.join(folder.path, name + ".tmp"), "w") as f:
            f.write(text)
        os.replace(os.path.join(folder.path, name + ".tmp"), os.path.join(folder.path, name))


    def wait(folder):
        """A trainer's shape: ready, then on SIGTERM / SIGINT "save", say so and exit 128+n."""
        signals = {signal.SIGTERM, signal.SIGINT}
        signal.pthread_sigmask(signal.SIG_BLOCK, signals)  # held for sigwait: no race
        note(folder, "ready", str(os.getpid()))
        received = signal.sigwait(signals)
        note(folder, "saving", signal.Signals(received).name)
        if folder.slow_save:
            signal.sigwait(signals)  # a save that does not end, whatever comes
        print(f"{signal.Signals(received).name}: saved, exiting", flush=True)
        note(folder, "saved", signal.Signals(received).name)
        raise SystemExit(128 + received)
''')

PARENT = textwrap.dedent('''
    import signal
    import sys

    # A caller in a terminal: a background job (nohup, CI) starts with SIGINT ignored, which
    # isolated.call rightly leaves alone, so the disposition under test is set here.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, sys.argv[1])
    import isolated_signal_probe as probe
    from t2t_lite import isolated

    try:
        isolated.call(probe.wait, probe.Folder(sys.argv[2], slow_save=sys.argv[3] == "slow"),
                      "[child]", print)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    print("returned", file=sys.stderr)
''')


def _wait_for(condition, what, process, seconds=120):
    """Until `condition()`; fails if `process` ends first or after `seconds` (a bound on a
    broken run, not a guess at timing)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process.poll() is not None:
            raise AssertionError(f"{what}: the parent ended first: {process.communicate()}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {seconds} s")
        time.sleep(0.01)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state not in ("Z", "X")


@pytest.fixture
def parent(tmp_path):
    """Starts a caller process running isolated.call(wait) from tmp_path (its own process group,
    as a shell's job); returns (process, folder)."""
    modules, folder = tmp_path / "modules", tmp_path / "folder"
    modules.mkdir()
    folder.mkdir()
    (modules / "isolated_signal_probe.py").write_text(SIGNAL_PROBE)
    started = []

    def start(mode="quick"):
        process = subprocess.Popen([sys.executable, "-c", PARENT, str(modules), str(folder), mode],
                                   cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   text=True, start_new_session=True)
        started.append(process)
        _wait_for((folder / "ready").exists, "the child's ready file", process)
        return process, folder, int((folder / "ready").read_text())

    yield start
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.mark.parametrize("signum, status, line", [
    (signal.SIGTERM, 143, "SIGTERM: passed to the child process "
                          "(isolated_signal_probe:wait), which ended with status 143; exiting "
                          "with it"),
    (signal.SIGINT, 130, "interrupted")])
def test_a_signal_is_passed_to_the_child_waited_for_and_ends_the_caller(
        parent, signum, status, line):
    process, folder, child = parent()
    process.send_signal(signum)
    out, err = process.communicate(timeout=120)
    assert (folder / "saved").read_text() == signal.Signals(signum).name
    assert process.returncode == status, (out, err)
    assert err.splitlines() == [line]  # SIGINT: KeyboardInterrupt, raised after the child ended
    assert f"[child] {signal.Signals(signum).name}: saved, exiting" in out.splitlines()
    assert not _alive(child)


def test_a_second_sigint_stops_at_once_and_kills_the_child(parent):
    process, folder, child = parent("slow")
    process.send_signal(signal.SIGINT)
    _wait_for((folder / "saving").exists, "the child's save", process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert (process.returncode == exit_status.INTERRUPTED
            and err.splitlines() == ["interrupted"]), (out, err)
    assert not (folder / "saved").exists()
    assert not _alive(child)


def test_a_caller_killed_outright_takes_its_child_with_it(parent):
    process, folder, child = parent()
    process.kill()
    process.wait()
    deadline = time.monotonic() + 120
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not _alive(child)
    assert not (folder / "saving").exists()


@pytest.mark.slow
def test_sigterm_to_table3_saves_the_rows_trainer_and_exits_with_its_status(tmp_path):
    """Through the real CLI: the table's trainer child saves, both end, 143, one stderr line."""
    from t2t_lite import problems

    params = ["num_symbols=8", "max_length=8", "train_samples=2000", "eval_samples=24"]
    tiny = ["ModelConfig.num_layers = 1", "ModelConfig.d_model = 16", "ModelConfig.d_ff = 32",
            "ModelConfig.num_heads = 2", "ModelConfig.d_k = 8", "ModelConfig.d_v = 8",
            "MAX_LENGTH = 24", "TrainConfig.batch_tokens = 512",
            "TrainConfig.max_tokens_per_replica = 512", "TrainConfig.checkpoint_steps = 5",
            "TrainConfig.checkpoint_minutes = 0.0", "TrainConfig.mixed_precision = 'float32'"]
    data, out = tmp_path / "data", tmp_path / "out"
    problems.build("algorithmic_copy", params).generate_data(str(data))
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}  # as a user's
    table = subprocess.Popen(
        [sys.executable, "-m", "t2t_lite.bin.table3", "--problem=algorithmic_copy",
         *[f"--problem_param={p}" for p in params], f"--data_dir={data}", f"--out_dir={out}",
         *[f"--gin_param={g}" for g in tiny], "--rows=base", "--scale=cpu",
         "--train_steps=100000"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
        start_new_session=True)
    try:
        checkpoint = out / "base" / "model" / "checkpoint"
        _wait_for(checkpoint.exists, "the row's first checkpoint", table, seconds=300)
        trainers = [int(pid) for pid in os.listdir("/proc") if pid.isdigit() and _parent_of(
            int(pid)) == table.pid]
        table.send_signal(signal.SIGTERM)
        out_text, err = table.communicate(timeout=300)
    finally:
        if table.poll() is None:
            os.killpg(table.pid, signal.SIGKILL)
            table.wait()
    assert table.returncode == exit_status.TERMINATED, (out_text[-2000:], err)
    assert err.splitlines() == ["SIGTERM: passed to the child process "
                                "(t2t_lite.training.trainer:train), which ended with status "
                                "143; exiting with it"]
    assert "[base] SIGTERM: saved " in out_text
    assert trainers and not any(_alive(pid) for pid in trainers)


def _parent_of(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
