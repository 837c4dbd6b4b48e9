"""TF_CONFIG for a worker of a Kubernetes Indexed Job or of a Slurm job step, then the trainer in
its place.

    python -m t2t_lite.cluster_env --workers=2 --hosts=t2t-trainer-{index}.t2t-workers \\
        --port=2222 -- t2t-lite-trainer --problem=... --data_dir=... --model_dir=...
    srun python3 -m t2t_lite.cluster_env --slurm --port=2222 -- t2t-lite-trainer ...

An Indexed Job (completionMode: Indexed) gives each pod its index in JOB_COMPLETION_INDEX and the
hostname <job name>-<index>; with `subdomain:` naming a headless Service, each pod is reached at
<job name>-<index>.<service>. This module builds the cluster from those names (`--hosts`, with
{index} filled in for 0 .. workers-1), sets TF_CONFIG with this pod's index as its task, and
exec()s the command: the trainer becomes the container's main process and receives Kubernetes'
SIGTERM itself.

Under srun (`--slurm`), every task of the step is a worker and SLURM_PROCID its index. The
workers' hosts come from the step's node list and tasks per node (SLURM_STEP_NODELIST and
SLURM_STEP_TASKS_PER_NODE, else the job's) and srun's placement of the tasks on those nodes
(SLURM_DISTRIBUTION): block (srun's default when there are more tasks than nodes: node 0 runs
tasks 0 .. n0-1, node 1 the next ones, ...), cyclic (its default otherwise: one task to each node
in turn), plane=N, their socket and core levels (block:cyclic, ...) and ,pack / ,nopack, all laid
out as Slurm does (task_nodes); arbitrary from the file SLURM_HOSTFILE names (or a
SLURM_ARBITRARY_NODELIST with a name per task); only an arbitrary placement whose list is not in
the environment (srun -m arbitrary -w LIST) is refused.
Tasks that share a node listen on consecutive ports: worker i's address is its node's name and
--port plus i's place among that node's tasks (its SLURM_LOCALID). The task's own SLURMD_NODENAME,
SLURM_NODEID, SLURM_LOCALID and SLURM_GTIDS are checked against the placement derived. The
trainer exec()d in the task's place receives Slurm's SIGTERM (`--signal=TERM@120`,
`scancel --signal=TERM`) itself; deploy/slurm/train.sbatch is the recipe.

Mistakes end with one `error:` line and status 1. Imports nothing but the standard library and
t2t_lite.errors, so it starts in milliseconds.
"""
import argparse
import json
import os
import re
import sys

from t2t_lite import exit_status
from t2t_lite.errors import UserError

INDEX_ENV = "JOB_COMPLETION_INDEX"


def indexed_job_tf_config(index, workers, hosts, port):
    """The TF_CONFIG (a dict) of worker `index` of `workers`, whose addresses are
    `hosts.format(index=i)`:`port`."""
    if workers < 1:
        raise UserError(f"--workers={workers}: a cluster needs at least one worker")
    if not 0 <= index < workers:
        raise UserError(f"{INDEX_ENV}={index} is out of range for --workers={workers} "
                        f"(indices 0 to {workers - 1}): set the Job's completions and "
                        "parallelism to the number of workers")
    if "{index}" not in hosts and workers > 1:
        raise UserError(f"--hosts={hosts} has no {{index}}: every worker would get one address")
    _check_port(port)
    try:
        addresses = [f"{hosts.format(index=i)}:{port}" for i in range(workers)]
    except (KeyError, IndexError, ValueError):
        raise UserError(f"--hosts={hosts} has braces other than {{index}}") from None
    return {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}


def _check_port(port):
    if not 0 < port < 65536:
        raise UserError(f"--port={port} is not a TCP port")


# Slurm ------------------------------------------------------------------------------------------

class _BadList(ValueError):
    pass


