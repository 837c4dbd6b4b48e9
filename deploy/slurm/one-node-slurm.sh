#!/usr/bin/env bash
# A one-node Slurm in one folder, to try the recipe on a single machine (run as root):
#
#   apt-get install -y slurm-wlm munge           # Debian / Ubuntu
#   deploy/slurm/one-node-slurm.sh start /tmp/slurm
#   export SLURM_CONF=/tmp/slurm/slurm.conf      # sbatch, srun, squeue, scancel use this cluster
#   ...
#   deploy/slurm/one-node-slurm.sh stop /tmp/slurm
#
# `start` writes a munge key, slurm.conf and the state, spool and log folders under DIR, starts
# munged (as the munge user), slurmctld and slurmd, and waits until the node takes jobs. This host
# is the controller and the only node, with all its CPUs. Nothing outside DIR is written or read
# but the installed programs. `stop` cancels the jobs, waits for them to end, and stops the
# daemons it started (their pid files are in DIR). Ports: SLURMCTLD_PORT and SLURMD_PORT
# (default 6817 and 6818, Slurm's own).
#
# Two settings differ from Slurm's defaults, so that a requeued job starts again within seconds:
# job credentials expire after 10 s (cred_expire, default 120 s), and Slurm holds a requeued job
# for that long plus 1 s before it may start; the scheduler looks at the pending jobs every 2 s
# (sched_interval, default 60 s).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$(realpath -m "$2")
ctld_port=${SLURMCTLD_PORT:-6817}
slurmd_port=${SLURMD_PORT:-6818}
export SLURM_CONF=$dir/slurm.conf

fail() { echo "error: $*" >&2; exit 1; }

start() {
    [ "$(id -u)" -eq 0 ] || fail "run it as root: slurmd starts jobs as their users"
    for program in munged slurmctld slurmd sbatch; do
        command -v "$program" >/dev/null || fail "$program is not installed: apt-get install -y slurm-wlm munge"
    done
    id munge >/dev/null 2>&1 || fail "there is no munge user: apt-get install -y munge"
    [ ! -e "$dir/slurmctld.pid" ] || fail "$dir already has a Slurm (stop it first: $0 stop $dir)"
    mkdir -p "$dir"/{munge,state,spool,log}
    chmod 755 "$dir"
    chown munge: "$dir/munge"
    chmod 755 "$dir/munge"   # the socket must be reachable by every user
    runuser -u munge -- test -x "$dir/munge" ||
        fail "the munge user cannot reach $dir: every folder above it must be searchable by all (chmod o+x)"
    # A fresh key: munged only trusts a key its user alone can read.
    head -c 1024 /dev/urandom > "$dir/munge/munge.key"
    chown munge: "$dir/munge/munge.key"
    chmod 400 "$dir/munge/munge.key"
    runuser -u munge -- munged --socket="$dir/munge/munge.socket" \
        --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
        --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"

    local host cpus
    host=$(hostname -s)
    cpus=$(nproc)
    cat > "$SLURM_CONF" <<CONF
ClusterName=one-node
SlurmctldHost=$host
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket,cred_expire=10
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
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
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=main Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
    slurmctld -f "$SLURM_CONF"
    slurmd -f "$SLURM_CONF"
    local deadline=$((SECONDS + 60))
    until sinfo -h -N -o '%t' 2>/dev/null | grep -qx 'idle'; do
        [ $SECONDS -lt $deadline ] || fail "the node did not come up in 60 s: see $dir/log/"
        sleep 0.5
    done
    echo "Slurm is up: export SLURM_CONF=$SLURM_CONF"
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
    local name pid
    for name in slurmd slurmctld munge/munged; do
        [ -e "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$dir/$name.pid"
    done
}

case $action in
    start) start ;;
    stop) stop ;;
    *) usage ;;
esac
