"""isolated.call: a library call in a child process, its options and result as JSON, its output
streamed with a prefix, a UserError or a crash as Failed with the reason a table row records."""
import importlib
import textwrap

import pytest

from t2t_lite import isolated

PROBE = textwrap.dedent('''
    import dataclasses
    import os
    from typing import Sequence

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
''')


@pytest.fixture
def probe(tmp_path, monkeypatch):
    (tmp_path / "isolated_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)  # the child finds the module in its working directory
    return importlib.import_module("isolated_probe")


def test_the_call_runs_in_a_child_and_returns_its_result(probe):
    lines = []
    value = isolated.call(probe.add, probe.Numbers([1, 2, 3]), "[row]",
                          lambda line, **_: lines.append(line))
    assert probe.Total(**value) == probe.Total(total=6, count=3)
    assert lines == ["[row] adding 3 numbers"]


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