def _split_top(text):
    """`text` split at the commas outside brackets."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "[":
            depth += 1
            if depth > 1:
                raise _BadList("nested brackets")
        elif char == "]":
            depth -= 1
            if depth < 0:
                raise _BadList("a ] without its [")
        elif char == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    if depth:
        raise _BadList("a [ without its ]")
    parts.append(text[start:])
    return parts


def _range(item):
    """The numbers of one item of a bracket, "7" or "01-10", as strings padded like the low
    bound ("01-10" gives 01 .. 10, "1-10" gives 1 .. 10)."""
    low, dash, high = item.partition("-")
    if not low.isdigit() or (dash and not high.isdigit()):
        raise _BadList(f"[{item}] is not a number or a range of numbers")
    if not dash:
        return [low]
    if int(high) < int(low):
        raise _BadList(f"[{item}] runs backwards")
    if int(high) - int(low) >= 1_000_000:
        raise _BadList(f"[{item}] is too long a range")
    width = len(low) if low.startswith("0") else 0
    return [str(n).zfill(width) for n in range(int(low), int(high) + 1)]


def _expand_one(name):
    """The host names one entry stands for: every bracket a choice, left to right, as Slurm does
    ("rack[1-2]-n[1-2]" is rack1-n1, rack1-n2, rack2-n1, rack2-n2)."""
    open_ = name.find("[")
    if open_ < 0:
        if "]" in name:
            raise _BadList("a ] without its [")
        return [name]
    close = name.index("]", open_)
    prefix, inside, rest = name[:open_], name[open_ + 1:close], name[close + 1:]
    numbers = [n for item in inside.split(",") for n in _range(item)]
    tails = _expand_one(rest)
    return [prefix + number + tail for number in numbers for tail in tails]


def expand_hostlist(hostlist):
    """Slurm's compact host list ("node[01-03,7],gpu-a1") as the list of its host names, in order:
    what `scontrol show hostnames` prints. ValueError for a malformed list."""
    hosts = []
    for entry in _split_top(hostlist.strip()):
        if not entry:
            raise _BadList("an empty name")
        hosts.extend(_expand_one(entry))
    return hosts


def expand_tasks_per_node(value):
    """Slurm's tasks per node ("2(x3),1") as one count per node ([2, 2, 2, 1])."""
    counts = []
    for part in value.strip().split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not match:
            raise _BadList(f"{part!r} is not N or N(xM)")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


def _env(environ, *names):
    """The first of `names` set (non-empty) in `environ`, as (name, value); (names[0], None) if
    none is."""
    for name in names:
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return names[0], None


def _integer(name, value):
    try:
        return int(value)
    except ValueError:
        raise UserError(f"{name}={value} is not a number") from None


# How srun places a step's tasks on its nodes (--distribution, -m; SLURM_DISTRIBUTION in the
# tasks). The number of tasks on each node is Slurm's decision and is in SLURM_STEP_TASKS_PER_NODE;
# which task ids a node gets follows from those counts and the node-level distribution, as
# Slurm's src/common/slurm_step_layout.c (22.05) lays them out:
#   block      node 0 gets tasks 0 .. n0-1, node 1 the next n1, and so on (also with pack/nopack,
#              which only change the counts);
#   cyclic     one task to each node in turn, skipping the nodes that have all theirs;
#   plane=P    blocks of P tasks to each node in turn, skipping the nodes that have all theirs;
#   arbitrary  task i on the i-th name of the list given to srun (-w, or SLURM_HOSTFILE).
# The levels after the first (block:cyclic, cyclic:fcyclic:block) place tasks on sockets and
# cores inside a node: they do not move a task to another node.

_LEVELS = {"block", "cyclic", "fcyclic", "*"}


def parse_distribution(value, plane_size=None):
    """SLURM_DISTRIBUTION as ("block" | "cyclic" | "arbitrary", None) or ("plane", size), the
    placement over nodes. `plane_size` is SLURM_DIST_PLANESIZE, which srun sets beside
    SLURM_DISTRIBUTION=plane. None or "" is srun's default for a step whose tasks are more than
    its nodes, block. ValueError for what srun does not set."""
    text = (value or "").strip().lower()
    base, _, flags = text.partition(",")
    for flag in filter(None, flags.split(",")):
        if flag not in ("pack", "nopack"):
            raise ValueError(f"{flag!r} is not pack or nopack")
    if base in ("", "pack", "nopack"):  # no base: srun leaves it to slurmctld, which takes block
        return "block", None
    if base.startswith("plane"):
        if base == "plane":
            size = (plane_size or "").strip()
            if not size:
                raise ValueError("plane without a size (SLURM_DIST_PLANESIZE is not set)")
        elif base.startswith("plane="):
            size = base[len("plane="):]
        else:
            raise ValueError(f"{base!r} is not plane=N")
        if not size.isdigit() or int(size) < 1:
            raise ValueError(f"the plane size {size!r} is not a positive number")
        return "plane", int(size)
    if base in ("arbitrary", "hostfile"):
        return "arbitrary", None
    levels = base.split(":")
    if len(levels) > 3 or not all(level in _LEVELS for level in levels) or \
            levels[0] == "fcyclic":
        raise ValueError(f"{base!r} is not a distribution srun sets")
    return ("cyclic" if levels[0] == "cyclic" else "block"), None


