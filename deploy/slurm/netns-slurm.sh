#!/usr/bin/env bash
# A Slurm of several nodes on one machine, each node a slurmd in a network namespace of its own,
# to try the recipe on more than one node (run as root):
#
#   apt-get install -y slurm-wlm munge iproute2  # Debian / Ubuntu
#   deploy/slurm/netns-slurm.sh start /tmp/slurm2 2   # 2 nodes: node1, node2
#   export SLURM_CONF=/tmp/slurm2/slurm.conf     # sbatch, srun, squeue, scancel use this cluster
#   ...
#   deploy/slurm/netns-slurm.sh stop /tmp/slurm2
#
# `start DIR [NODES]` (2 nodes unless told) makes a bridge in this namespace with the
# controller's address, and for each node a network namespace joined to the bridge by a veth
# pair, with its own address; it starts munged (as the munge user) and slurmctld here, and in
# each node's namespace a slurmd named after the node (`slurmd -N nodeK`), in a mount and UTS
# namespace of its own whose host name is the node's name and whose /etc/hosts (bind-mounted
# from DIR/hosts) names every node and the controller: node names resolve on every node, as
# they must for the workers' addresses. The jobs' tasks run inside their node's namespaces.
# Everything the script makes is named after DIR's own random suffix (the bridge t2tb-XXXX,
# the namespaces t2t-XXXX-nodeK) and listed in DIR/made, which `stop` undoes: it cancels the
# jobs, waits for them to end, stops the daemons by their pid files, and removes the namespaces,
# the veth pairs and the bridge. Nothing outside DIR is written but those network objects.
#
# SLURM_SUBNET (default: a free 10.R.S.0/24) holds the addresses: .1 the controller, .11, .12,
# ... the nodes. SLURMCTLD_PORT and SLURMD_PORT (default 6817 and 6818, Slurm's own), NODE_CPUS
# (default 4, whatever the machine has: SlurmdParameters=config_overrides). As in
# one-node-slurm.sh, cred_expire=10 and sched_interval=2 so that a requeued job starts again
# within seconds.
set -euo pipefail

