"""t2t_lite/cluster_env.py --slurm: TF_CONFIG from srun's variables (SLURM_PROCID, the step's node
list and tasks per node), ports that differ for tasks sharing a node, and one `error:` line for
each mistake. deploy/slurm/train.sbatch runs it; tests/test_slurm.py runs that on a real Slurm."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from t2t_lite import cluster_env
from t2t_lite.errors import UserError


@pytest.mark.parametrize("hostlist,hosts", [
    ("vm", ["vm"]),
    ("n1,n2", ["n1", "n2"]),
    ("node[01-03,7]", ["node01", "node02", "node03", "node7"]),
    ("gpu[8-10]", ["gpu8", "gpu9", "gpu10"]),
    ("e[009-011]", ["e009", "e010", "e011"]),
    ("rack[1-2]-n[7-8]", ["rack1-n7", "rack1-n8", "rack2-n7", "rack2-n8"]),
    ("a[1-2],b,c[5]", ["a1", "a2", "b", "c5"]),
    ("n-01.cluster.local", ["n-01.cluster.local"]),
])
def test_expand_hostlist(hostlist, hosts):
    assert cluster_env.expand_hostlist(hostlist) == hosts


@pytest.mark.skipif(shutil.which("scontrol") is None, reason="scontrol (slurm-client) is absent")
def test_expand_hostlist_agrees_with_scontrol_show_hostnames(tmp_path):
    # scontrol parses host lists without a controller; it only needs a slurm.conf to read.
    conf = tmp_path / "slurm.conf"
    conf.write_text("ClusterName=x\nSlurmctldHost=localhost\n")
    hostlist = "a[01-03,5],b[1-2]-c[7-8],d,e[009-011],gpu[8-10]"
    shown = subprocess.run(["scontrol", "show", "hostnames", hostlist], capture_output=True,
                           text=True, check=True, env=dict(os.environ, SLURM_CONF=str(conf)))
    assert cluster_env.expand_hostlist(hostlist) == shown.stdout.split()


@pytest.mark.parametrize("hostlist", ["n[1-2", "n1-2]", "n[3-1]", "n[a-b]", "n[]", "n1,,n2",
                                      "n[1-[2]]"])
def test_a_malformed_hostlist_is_a_value_error(hostlist):
    with pytest.raises(ValueError):
        cluster_env.expand_hostlist(hostlist)


@pytest.mark.parametrize("value,counts", [("2", [2]), ("1(x3)", [1, 1, 1]),
                                          ("2(x2),1", [2, 2, 1]), ("4,1(x2)", [4, 1, 1])])
def test_expand_tasks_per_node(value, counts):
    assert cluster_env.expand_tasks_per_node(value) == counts


def slurm(procid, nodelist, tasks_per_node, ntasks, node=None, **extra):
    """srun's variables for task `procid` of a step (the names srun sets inside the step)."""
    env = {"SLURM_PROCID": str(procid), "SLURM_STEP_NODELIST": nodelist,
           "SLURM_STEP_TASKS_PER_NODE": tasks_per_node, "SLURM_STEP_NUM_TASKS": str(ntasks),
           "SLURM_NTASKS": str(ntasks), "SLURM_DISTRIBUTION": "block"}
    if node is not None:
        env["SLURMD_NODENAME"] = node
    env.update(extra)
    return env


def test_two_tasks_on_one_node_get_a_port_each():
    config = cluster_env.slurm_tf_config(slurm(1, "vm", "2", 2, node="vm"), 2222)
    assert config == {"cluster": {"worker": ["vm:2222", "vm:2223"]},
                      "task": {"type": "worker", "index": 1}}


def test_block_placement_over_nodes():
    workers = ["n01:2222", "n01:2223", "n02:2222", "n02:2223", "n03:2222"]
    for procid, node in enumerate(["n01", "n01", "n02", "n02", "n03"]):
        config = cluster_env.slurm_tf_config(slurm(procid, "n[01-03]", "2(x2),1", 5, node=node),
                                             2222)
        assert config == {"cluster": {"worker": workers},
                          "task": {"type": "worker", "index": procid}}