def task_nodes(kind, counts, plane_size=None):
    """The node (an index into `counts`) of each task of a step, task 0 first, for the
    node-level distribution `kind` ("block", "cyclic" or "plane", from parse_distribution) and
    the tasks per node `counts`, as Slurm lays them out."""
    total, nodes = sum(counts), []
    if kind == "block":
        for node, count in enumerate(counts):
            nodes.extend([node] * count)
        return nodes
    step = 1 if kind == "cyclic" else plane_size
    given = [0] * len(counts)
    while len(nodes) < total:
        for node, count in enumerate(counts):
            take = min(step, count - given[node])
            nodes.extend([node] * take)
            given[node] += take
    return nodes


def read_hostfile(path, ntasks):
    """The first `ntasks` host names of a Slurm hostfile (SLURM_HOSTFILE), as srun reads one:
    names separated by commas or lines, `#` to the end of a line a comment (`\\#` a #), NAME*N
    for N times NAME."""
    names = []
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            line = re.sub(r"(?<!\\)#.*", "", line.rstrip("\n")).replace("\\#", "#").strip()
            for name in filter(None, (part.strip() for part in line.split(","))):
                host, star, times = name.partition("*")
                if star and times.isdigit() and int(times) > 0:
                    names.extend([host] * min(int(times), ntasks))
                else:
                    names.append(name)
            if len(names) >= ntasks:
                break
    return names[:ntasks]


def _arbitrary_nodes(environ, hosts, counts, ntasks, where):
    """The node of each task under -m arbitrary: task i runs on the i-th name of the list srun
    was given. srun passes that list on only when it came from a file named by SLURM_HOSTFILE
    (which srun reads when given no -w), or from sbatch as SLURM_ARBITRARY_NODELIST with a name
    per task."""
    name, path = _env(environ, "SLURM_HOSTFILE")
    if path is not None:
        try:
            order, listed = read_hostfile(path, ntasks), path
        except OSError as error:
            raise UserError(f"{where}: cannot read SLURM_HOSTFILE={path}, the list of which "
                            f"node runs which task: {error.strerror}") from None
    else:
        name, listed = _env(environ, "SLURM_ARBITRARY_NODELIST")
        try:
            order = expand_hostlist(listed) if listed is not None else []
        except ValueError:
            order = []
        if len(order) != ntasks:
            raise UserError(
                f"{where}: which node runs which task is not in the tasks' environment (srun "
                "-m arbitrary passes its -w list on only from a file named by SLURM_HOSTFILE): "
                "put the list in a file, one name a task, and set SLURM_HOSTFILE to it instead "
                "of giving -w, or use block, cyclic or plane")
    index = {host: i for i, host in enumerate(hosts)}
    nodes = [index.get(host, -1) for host in order]
    if len(order) != ntasks or -1 in nodes or \
            [nodes.count(i) for i in range(len(hosts))] != counts:
        raise UserError(f"{name}={listed} does not place this step's {ntasks} task(s) as "
                        f"{where} says: it is not this step's list")
    return nodes


