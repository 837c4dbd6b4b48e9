"""A real Slurm for the recipe's tests (tests/test_slurm.py on one node,
tests/test_slurm_two_nodes.py on two): starting and stopping it with a script of deploy/slurm/,
waiting for a job's states and output lines, and the recipe's run (datagen, train.sbatch, `scancel
--signal=TERM`, the save, the requeue, the resumed run to its end) checked from the job's output
file.

Every wait is for a state (a line in the job's output file, the job's state in scontrol), polled
under a generous deadline. Slurm holds a requeued job for its credentials' lifetime plus 1 s
before it may start again: 121 s by default, 11 s on deploy/slurm's test clusters
(cred_expire=10).
"""
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
SLURM = ROOT / "deploy" / "slurm"
PROGRAMS = ("munged", "slurmctld", "slurmd", "sbatch", "srun", "scontrol", "scancel", "squeue",
            "sinfo", "runuser")
PROBLEM = ["--problem=algorithmic_reverse", "--problem_param=max_length=8",
           "--problem_param=train_samples=2000", "--problem_param=eval_samples=50"]
TRAIN_STEPS = 150  # the first run is stopped within its first steps; the requeued one ends here
FINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "BOOT_FAIL", "DEADLINE",
         "OUT_OF_MEMORY", "PREEMPTED"}  # Slurm's end states
DEADLINE = 240  # seconds, for each state waited for


def why_not(programs=PROGRAMS):
    """Why Slurm cannot run here (a line for pytest.skip), or None."""
    if os.geteuid() != 0:
        return "needs root: slurmd starts the jobs and munged runs as the munge user"
    missing = [program for program in programs if shutil.which(program) is None]
    if missing:
        return (f"{', '.join(missing)} not found on PATH: apt-get install -y slurm-wlm munge "
                "(Debian / Ubuntu; .ci/run does it when it runs as root)")
    try:
        import pwd
        pwd.getpwnam("munge")
    except KeyError:
        return "there is no munge user: apt-get install -y munge"
    if shutil.which("t2t-lite-trainer", path=os.path.dirname(sys.executable)) is None:
        return f"t2t-lite-trainer is not installed next to {sys.executable}: pip install -e ."
    return None


def free_ports(count):
    """A port p such that p .. p+count-1 are free on this host (the workers of one node take
    consecutive ports)."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("", 0))
            base = probe.getsockname()[1]
        if base + count > 65535:
            continue
        sockets = []
        try:
            for port in range(base, base + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("", port))
            return base
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError("no free consecutive ports")


class Cluster:
    def __init__(self, folder):
        self.folder = folder
        self.env = dict(os.environ, SLURM_CONF=str(folder / "slurm.conf"))
        self.states = []

    def run(self, *command, check=True):
        done = subprocess.run(command, env=self.env, capture_output=True, text=True, timeout=60)
        if check and done.returncode:
            raise AssertionError(f"{' '.join(command)}: {done.returncode}\n{done.stderr}")
        return done.stdout

    def job(self, job_id):
        """scontrol's fields of a job, as a dict."""
        line = self.run("scontrol", "show", "job", "--oneliner", str(job_id))
        return dict(field.split("=", 1) for field in line.split() if "=" in field)

    def wait_for_job(self, job_id, condition, what):
        deadline = time.monotonic() + DEADLINE
        seen = []  # the states passed through, for the message
        while True:
            fields = self.job(job_id)
            state = (fields.get("JobState"), fields.get("Restarts"), fields.get("ExitCode"))
            if not seen or seen[-1] != state:
                seen.append(state)
            if condition(fields):
                self.states = seen
                return fields
            if time.monotonic() > deadline:
                raise AssertionError(f"job {job_id} never {what}: went through {seen}\n"
                                     + self.logs())
            time.sleep(0.2)

    def logs(self):
        return "\n".join(f"--- {path.name}\n{path.read_text()[-3000:]}"
                         for path in sorted((self.folder / "log").glob("*")))


def started(script, *args, env=None):
    """Starts a Slurm with deploy/slurm/`script` start DIR `args` in a new temporary folder and
    yields its Cluster; stops it (cancelling the jobs, waiting for them) and removes the folder
    after. For a pytest fixture: `yield from started(...)`."""
    # munged (the munge user) must reach the folder: not under pytest's tmp_path, whose
    # folders only their owner may enter.
    folder = pathlib.Path(tempfile.mkdtemp(prefix="t2t-slurm-"))
    folder.chmod(0o755)
    port = free_ports(2)
    ports = dict(SLURMCTLD_PORT=str(port), SLURMD_PORT=str(port + 1))
    path = str(SLURM / script)
    try:
        done = subprocess.run([path, "start", str(folder / "slurm"), *args], capture_output=True,
                              text=True, timeout=120, env=dict(os.environ, **ports, **(env or {})))
        assert done.returncode == 0, done.stdout + done.stderr
        yield Cluster(folder / "slurm")
    finally:
        subprocess.run([path, "stop", str(folder / "slurm")], capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)