def test_one_task_per_node_and_the_jobs_variables_when_the_steps_are_absent():
    env = {"SLURM_PROCID": "1", "SLURM_JOB_NODELIST": "gpu[1-2]", "SLURM_TASKS_PER_NODE": "1(x2)",
           "SLURM_NTASKS": "2"}
    assert cluster_env.slurm_tf_config(env, 3000) == {
        "cluster": {"worker": ["gpu1:3000", "gpu2:3000"]}, "task": {"type": "worker", "index": 1}}
    # Without tasks per node, one task on each node.
    del env["SLURM_TASKS_PER_NODE"], env["SLURM_NTASKS"]
    assert cluster_env.slurm_tf_config(env, 3000)["cluster"]["worker"] == ["gpu1:3000",
                                                                           "gpu2:3000"]


@pytest.mark.parametrize("env,port,message", [
    ({}, 2222, r"^SLURM_PROCID is not set: run this as a task of a job step"),
    ({"SLURM_PROCID": "0"}, 2222, r"^SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set"),
    ({"SLURM_PROCID": "x", "SLURM_STEP_NODELIST": "n1"}, 2222, r"^SLURM_PROCID=x is not a number$"),
    (slurm(0, "n[1-", "1", 1), 2222,
     r"^SLURM_STEP_NODELIST=n\[1- is not a Slurm host list: a \[ without its \]$"),
    (slurm(0, "n[1-2]", "2x", 2), 2222,
     r"^SLURM_STEP_TASKS_PER_NODE=2x is not Slurm's tasks per node"),
    (slurm(0, "n[1-2]", "1", 1), 2222,
     r"^SLURM_STEP_TASKS_PER_NODE=1 gives 1 node\(s\), SLURM_STEP_NODELIST=n\[1-2\] 2$"),
    (slurm(0, "n[1-2]", "1(x2)", 3), 2222,
     r"^SLURM_STEP_NUM_TASKS=3 but SLURM_STEP_TASKS_PER_NODE=1\(x2\) places 2 task\(s\)$"),
    (slurm(2, "n[1-2]", "1(x2)", 2), 2222,
     r"^SLURM_PROCID=2 is out of range for SLURM_STEP_NUM_TASKS=2$"),
    (slurm(1, "n[1-2]", "2(x2)", 4, node="n2"), 2222,
     r"^task 1 runs on n2, but block placement over SLURM_STEP_NODELIST puts it on n1: the "
     r"step's variables disagree with one another: give srun --distribution=block$"),
    (slurm(1, "n[1-2]", "2(x2)", 4, SLURM_DISTRIBUTION="cyclic", SLURM_LOCALID="1"), 2222,
     r"^task 1 has SLURM_LOCALID=1, but cyclic placement over SLURM_STEP_NODELIST gives 0: "),
    (slurm(2, "n[1-2]", "2(x2)", 4, SLURM_DISTRIBUTION="cyclic", SLURM_GTIDS="2,3"), 2222,
     r"^task 2 has SLURM_GTIDS=2,3, but cyclic placement over SLURM_STEP_NODELIST gives 0,2: "),
    (slurm(3, "n[1-2]", "2(x2)", 4, SLURM_NODEID="0"), 2222,
     r"^task 3 has SLURM_NODEID=0, but block placement over SLURM_STEP_NODELIST gives 1: "),
    (slurm(0, "vm", "2", 2), 65535, r"^--port=65535 plus 1 \(tasks on one node\) is past 65535"),
    (slurm(0, "vm", "1", 1), 0, r"^--port=0 is not a TCP port$"),
])
def test_a_slurm_mistake_is_one_user_error(env, port, message):
    with pytest.raises(UserError, match=message):
        cluster_env.slurm_tf_config(env, port)


def test_a_task_count_off_the_node_list_without_tasks_per_node_is_one_user_error():
    env = slurm(0, "n[1-2]", "1(x2)", 3)
    del env["SLURM_STEP_TASKS_PER_NODE"]
    with pytest.raises(UserError, match=r"^SLURM_STEP_NUM_TASKS=3 but SLURM_STEP_NODELIST="
                                        r"n\[1-2\] \(one task a node\) places 2 task\(s\)$"):
        cluster_env.slurm_tf_config(env, 2222)