def slurm_tf_config(environ, port):
    """The TF_CONFIG (a dict) of this task of a Slurm job step, from srun's variables in
    `environ`: SLURM_PROCID (this worker's index), SLURM_STEP_NUM_TASKS / SLURM_NTASKS,
    SLURM_STEP_NODELIST / SLURM_JOB_NODELIST, SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE
    and SLURM_DISTRIBUTION (with SLURM_DIST_PLANESIZE; SLURM_HOSTFILE or SLURM_ARBITRARY_NODELIST
    for arbitrary). Worker i's address is its node's name and `port` plus its place among that
    node's tasks (its SLURM_LOCALID). What this task's own variables say (SLURMD_NODENAME,
    SLURM_NODEID, SLURM_LOCALID, SLURM_GTIDS) is checked against the placement derived."""
    _check_port(port)
    name, procid = _env(environ, "SLURM_PROCID")
    if procid is None:
        raise UserError("SLURM_PROCID is not set: run this as a task of a job step, "
                        "srun python3 -m t2t_lite.cluster_env --slurm ..., one task per worker")
    procid = _integer(name, procid)
    list_name, hostlist = _env(environ, "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                               "SLURM_NODELIST")
    if hostlist is None:
        raise UserError("SLURM_STEP_NODELIST and SLURM_JOB_NODELIST are not set: run this "
                        "under srun, inside a job")
    try:
        hosts = expand_hostlist(hostlist)
    except ValueError as error:
        raise UserError(f"{list_name}={hostlist} is not a Slurm host list: {error}") from None
    counts_name, counts = _slurm_tasks_per_node(environ, hosts, f"{list_name}={hostlist}")
    tasks_name, ntasks = _env(environ, "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS")
    ntasks = sum(counts) if ntasks is None else _integer(tasks_name, ntasks)
    placed_by = (f"{list_name}={hostlist} (one task a node)" if counts_name is None
                 else f"{counts_name}={environ[counts_name].strip()}")
    if ntasks != sum(counts):
        raise UserError(f"{tasks_name}={ntasks} but {placed_by} places {sum(counts)} task(s)")
    if not 0 <= procid < ntasks:
        raise UserError(f"SLURM_PROCID={procid} is out of range for {tasks_name}={ntasks}")
    if max(counts) > 1 and port + max(counts) - 1 > 65535:
        raise UserError(f"--port={port} plus {max(counts) - 1} (tasks on one node) is past "
                        "65535: give a lower --port")

    nodes, described = _slurm_task_nodes(environ, hosts, counts, ntasks,
                                          f"{list_name}={hostlist}")
    addresses, local_ids, on_node = _worker_addresses(hosts, nodes, port)
    # Without the step's variables this is no task of srun's (the batch script itself, say).
    fix = ("the step's variables disagree with one another: give srun --distribution=block"
           if list_name == "SLURM_STEP_NODELIST" else
           f"{list_name} is the job's, not a step's: run this under srun, one task per worker")
    _check_own_place(environ, procid, (hosts, nodes, local_ids, on_node),
                     f"{described} over {list_name}", fix)
    return {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": procid}}


def _slurm_tasks_per_node(environ, hosts, hosts_given):
    """(the variable read or None, the task count on each of `hosts`) from
    SLURM_STEP_TASKS_PER_NODE / SLURM_TASKS_PER_NODE; one task a node where neither is set.
    `hosts_given` names the host list (NAME=VALUE) for the message on a mismatch."""
    counts_name, counts = _env(environ, "SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE")
    if counts is None:
        return None, [1] * len(hosts)  # no tasks per node: one task on each
    try:
        counts = expand_tasks_per_node(counts)
    except ValueError as error:
        raise UserError(f"{counts_name}={environ[counts_name].strip()} is not Slurm's tasks "
                        f"per node: {error}") from None
    if len(counts) != len(hosts):
        raise UserError(f"{counts_name}={environ[counts_name].strip()} gives "
                        f"{len(counts)} node(s), {hosts_given} {len(hosts)}")
    return counts_name, counts


def _slurm_task_nodes(environ, hosts, counts, ntasks, hosts_given):
    """(each task's node index, the placement described) from SLURM_DISTRIBUTION (with
    SLURM_DIST_PLANESIZE, or the arbitrary host file); on one node all distributions agree."""
    dist_name, distribution = _env(environ, "SLURM_DISTRIBUTION")
    if len(hosts) == 1:
        return [0] * ntasks, "the placement"  # one node: all distributions agree
    try:
        kind, plane = parse_distribution(distribution, environ.get("SLURM_DIST_PLANESIZE"))
    except ValueError as error:
        raise UserError(f"{dist_name}={distribution}: {error}; srun's forms are block, "
                        "cyclic, plane=N or arbitrary, then :socket and :core levels "
                        "(block:cyclic) and ,pack or ,nopack") from None
    described = f"{kind} placement" if plane is None else f"plane={plane} placement"
    if kind == "arbitrary":
        nodes = _arbitrary_nodes(environ, hosts, counts, ntasks,
                                 f"{dist_name}={distribution} over {hosts_given}")
    else:
        nodes = task_nodes(kind, counts, plane)
    return nodes, described


def _worker_addresses(hosts, nodes, port):
    """(each task's host:port, each task's SLURM_LOCALID, each node's tasks) for tasks placed
    on `nodes`: a node's k-th task listens on `port` + k."""
    addresses, local_ids, on_node = [], [], [[] for _ in hosts]
    for task, node in enumerate(nodes):
        local_ids.append(len(on_node[node]))
        on_node[node].append(task)
        addresses.append(f"{hosts[node]}:{port + local_ids[-1]}")
    return addresses, local_ids, on_node


def _check_own_place(environ, procid, placement, described, fix):
    """One line if what Slurm told this task about its own place disagrees with `placement`
    (the hosts, each task's node and local id, each node's tasks): the cluster would then be
    wrong on every worker."""
    hosts, nodes, local_ids, on_node = placement
    node = nodes[procid]
    here = environ.get("SLURMD_NODENAME", "").strip()
    if here and hosts[node] != here:
        raise UserError(f"task {procid} runs on {here}, but {described} puts it on "
                        f"{hosts[node]}: {fix}")
    checks = [("SLURM_NODEID", str(node)), ("SLURM_LOCALID", str(local_ids[procid])),
              ("SLURM_GTIDS", ",".join(map(str, on_node[node])))]
    for name, expected in checks:
        given = environ.get(name, "").strip()
        if given and given.replace(" ", "") != expected:
            raise UserError(f"task {procid} has {name}={given}, but {described} gives "
                            f"{expected}: {fix}")


# The command ------------------------------------------------------------------------------------

def _index(raw):
    if raw is None or not raw.strip():
        raise UserError(f"{INDEX_ENV} is not set: run this in a Job with completionMode: Indexed, "
                        "or pass --index")
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"{INDEX_ENV}={raw} is not a worker index") from None


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m t2t_lite.cluster_env",
        description="Set TF_CONFIG for worker $JOB_COMPLETION_INDEX of an Indexed Job, or (with "
                    "--slurm) for task $SLURM_PROCID of a Slurm job step, then run COMMAND "
                    "(after --) in this process's place.")
    parser.add_argument("--workers", type=int, default=None, help="number of workers")
    parser.add_argument("--hosts", default=None,
                        help="each worker's host name, {index} standing for its index")
    parser.add_argument("--port", type=int, default=2222,
                        help="the workers' port (2222); with --slurm, the first port on each "
                             "node: a node's tasks use port, port+1, ...")
    parser.add_argument("--index", default=None,
                        help=f"this worker's index (default: ${INDEX_ENV})")
    parser.add_argument("--slurm", action="store_true",
                        help="take the workers from srun's variables: every task of the job "
                             "step is a worker, SLURM_PROCID its index")
    parser.add_argument("--print", action="store_true",
                        help="print TF_CONFIG instead of running a command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    if not args.slurm:
        missing = [f"--{name}" for name in ("workers", "hosts") if getattr(args, name) is None]
        if missing:
            parser.error(f"the following arguments are required: {', '.join(missing)} "
                         "(or --slurm)")
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        given = [f"--{name}" for name in ("workers", "hosts", "index")
                 if getattr(args, name) is not None]
        if args.slurm and given:
            raise UserError(f"--slurm takes the workers from Slurm's variables: leave out "
                            f"{', '.join(given)}")
        if not command and not args.print:
            raise UserError("no command to run: give it after --, as in -- t2t-lite-trainer ...")
        if args.slurm:
            config = slurm_tf_config(os.environ, args.port)
        else:
            index = _index(args.index if args.index is not None else os.environ.get(INDEX_ENV))
            config = indexed_job_tf_config(index, args.workers, args.hosts, args.port)
        config = json.dumps(config)
        if args.print:
            print(config)
            return exit_status.OK
        os.environ["TF_CONFIG"] = config
        try:
            os.execvp(command[0], command)
        except OSError as error:
            raise UserError(f"cannot run {command[0]}: {error.strerror}") from None
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return exit_status.USER_ERROR


if __name__ == "__main__":
    sys.exit(main())
