"""docs/training.md's Slurm recipe, run on a real one-node Slurm.

deploy/slurm/one-node-slurm.sh starts munged, slurmctld and slurmd in a temporary folder (this
host is the controller and the only node). The recipe then runs as the page gives it:
datagen.sbatch once, then train.sbatch with two tasks on this node (two workers of one
MultiWorkerMirroredStrategy run, TF_CONFIG from t2t_lite.cluster_env --slurm), made to wait for
datagen with --dependency=afterok. `scancel --signal=TERM`, what `--signal=TERM@120` sends
before the time limit, stops both trainers: they save at one step and exit 143, and the batch
script requeues the job. The requeued job resumes from the saved step and finishes
(tests/slurm_cluster.py's check_recipe; tests/test_slurm_two_nodes.py runs it on two nodes).

Needs root and the Debian packages slurm-wlm and munge (.ci/run installs them when it can);
skipped with the reason otherwise. The test takes about 1.5 minutes.
"""
import pytest

from tests import slurm_cluster

pytestmark = pytest.mark.slow  # starts Slurm daemons and trains two workers twice


@pytest.fixture
def cluster():
    reason = slurm_cluster.why_not()
    if reason:
        pytest.skip(reason)
    yield from slurm_cluster.started("one-node-slurm.sh")


def test_the_slurm_recipe_saves_on_sigterm_requeues_and_resumes(cluster):
    slurm_cluster.check_recipe(cluster, ["--nodes=1", "--ntasks-per-node=2"], r"\S+")