def test_cyclic_placement_on_one_node_is_block_placement():
    env = slurm(1, "vm", "2", 2, node="vm", SLURM_DISTRIBUTION="cyclic")
    assert cluster_env.slurm_tf_config(env, 2222)["cluster"]["worker"] == ["vm:2222", "vm:2223"]


# Through the command: the trainer is exec()d with TF_CONFIG; a mistake is one line, status 1.

def run(args, env):
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("SLURM", "JOB_COMPLETION_INDEX"))}
    return subprocess.run([sys.executable, "-m", "t2t_lite.cluster_env", *args],
                          env=dict(clean, **env), capture_output=True, text=True)


def test_the_command_execs_with_tf_config_set_and_prints_it():
    env = slurm(1, "vm", "2", 2, node="vm")
    done = run(["--slurm", "--port=4000", "--", sys.executable, "-c",
                "import os; print(os.environ['TF_CONFIG'])"], env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    expected = {"cluster": {"worker": ["vm:4000", "vm:4001"]},
                "task": {"type": "worker", "index": 1}}
    assert json.loads(done.stdout) == expected
    printed = run(["--slurm", "--port=4000", "--print"], env)
    assert json.loads(printed.stdout) == expected


@pytest.mark.parametrize("args,env,message", [
    (["--slurm", "--", "true"], {}, "error: SLURM_PROCID is not set: run this as a task of a "
                                    "job step, srun python3 -m t2t_lite.cluster_env --slurm ..., "
                                    "one task per worker\n"),
    (["--slurm", "--workers=2", "--index=0", "--", "true"], slurm(0, "vm", "1", 1),
     "error: --slurm takes the workers from Slurm's variables: leave out --workers, --index\n"),
    (["--slurm"], slurm(0, "vm", "1", 1),
     "error: no command to run: give it after --, as in -- t2t-lite-trainer ...\n"),
    (["--slurm", "--", "/nonexistent/trainer"], slurm(0, "vm", "1", 1),
     "error: cannot run /nonexistent/trainer: No such file or directory\n"),
])
def test_command_mistakes_are_one_line(args, env, message):
    done = run(args, env)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", message)


# Placement: the task -> node mapping of each distribution srun sets, as Slurm 22.05 lays tasks out
# (src/common/slurm_step_layout.c: _task_layout_block, _task_layout_cyclic, _task_layout_plane,
# _task_layout_hostfile). The counts per node are Slurm's (SLURM_STEP_TASKS_PER_NODE); the
# expected lists are written out by hand from those rules, not computed by the code under test.

N4 = "n[1-4]"
HETEROGENEOUS = "2(x3),1"  # 7 tasks: 2 on n1, n2, n3, 1 on n4

PLACEMENTS = [
    # (SLURM_DISTRIBUTION, extra variables, node list, tasks per node, the node of each task)
    ("block", {}, N4, HETEROGENEOUS, ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("block,pack", {}, N4, HETEROGENEOUS, ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("block:cyclic", {}, N4, HETEROGENEOUS, ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("block:block:fcyclic,nopack", {}, N4, HETEROGENEOUS,
     ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("cyclic", {}, N4, HETEROGENEOUS, ["n1", "n2", "n3", "n4", "n1", "n2", "n3"]),
    ("cyclic,pack", {}, N4, HETEROGENEOUS, ["n1", "n2", "n3", "n4", "n1", "n2", "n3"]),
    ("cyclic:block", {}, N4, HETEROGENEOUS, ["n1", "n2", "n3", "n4", "n1", "n2", "n3"]),
    ("cyclic:cyclic:fcyclic", {}, N4, HETEROGENEOUS,
     ["n1", "n2", "n3", "n4", "n1", "n2", "n3"]),
    # Cyclic skips a node once it has all its tasks (uneven counts, not in order of size).
    ("cyclic", {}, "n[1-3]", "1,3,2", ["n1", "n2", "n3", "n2", "n3", "n2"]),
    # The round robin of Slurm's comment for _task_layout_cyclic: CPUs 4 2 4 2, 12 tasks.
    ("cyclic", {}, N4, "4,2,4,2",
     ["n1", "n2", "n3", "n4", "n1", "n2", "n3", "n4", "n1", "n3", "n1", "n3"]),
    # Plane: blocks of the plane size to each node in turn. srun sets SLURM_DISTRIBUTION=plane
    # and the size in SLURM_DIST_PLANESIZE; "plane=2" is what a user gives srun -m.
    ("plane", {"SLURM_DIST_PLANESIZE": "2"}, N4, HETEROGENEOUS,
     ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("plane=2", {}, N4, HETEROGENEOUS, ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("plane=1", {}, N4, HETEROGENEOUS, ["n1", "n2", "n3", "n4", "n1", "n2", "n3"]),
    # Slurm's comment for _task_layout_plane: plane 2, CPUs 4 1 1, 6 tasks.
    ("plane", {"SLURM_DIST_PLANESIZE": "2"}, "n[1-3]", "4,1,1",
     ["n1", "n1", "n2", "n3", "n1", "n1"]),
    # dist_plane.html, figure 2: srun -N4 -n21 -m plane=4 (8, 5, 4 and 4 tasks).
    ("plane=4", {}, N4, "8,5,4(x2)",
     ["n1"] * 4 + ["n2"] * 4 + ["n3"] * 4 + ["n4"] * 4 + ["n1"] * 4 + ["n2"]),
    # Arbitrary: task i on the i-th name of the list srun was given, when the tasks can read it:
    # a SLURM_ARBITRARY_NODELIST with a name per task (tests below: the file of SLURM_HOSTFILE).
    ("arbitrary", {"SLURM_ARBITRARY_NODELIST": "n3,n1,n3,n2,n1,n1,n4"}, N4, "3,1,2,1",
     ["n3", "n1", "n3", "n2", "n1", "n1", "n4"]),
    ("arbitrary", {"SLURM_ARBITRARY_NODELIST": "n[2,1,2]"}, "n[1-2]", "1,2", ["n2", "n1", "n2"]),
    # No distribution (srun leaves it to slurmctld, which takes block), or only a pack flag.
    ("", {}, N4, HETEROGENEOUS, ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    ("pack", {}, N4, HETEROGENEOUS, ["n1", "n1", "n2", "n2", "n3", "n3", "n4"]),
    # One task per node: block and cyclic are the same (the recipe's --ntasks-per-node=1 gets
    # cyclic, srun's default when the tasks are no more than the nodes).
    ("cyclic", {}, "node[01-02]", "1(x2)", ["node01", "node02"]),
    ("block", {}, "node[01-02]", "1(x2)", ["node01", "node02"]),
]


def _as_slurm_sets_it(procid, nodelist, tasks_per_node, placed, distribution, extra):
    """srun's variables for task `procid`, with what slurmd tells a task about its own place
    (SLURMD_NODENAME, SLURM_NODEID, SLURM_LOCALID, SLURM_GTIDS) taken from `placed`."""
    node = placed[procid]
    hosts = cluster_env.expand_hostlist(nodelist)
    same_node = [task for task, where in enumerate(placed) if where == node]
    env = slurm(procid, nodelist, tasks_per_node, len(placed), node=node,
                SLURM_NODEID=str(hosts.index(node)),
                SLURM_LOCALID=str(same_node.index(procid)),
                SLURM_GTIDS=",".join(map(str, same_node)), **extra)
    if distribution:
        env["SLURM_DISTRIBUTION"] = distribution
    else:
        del env["SLURM_DISTRIBUTION"]
    return env


@pytest.mark.parametrize("distribution,extra,nodelist,tasks_per_node,placed", PLACEMENTS)
def test_every_task_gets_the_cluster_of_slurms_placement(distribution, extra, nodelist,
                                                         tasks_per_node, placed):
    # The workers' addresses: each task's node, and the port plus its place among that node's
    # tasks (its SLURM_LOCALID).
    seen = {}
    workers = []
    for node in placed:
        workers.append(f"{node}:{2222 + seen.get(node, 0)}")
        seen[node] = seen.get(node, 0) + 1
    for procid in range(len(placed)):
        env = _as_slurm_sets_it(procid, nodelist, tasks_per_node, placed, distribution, extra)
        assert cluster_env.slurm_tf_config(env, 2222) == {
            "cluster": {"worker": workers}, "task": {"type": "worker", "index": procid}}


@pytest.mark.parametrize("kind,counts,plane,nodes", [
    ("block", [2, 2, 2, 1], None, [0, 0, 1, 1, 2, 2, 3]),
    ("cyclic", [2, 2, 2, 1], None, [0, 1, 2, 3, 0, 1, 2]),
    ("cyclic", [3, 1], None, [0, 1, 0, 0]),
    ("plane", [2, 2, 2, 1], 2, [0, 0, 1, 1, 2, 2, 3]),
    ("plane", [2, 2, 2, 1], 3, [0, 0, 1, 1, 2, 2, 3]),
    ("plane", [5, 3], 2, [0, 0, 1, 1, 0, 0, 1, 0]),
])
def test_task_nodes(kind, counts, plane, nodes):
    assert cluster_env.task_nodes(kind, counts, plane) == nodes


@pytest.mark.parametrize("value,planesize,parsed", [
    (None, None, ("block", None)), ("block", None, ("block", None)),
    ("cyclic", None, ("cyclic", None)), ("CYCLIC,Pack", None, ("cyclic", None)),
    ("block:cyclic", None, ("block", None)), ("cyclic:*:block", None, ("cyclic", None)),
    ("*:cyclic", None, ("block", None)), ("plane=3", None, ("plane", 3)),
    ("plane", "5", ("plane", 5)), ("arbitrary", None, ("arbitrary", None)),
    ("hostfile", None, ("arbitrary", None)), ("nopack", None, ("block", None)),
])
def test_parse_distribution(value, planesize, parsed):
    assert cluster_env.parse_distribution(value, planesize) == parsed


@pytest.mark.parametrize("env,message", [
    # Arbitrary without the list: no variable says which node runs which task (srun -w LIST;
    # sbatch's SLURM_ARBITRARY_NODELIST is the list of nodes, one name each, in Slurm 22.05).
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="arbitrary"),
     r"^SLURM_DISTRIBUTION=arbitrary over SLURM_STEP_NODELIST=n\[1-2\]: which node runs which "
     r"task is not in the tasks' environment \(srun -m arbitrary passes its -w list on only from "
     r"a file named by SLURM_HOSTFILE\): put the list in a file, one name a task, and set "
     r"SLURM_HOSTFILE to it instead of giving -w, or use block, cyclic or plane$"),
    (slurm(0, "n[1-2]", "3,2", 5, SLURM_DISTRIBUTION="arbitrary",
           SLURM_ARBITRARY_NODELIST="n[1-2]"), r"which node runs which task is not in the"),
    # A list that is not this step's (srun -m arbitrary -w another list inside the job).
    (slurm(0, "n[1-2]", "1,2", 3, SLURM_DISTRIBUTION="arbitrary",
           SLURM_ARBITRARY_NODELIST="n1,n1,n2"),
     r"^SLURM_ARBITRARY_NODELIST=n1,n1,n2 does not place this step's 3 task\(s\) as "
     r"SLURM_DISTRIBUTION=arbitrary over SLURM_STEP_NODELIST=n\[1-2\] says: it is not this "
     r"step's list$"),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="arbitrary",
           SLURM_ARBITRARY_NODELIST="n1,n3"), r"does not place this step's 2 task\(s\)"),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="arbitrary",
           SLURM_HOSTFILE="/nonexistent/hosts"),
     r"^SLURM_DISTRIBUTION=arbitrary over SLURM_STEP_NODELIST=n\[1-2\]: cannot read "
     r"SLURM_HOSTFILE=/nonexistent/hosts, the list of which node runs which task: No such file "
     r"or directory$"),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="plane"),
     r"^SLURM_DISTRIBUTION=plane: plane without a size \(SLURM_DIST_PLANESIZE is not set\); "
     r"srun's forms are block, cyclic, plane=N or arbitrary, then :socket and :core levels "
     r"\(block:cyclic\) and ,pack or ,nopack$"),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="plane=0"),
     r"^SLURM_DISTRIBUTION=plane=0: the plane size '0' is not a positive number; "),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="spread"),
     r"^SLURM_DISTRIBUTION=spread: 'spread' is not a distribution srun sets; "),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="block:cyclic:block:block"),
     r"is not a distribution srun sets"),
    (slurm(0, "n[1-2]", "1(x2)", 2, SLURM_DISTRIBUTION="cyclic,tight"),
     r"^SLURM_DISTRIBUTION=cyclic,tight: 'tight' is not pack or nopack; "),
])
def test_a_placement_that_cannot_be_derived_is_one_user_error(env, message):
    with pytest.raises(UserError, match=message):
        cluster_env.slurm_tf_config(env, 2222)