usage() { echo "usage: $0 start DIR [NODES] | stop DIR" >&2; exit 2; }
[ $# -ge 2 ] && [ $# -le 3 ] || usage
action=$1
dir=$(realpath -m "$2")
nodes=${3:-2}
ctld_port=${SLURMCTLD_PORT:-6817}
slurmd_port=${SLURMD_PORT:-6818}
node_cpus=${NODE_CPUS:-4}
export SLURM_CONF=$dir/slurm.conf

fail() { echo "error: $*" >&2; exit 1; }

free_subnet() {
    local candidate
    for _ in $(seq 200); do
        candidate="10.$((RANDOM % 200 + 20)).$((RANDOM % 250 + 1))"
        if ! ip -o -4 addr show | grep -q " $candidate\." &&
            ! ip -4 route show | grep -q "^$candidate\."; then
            echo "$candidate"
            return
        fi
    done
    fail "no free 10.x.y.0/24 subnet found: set SLURM_SUBNET"
}

start() {
    [ "$(id -u)" -eq 0 ] || fail "run it as root: it makes network namespaces, and slurmd starts jobs as their users"
    for program in munged slurmctld slurmd sbatch sinfo ip nsenter unshare runuser; do
        command -v "$program" >/dev/null || fail "$program is not installed: apt-get install -y slurm-wlm munge iproute2"
    done
    id munge >/dev/null 2>&1 || fail "there is no munge user: apt-get install -y munge"
    [[ $nodes =~ ^[1-9][0-9]?$ ]] || fail "NODES=$nodes is not a number of nodes from 1 to 99"
    [ ! -e "$dir/made" ] || fail "$dir already has a Slurm (stop it first: $0 stop $dir)"
    mkdir -p "$dir"/{munge,state,spool,log}
    chmod 755 "$dir"
    : > "$dir/made"
    local tag subnet host i name ns
    tag=$(od -An -N2 -tx1 /dev/urandom | tr -d ' \n')
    subnet=${SLURM_SUBNET:-$(free_subnet)}
    subnet=${subnet%.0/24}
    host=$(hostname -s)

    # The network: a bridge here, a namespace and a veth pair per node.
    ip link add "t2tb-$tag" type bridge
    echo "link t2tb-$tag" >> "$dir/made"
    ip addr add "$subnet.1/24" dev "t2tb-$tag"
    ip link set "t2tb-$tag" up
    printf '127.0.0.1 localhost\n%s.1 %s\n' "$subnet" "$host" > "$dir/hosts"
    for i in $(seq "$nodes"); do
        name=node$i ns=t2t-$tag-$name
        ip netns add "$ns"
        echo "netns $ns" >> "$dir/made"
        ip link add "t2t$tag$i" type veth peer name eth0 netns "$ns"
        echo "link t2t$tag$i" >> "$dir/made"
        ip link set "t2t$tag$i" master "t2tb-$tag" up
        ip -n "$ns" addr add "$subnet.$((10 + i))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$ns" link set lo up
        echo "$subnet.$((10 + i)) $name" >> "$dir/hosts"
    done

    chown munge: "$dir/munge"
    chmod 755 "$dir/munge"   # the socket must be reachable by every user
    runuser -u munge -- test -x "$dir/munge" ||
        fail "the munge user cannot reach $dir: every folder above it must be searchable by all (chmod o+x)"
    head -c 1024 /dev/urandom > "$dir/munge/munge.key"
    chown munge: "$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
    runuser -u munge -- munged --socket="$dir/munge/munge.socket" \
        --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"

    cat > "$SLURM_CONF" <<CONF
ClusterName=netns
SlurmctldHost=$host($subnet.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$dir/log/jobs.txt
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
NodeName=node[1-$nodes] NodeAddr=$subnet.[11-$((10 + nodes))] CPUs=$node_cpus State=UNKNOWN
PartitionName=main Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -f "$SLURM_CONF"
    for i in $(seq "$nodes"); do
        name=node$i ns=t2t-$tag-$name
        mkdir -p "$dir/spool/$name"
        # Its own host name and /etc/hosts (private mounts: nothing leaks to this namespace).
        # nsenter, not `ip netns exec`, which mounts a /sys of its own, without the cgroup file
        # system slurmd reads.
        nsenter --net="/run/netns/$ns" unshare --mount --uts --propagation private -- sh -c \
            'mount --bind "$1" /etc/hosts && hostname "$2" && exec slurmd -f "$3" -N "$2"' \
            sh "$dir/hosts" "$name" "$SLURM_CONF"
    done
    local deadline=$((SECONDS + 60))
    until [ "$(sinfo -h -N -o '%t' 2>/dev/null | grep -cx 'idle')" -eq "$nodes" ]; do
        [ $SECONDS -lt $deadline ] || fail "the $nodes node(s) did not all come up in 60 s: see $dir/log/"
        sleep 0.5
    done
    echo "Slurm is up with $nodes node(s) (node1 .. node$nodes on $subnet.0/24): export SLURM_CONF=$SLURM_CONF"
}

stop() {
    [ -d "$dir" ] || fail "$dir does not exist"
    if [ -e "$SLURM_CONF" ] && [ -e "$dir/slurmctld.pid" ]; then
        local jobs
        jobs=$(squeue --noheader --format=%i 2>/dev/null | tr '\n' ' ')
        if [ -n "${jobs// }" ]; then
            # shellcheck disable=SC2086
            scancel --full --signal=KILL $jobs 2>/dev/null || true   # no save: a teardown
            # shellcheck disable=SC2086
            scancel $jobs 2>/dev/null || true                        # the pending ones too
        fi
        local deadline=$((SECONDS + 30))
        while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do
            sleep 0.5
        done
    fi
    local file pid
    for file in "$dir"/slurmd-*.pid "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
        [ -e "$file" ] || continue
        pid=$(cat "$file")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$file"
    done
    if [ -e "$dir/made" ]; then
        local kind name
        # Namespaces first (their veth ends go with them), then the links left here.
        while read -r kind name; do
            [ "$kind" = netns ] && { ip netns del "$name" 2>/dev/null || true; }
        done < "$dir/made"
        while read -r kind name; do
            [ "$kind" = link ] && { ip link del "$name" 2>/dev/null || true; }
        done < "$dir/made"
        rm -f "$dir/made"
    fi
}

case $action in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
