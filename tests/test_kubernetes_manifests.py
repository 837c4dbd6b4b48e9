"""deploy/kubernetes/: the manifests validate against the Kubernetes schema (kubernetes-validate,
which bundles the API's JSON schemas: no network), obey the API server's rules that the schema
cannot express, fit together (names, volume, worker count), and the pod's index becomes a
TF_CONFIG the trainer accepts (t2t_lite/cluster_env.py)."""
import json
import os
import pathlib
import re
import shlex
import subprocess
import sys

import kubernetes_validate
import pytest
import yaml

from t2t_lite import cluster_env, exit_status
from t2t_lite.errors import UserError

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy" / "kubernetes"
# The oldest release the manifests are meant for, and the newest schema the package bundles.
VERSIONS = ["1.27", kubernetes_validate.latest_version()]
GRACE_SECONDS = 120  # the trainer's save (docs/training.md, "What the save costs") with room


def _manifests():
    return {path.name: list(yaml.safe_load_all(path.read_text())) for path in
            sorted(DEPLOY.glob("*.yaml"))}


def _resources():
    return {(doc["kind"], doc["metadata"]["name"]): doc
            for docs in _manifests().values() for doc in docs}


# What the API server refuses beyond the OpenAPI schema, for the kinds that run pods: the schema
# types a pod's restartPolicy as any string, so it accepts OnFailure on a StatefulSet.
RESTART_POLICIES = {"StatefulSet": {"Always"}, "Deployment": {"Always"},
                    "ReplicaSet": {"Always"}, "DaemonSet": {"Always"},
                    "Job": {"OnFailure", "Never"}}


def validate(doc, version):
    """Raises when the schema or one of the server's rules above refuses `doc`."""
    kubernetes_validate.validate(doc, version, strict=True)
    kind = doc["kind"]
    if kind in RESTART_POLICIES:
        policy = doc["spec"]["template"]["spec"].get("restartPolicy", "Always")
        if policy not in RESTART_POLICIES[kind]:
            raise ValueError(f"{kind} {doc['metadata']['name']}: restartPolicy {policy} (allowed: "
                             f"{', '.join(sorted(RESTART_POLICIES[kind]))})")
    if kind == "Job" and doc["spec"].get("completionMode") == "Indexed" \
            and "completions" not in doc["spec"]:
        raise ValueError(f"Job {doc['metadata']['name']}: an Indexed Job needs completions")


def test_the_shipped_manifests_are_the_expected_files():
    assert set(_manifests()) == {"shared-volume.yaml", "datagen-job.yaml", "workers-service.yaml",
                                 "trainer-job.yaml"}
    assert set(_resources()) == {("PersistentVolumeClaim", "t2t-shared"),
                                 ("Job", "t2t-datagen"), ("Service", "t2t-workers"),
                                 ("Job", "t2t-trainer")}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("name", sorted(f"{k}/{n}" for k, n in _resources()))
def test_each_manifest_validates(name, version):
    validate(_resources()[tuple(name.split("/"))], version)


# The kind of manifest the validation exists for: docs/training.md once showed this one.
OLD_DOCS_STATEFULSET = """
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: t2t-trainer}
spec:
  terminationGracePeriodSeconds: 60
  restartPolicy: OnFailure
  containers:
  - name: trainer
    command: ["t2t-lite-trainer", "--problem=translate_ende_wmt14"]
"""


def _statefulset(restart_policy):
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "t2t"},
            "spec": {"serviceName": "t2t-workers", "replicas": 2,
                     "selector": {"matchLabels": {"app": "t2t"}},
                     "template": {"metadata": {"labels": {"app": "t2t"}},
                                  "spec": {"restartPolicy": restart_policy,
                                           "containers": [{"name": "t", "image": "t:1"}]}}}}


def test_a_bare_statefulset_spec_fails_the_schema():
    with pytest.raises(kubernetes_validate.ValidationError):
        validate(yaml.safe_load(OLD_DOCS_STATEFULSET), VERSIONS[-1])


def test_a_statefulset_restarting_on_failure_fails_and_always_passes():
    with pytest.raises(ValueError, match="StatefulSet t2t: restartPolicy OnFailure "
                                         r"\(allowed: Always\)"):
        validate(_statefulset("OnFailure"), VERSIONS[-1])
    validate(_statefulset("Always"), VERSIONS[-1])