def test_on_one_node_every_distribution_places_the_same():
    for distribution in ("arbitrary", "plane", "cyclic", "whatever"):
        env = slurm(1, "vm", "2", 2, node="vm", SLURM_DISTRIBUTION=distribution,
                    SLURM_LOCALID="1", SLURM_GTIDS="0,1", SLURM_NODEID="0")
        assert cluster_env.slurm_tf_config(env, 2222)["cluster"]["worker"] == ["vm:2222",
                                                                               "vm:2223"]


def test_the_issues_two_node_cyclic_step_starts():
    # Issue 53 item 1: the recipe's --nodes=2 --ntasks-per-node=1 gets SLURM_DISTRIBUTION=cyclic.
    for procid in (0, 1):
        env = {"SLURM_STEP_NODELIST": "node[01-02]", "SLURM_STEP_TASKS_PER_NODE": "1(x2)",
               "SLURM_STEP_NUM_TASKS": "2", "SLURM_DISTRIBUTION": "cyclic",
               "SLURM_PROCID": str(procid), "SLURMD_NODENAME": f"node0{procid + 1}"}
        done = run(["--slurm", "--print"], env)
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
        assert json.loads(done.stdout) == {
            "cluster": {"worker": ["node01:2222", "node02:2222"]},
            "task": {"type": "worker", "index": procid}}


