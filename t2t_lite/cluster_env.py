"""TF_CONFIG for a worker of a Kubernetes Indexed Job, then the trainer in its place.

    python -m t2t_lite.cluster_env --workers=2 --hosts=t2t-trainer-{index}.t2t-workers \\
        --port=2222 -- t2t-lite-trainer --problem=... --data_dir=... --model_dir=...

An Indexed Job (completionMode: Indexed) gives each pod its index in JOB_COMPLETION_INDEX and the
hostname <job name>-<index>; with `subdomain:` naming a headless Service, each pod is reached at
<job name>-<index>.<service>. This module builds the cluster from those names (`--hosts`, with
{index} filled in for 0 .. workers-1), sets TF_CONFIG with this pod's index as its task, and
exec()s the command: the trainer becomes the container's main process and receives Kubernetes'
SIGTERM itself. Mistakes end with one `error:` line and status 1. Imports nothing but the standard
library and t2t_lite.errors, so it starts in milliseconds.
"""
import argparse
import json
import os
import sys

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
    if not 0 < port < 65536:
        raise UserError(f"--port={port} is not a TCP port")
    try:
        addresses = [f"{hosts.format(index=i)}:{port}" for i in range(workers)]
    except (KeyError, IndexError, ValueError):
        raise UserError(f"--hosts={hosts} has braces other than {{index}}") from None
    return {"cluster": {"worker": addresses}, "task": {"type": "worker", "index": index}}


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
        description="Set TF_CONFIG for worker $JOB_COMPLETION_INDEX of an Indexed Job, then run "
                    "COMMAND (after --) in this process's place.")
    parser.add_argument("--workers", type=int, required=True, help="number of workers")
    parser.add_argument("--hosts", required=True,
                        help="each worker's host name, {index} standing for its index")
    parser.add_argument("--port", type=int, default=2222, help="the workers' port (2222)")
    parser.add_argument("--index", default=None,
                        help=f"this worker's index (default: ${INDEX_ENV})")
    parser.add_argument("--print", action="store_true",
                        help="print TF_CONFIG instead of running a command")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND [ARGS...]")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    try:
        if not command and not args.print:
            raise UserError("no command to run: give it after --, as in -- t2t-lite-trainer ...")
        index = _index(args.index if args.index is not None else os.environ.get(INDEX_ENV))
        config = json.dumps(indexed_job_tf_config(index, args.workers, args.hosts, args.port))
        if args.print:
            print(config)
            return 0
        os.environ["TF_CONFIG"] = config
        try:
            os.execvp(command[0], command)
        except OSError as error:
            raise UserError(f"cannot run {command[0]}: {error.strerror}") from None
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