def wait_for_line(path, pattern, deadline=DEADLINE, after=0):
    """The first match of `pattern` in `path` from character `after` on."""
    regex = re.compile(pattern, re.M)
    end = time.monotonic() + deadline
    while True:
        text = path.read_text() if path.exists() else ""
        match = regex.search(text, after)
        if match:
            return match
        if time.monotonic() > end:
            raise AssertionError(f"no line matching {pattern!r} in {path}:\n{text[-4000:]}")
        time.sleep(0.2)


def job_env(cluster, ports):
    """The environment to submit from: the jobs inherit it (sbatch's default --export=ALL), as
    they inherit an activated virtual environment, so python3 and t2t-lite-trainer are the ones
    beside this Python. T2T_LITE_PORT: `ports` consecutive free ports here."""
    bin_dir = os.path.dirname(sys.executable)
    return dict(cluster.env, PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
                PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2", KERAS_BACKEND="tensorflow",
                CUDA_VISIBLE_DEVICES="", T2T_LITE_PORT=str(free_ports(ports)))


def check_recipe(cluster, train_options, workers_on):
    """datagen.sbatch, then train.sbatch with `train_options` (sbatch's, before the script)
    waiting for it; SIGTERM to the trainers once they train; both save at one step and exit 143,
    the job is requeued, starts again on its own and resumes from the saved step to its end.
    `workers_on`: the node list the start line names (a regular expression)."""
    work = cluster.folder.parent / "work"  # the submit folder: the jobs' output files land here
    work.mkdir()
    data_dir, model_dir = work / "D", work / "M"
    env = job_env(cluster, 2)

    def sbatch(*args):
        done = subprocess.run(["sbatch", "--parsable", *args], cwd=work, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip().split(";")[0]

    datagen = sbatch(str(SLURM / "datagen.sbatch"), *PROBLEM, f"--data_dir={data_dir}")
    train = sbatch(*train_options, f"--dependency=afterok:{datagen}",
                   str(SLURM / "train.sbatch"), *PROBLEM, f"--data_dir={data_dir}",
                   f"--model_dir={model_dir}", "--hparams_set=tiny", "--bleu_sentences=0",
                   "--eval_batches=2", "--log_every=1",
                   "--gin_param=TrainConfig.checkpoint_minutes = 0",
                   f"--train_steps={TRAIN_STEPS}")
    output = work / f"t2t_train-{train}.out"

    # Datagen ran once, and before the trainers: the training job waited for it.
    done = cluster.wait_for_job(datagen, lambda job: job["JobState"] == "COMPLETED",
                                "completed")
    assert done["ExitCode"] == "0:0"
    assert list(work.glob("t2t_datagen-*.out")) == [work / f"t2t_datagen-{datagen}.out"]
    assert (data_dir / "algorithmic_reverse.symbols.txt").exists()

    wait_for_line(output, rf"^t2t-lite: job \d+, start 1: 2 workers on {workers_on}, "
                          r"ports from \d+$")
    wait_for_line(output, r"^step 3/")  # both workers train
    cluster.run("scancel", "--signal=TERM", train)  # what --signal=TERM@120 sends

    # Both trainers save at one step and exit 143; the batch script requeues the job.
    saved = re.compile(r"^SIGTERM(?: on another worker)?: saved (\S+) at step (\d+) ", re.M)
    wait_for_line(output, r"^t2t-lite: the trainers saved on SIGTERM \(exit 143\): requeueing "
                          rf"job {train} to resume$")
    cluster.wait_for_job(train, lambda job: job["JobState"] == "PENDING"
                               and job["Restarts"] == "1", "was requeued")
    text = output.read_text()
    saves = saved.findall(text)
    assert len(saves) == 2 and saves[0] == saves[1], text[-4000:]
    path, step = saves[0][0], int(saves[0][1])
    assert path == str(model_dir / f"ckpt-{step}"), path
    assert 3 <= step < TRAIN_STEPS, f"the first run was not stopped before its end: step {step}"
    assert os.path.exists(path + ".index")
    assert "Traceback" not in text

    # The requeued job starts again on its own, with the same script and arguments, once Slurm's
    # requeue delay is over (cred_expire + 1 s: 11 s on deploy/slurm's test clusters).
    done = cluster.wait_for_job(train, lambda job: job["JobState"] in FINAL, "finished")
    text = output.read_text()
    assert (done["JobState"], done["ExitCode"], done["Restarts"]) == ("COMPLETED", "0:0", "1"), \
        f"went through {cluster.states}\n{text[-4000:]}\n{cluster.logs()}"
    second = re.search(rf"^t2t-lite: job \d+, start 2: 2 workers on {workers_on}", text, re.M)
    assert second, text[-4000:]
    rest = text[second.end():]
    resumed = re.findall(rf"^resumed from {re.escape(path)} at step {step} \(learning rate ",
                         rest, re.M)
    assert len(resumed) == 2, rest[-4000:]  # both workers
    assert len(re.findall(rf"^stopped at step {TRAIN_STEPS} \(train_steps\)", rest, re.M)) == 2
    assert f"ckpt-{TRAIN_STEPS}" in (model_dir / "checkpoint").read_text()
    assert "Traceback" not in rest and "requeueing" not in rest
    return text
