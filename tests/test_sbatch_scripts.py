"""deploy/slurm's batch scripts run under `set -u` on the bash of every cluster: bash before 4.4
(RHEL/CentOS 7 ship 4.2) stops with "unbound variable" at the expansion of an empty array, so
the scripts use none; and train.sbatch, run with stand-ins for srun and scontrol, passes
--cpus-per-task on exactly when sbatch set it."""
import pathlib
import re
import stat
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCRIPTS = sorted((ROOT / "deploy" / "slurm").glob("*.sbatch"))
# An array's elements, unguarded: "${name[@]}" or ${name[*]} (the guarded
# ${name[@]+"${name[@]}"} form is the one old bash takes).
ARRAY_EXPANSION = re.compile(r"(?<!\+)\$\{\w+\[[@*]\]\}")


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.name for path in SCRIPTS])
def test_no_array_expansion_that_old_bash_calls_unbound(script):
    text = script.read_text(encoding="utf-8")
    found = [line for line in text.splitlines()
             if ARRAY_EXPANSION.search(line) and not line.lstrip().startswith("#")]
    assert not found, found


FAKE_SRUN = """#!/bin/bash
printf '%s\\n' "$@" > "$SRUN_ARGS"
exit "${SRUN_STATUS:-0}"
"""


@pytest.mark.parametrize("cpus", [None, "4"])
def test_train_sbatch_passes_cpus_per_task_only_when_set(tmp_path, cpus):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, text in (("srun", FAKE_SRUN), ("scontrol", "#!/bin/bash\nexit 0\n")):
        path = bin_dir / name
        path.write_text(text)
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SLURM_JOB_ID": "7", "SLURM_NTASKS": "2",
           "SLURM_JOB_NODELIST": "node[1-2]", "SRUN_ARGS": str(tmp_path / "args"),
           "HOME": str(tmp_path)}
    if cpus:
        env["SLURM_CPUS_PER_TASK"] = cpus
    result = subprocess.run(["bash", str(ROOT / "deploy" / "slurm" / "train.sbatch"),
                             "--model_dir=/shared/M"], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "unbound variable" not in result.stderr
    args = (tmp_path / "args").read_text().splitlines()
    assert args[0] == "--kill-on-bad-exit=0"
    assert [arg for arg in args if arg.startswith("--cpus-per-task")] == (
        [f"--cpus-per-task={cpus}"] if cpus else [])
    assert args[-3:] == ["--", "t2t-lite-trainer", "--model_dir=/shared/M"]
    assert "" not in args  # no empty word in the unset case