def test_arbitrary_placement_from_the_hostfile_srun_read(tmp_path):
    # srun given no -w reads SLURM_HOSTFILE (which the tasks inherit): a name or NAME*N per entry,
    # commas or lines, # comments; only the first SLURM_STEP_NUM_TASKS names count.
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# the step's tasks\nn2,n1  # two\nn2*2\n\nn1\nn2\n")
    placed = ["n2", "n1", "n2", "n2", "n1"]
    for procid in range(5):
        env = _as_slurm_sets_it(procid, "n[1-2]", "2,3", placed, "arbitrary",
                                {"SLURM_HOSTFILE": str(hostfile)})
        assert cluster_env.slurm_tf_config(env, 2222)["cluster"]["worker"] == [
            "n2:2222", "n1:2222", "n2:2223", "n2:2224", "n1:2223"]
    assert cluster_env.read_hostfile(hostfile, 99) == ["n2", "n1", "n2", "n2", "n1", "n2"]
    # A hostfile that no longer says where the tasks run (srun -w given after all) is refused.
    hostfile.write_text("n1\nn2*4\n")
    env = _as_slurm_sets_it(0, "n[1-2]", "2,3", placed, "arbitrary",
                            {"SLURM_HOSTFILE": str(hostfile)})
    with pytest.raises(UserError, match=r"^SLURM_HOSTFILE=\S+ does not place this step's 5 "):
        cluster_env.slurm_tf_config(env, 2222)


def test_the_batch_script_itself_is_no_worker():
    # The batch shell of a 2 x 3 task job: the job's variables only, and its own SLURM_GTIDS=0.
    env = {"SLURM_PROCID": "0", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_TASKS_PER_NODE": "3(x2)",
           "SLURM_NTASKS": "6", "SLURMD_NODENAME": "n1", "SLURM_NODEID": "0",
           "SLURM_LOCALID": "0", "SLURM_GTIDS": "0"}
    with pytest.raises(UserError, match=r"^task 0 has SLURM_GTIDS=0, but block placement over "
                                        r"SLURM_JOB_NODELIST gives 0,1,2: SLURM_JOB_NODELIST is "
                                        r"the job's, not a step's: run this under srun, one task "
                                        r"per worker$"):
        cluster_env.slurm_tf_config(env, 2222)