def test_a_job_that_always_restarts_fails():
    job = json.loads(json.dumps(_resources()[("Job", "t2t-trainer")]))
    job["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    with pytest.raises(ValueError, match="restartPolicy Always"):
        validate(job, VERSIONS[-1])


def _trainer_job():
    return _resources()[("Job", "t2t-trainer")]


def _command_flags(command):
    return dict(arg[2:].split("=", 1) for arg in command if arg.startswith("--") and "=" in arg)


def test_the_pieces_fit_together():
    resources = _resources()
    job, service = _trainer_job(), resources[("Service", "t2t-workers")]
    pod = job["spec"]["template"]
    # The headless Service names the pods: subdomain = its name, its selector = their labels.
    assert service["spec"]["clusterIP"] == "None"
    assert pod["spec"]["subdomain"] == service["metadata"]["name"]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
    (container,) = pod["spec"]["containers"]
    command = container["command"]
    # The entry runs the trainer in its own place (exec), never under a shell.
    assert command[:3] == ["python", "-m", "t2t_lite.cluster_env"]
    separator = command.index("--")
    assert command[separator + 1] == "t2t-lite-trainer"
    flags = _command_flags(command[:separator])
    assert int(flags["workers"]) == job["spec"]["completions"] == job["spec"]["parallelism"]
    assert flags["hosts"] == f"{job['metadata']['name']}-{{index}}.{service['metadata']['name']}"
    assert int(flags["port"]) == service["spec"]["ports"][0]["port"] \
        == container["ports"][0]["containerPort"]
    assert pod["spec"]["terminationGracePeriodSeconds"] == GRACE_SECONDS
    # Datagen writes the data_dir the trainer reads, on the one claimed volume.
    datagen = resources[("Job", "t2t-datagen")]["spec"]["template"]["spec"]
    trainer_flags = _command_flags(command[separator + 1:])
    assert _command_flags(datagen["containers"][0]["command"])["data_dir"] \
        == trainer_flags["data_dir"]
    for spec in (datagen, pod["spec"]):
        (volume,) = spec["volumes"]
        assert volume["persistentVolumeClaim"]["claimName"] == "t2t-shared"
        (mount,) = spec["containers"][0]["volumeMounts"]
        assert trainer_flags["model_dir"].startswith(mount["mountPath"] + "/")


def test_each_pod_of_the_job_gets_a_tf_config_the_trainer_accepts(monkeypatch):
    from t2t_lite.training import strategy

    command = _trainer_job()["spec"]["template"]["spec"]["containers"][0]["command"]
    entry = command[:command.index("--")]
    for index in range(2):
        printed = subprocess.run([sys.executable, *entry[1:], "--print"], check=True, text=True,
                                 capture_output=True,
                                 env=dict(os.environ, JOB_COMPLETION_INDEX=str(index))).stdout
        config = json.loads(printed)
        assert config == {"cluster": {"worker": ["t2t-trainer-0.t2t-workers:2222",
                                                 "t2t-trainer-1.t2t-workers:2222"]},
                          "task": {"type": "worker", "index": index}}
        monkeypatch.setenv("TF_CONFIG", printed)
        assert strategy.tf_config() == config and strategy.cluster_workers() == 2


def test_the_entry_execs_the_command_with_tf_config_set():
    done = subprocess.run(
        [sys.executable, "-m", "t2t_lite.cluster_env", "--workers=3", "--hosts=w{index}.svc",
         "--port=2345", "--", sys.executable, "-c",
         "import json, os; print(json.loads(os.environ['TF_CONFIG'])['task']['index'])"],
        env=dict(os.environ, JOB_COMPLETION_INDEX="2"), capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "2\n", "")


@pytest.mark.parametrize("args,index,message", [
    (["--workers=2", "--hosts=w{index}"], None, "error: JOB_COMPLETION_INDEX is not set"),
    (["--workers=2", "--hosts=w{index}"], "2", "error: JOB_COMPLETION_INDEX=2 is out of range "
                                                "for --workers=2 (indices 0 to 1)"),
    (["--workers=2", "--hosts=w{index}"], "x", "error: JOB_COMPLETION_INDEX=x is not a worker"),
    (["--workers=2", "--hosts=w"], "0", "error: --hosts=w has no {index}"),
    (["--workers=2", "--hosts=w{index}{i}"], "0",
     "error: --hosts=w{index}{i} has braces other than {index}"),
    (["--workers=0", "--hosts=w{index}"], "0", "error: --workers=0: a cluster needs at least"),
    (["--workers=1", "--hosts=w", "--port=0"], "0", "error: --port=0 is not a TCP port"),
])
def test_entry_mistakes_are_one_line(args, index, message):
    env = {k: v for k, v in os.environ.items() if k != cluster_env.INDEX_ENV}
    if index is not None:
        env[cluster_env.INDEX_ENV] = index
    done = subprocess.run([sys.executable, "-m", "t2t_lite.cluster_env", *args, "--", "true"],
                          env=env, capture_output=True, text=True)
    assert done.returncode == exit_status.USER_ERROR and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(message), done.stderr


def test_indexed_job_tf_config_in_the_library():
    assert cluster_env.indexed_job_tf_config(0, 1, "solo", 2222) == {
        "cluster": {"worker": ["solo:2222"]}, "task": {"type": "worker", "index": 0}}
    with pytest.raises(UserError, match="out of range"):
        cluster_env.indexed_job_tf_config(-1, 2, "w{index}", 2222)


def test_docs_use_the_shipped_files():
    """docs/training.md's Kubernetes section applies every shipped file, datagen first and waited
    for, and quotes no manifest of its own."""
    page = (ROOT / "docs" / "training.md").read_text()
    section = page[page.index("### Kubernetes"):page.index("### Slurm")]
    assert "```yaml" not in section
    commands = [line.strip() for line in section.splitlines() if line.strip().startswith("kubectl")]
    applied = [word for line in commands for word in shlex.split(line) if word.endswith(".yaml")]
    assert sorted(pathlib.Path(word).name for word in applied) == sorted(_manifests())
    order = [pathlib.Path(word).name for word in applied]
    wait = next(i for i, line in enumerate(commands)
                if "wait" in line and "job/t2t-datagen" in line)
    assert order.index("datagen-job.yaml") < order.index("trainer-job.yaml")
    assert commands.index(next(c for c in commands if "datagen-job.yaml" in c)) < wait \
        < commands.index(next(c for c in commands if "trainer-job.yaml" in c))
    assert re.search(r"terminationGracePeriodSeconds.{0,40}120", section, re.S)
