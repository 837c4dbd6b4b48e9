"""Choosing a tf.distribute strategy: several workers, several GPUs, or the default.

TF_CONFIG is checked here before TensorFlow reads it (tf_config): a mistake in it ends with one
`error:` line, not TensorFlow's traceback or an endless wait. Under several workers the cluster
must form within T2T_LITE_CLUSTER_TIMEOUT seconds (default 600), or the trainer ends naming the
addresses that refused connections, with status 1 (make_strategy).
"""
import json
import os
import signal
import sys

import tensorflow as tf

from t2t_lite import exit_status
from t2t_lite.errors import UserError
from t2t_lite.training import lost_workers, preemption

CLUSTER_TIMEOUT_ENV = "T2T_LITE_CLUSTER_TIMEOUT"
DEFAULT_CLUSTER_TIMEOUT = 600  # seconds: pods or nodes that start minutes apart still meet
_JOBS = ("chief", "worker")  # the tasks of a MultiWorkerMirroredStrategy run
_EXAMPLE = '{"cluster": {"worker": ["host0:2222", "host1:2222"]}, "task": {"type": "worker", ' \
           '"index": 0}}'


def tf_config():
    """TF_CONFIG as a dict ({} when unset), checked: JSON, a cluster of "host:port" lists with
    no address twice, and, when it names more than one task, this process's task (a type of the
    cluster and an index in range). Raises UserError naming the mistake."""
    raw = os.environ.get("TF_CONFIG", "")
    if not raw.strip():
        return {}
    try:
        config = json.loads(raw)
    except ValueError as error:
        raise UserError(f"TF_CONFIG is not valid JSON: {error}") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise UserError(f"TF_CONFIG has no \"cluster\" object; it looks like {_EXAMPLE}")
    cluster = config["cluster"]
    seen = {}
    for task_type, addresses in cluster.items():
        if not isinstance(addresses, list) or not addresses:
            raise UserError(f"TF_CONFIG's cluster.{task_type} is not a list of \"host:port\" "
                            f"addresses: {json.dumps(addresses)}")
        for index, address in enumerate(addresses):
            host, _, port = str(address).rpartition(":")
            if not isinstance(address, str) or not host or not port.isdigit():
                raise UserError(f"TF_CONFIG's {task_type} {index} is {json.dumps(address)}, "
                                "not a \"host:port\" address")
            key = address.lower()
            if key in seen:
                raise UserError(f"TF_CONFIG lists {address} twice ({seen[key]} and {task_type} "
                                f"{index}): each worker needs an address of its own")
            seen[key] = f"{task_type} {index}"
    if sum(len(cluster.get(job, [])) for job in _JOBS) > 1:
        _check_task(config, cluster)
    return config


def _check_task(config, cluster):
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        raise UserError("TF_CONFIG has no \"task\" with a type and an index: each worker's "
                        "TF_CONFIG names its own, as in \"task\": {\"type\": \"worker\", "
                        "\"index\": 0}")
    task_type, index = task["type"], task["index"]
    if task_type not in _JOBS or task_type not in cluster:
        raise UserError(f"TF_CONFIG's task type {json.dumps(task_type)} is not one of the "
                        f"cluster's {' or '.join(j for j in _JOBS if j in cluster)}")
    size = len(cluster[task_type])
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < size:
        raise UserError(f"TF_CONFIG's task index {json.dumps(index)} is out of range: the "
                        f"cluster has {size} {task_type}(s), indices 0 to {size - 1}")


def cluster_workers(config=None):
    """Number of workers named in TF_CONFIG (`config`: tf_config()'s dict, read when None; 0
    when unset)."""
    cluster = (tf_config() if config is None else config).get("cluster", {})
    return sum(len(cluster.get(job, [])) for job in _JOBS)


def cluster_timeout():
    """Seconds the workers have to find each other (T2T_LITE_CLUSTER_TIMEOUT, default 600)."""
    raw = os.environ.get(CLUSTER_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_CLUSTER_TIMEOUT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = 0
    if not seconds > 0:
        raise UserError(f"{CLUSTER_TIMEOUT_ENV}={raw} is not a positive number of seconds")
    return seconds


def make_strategy(num_gpus=None):
    """MultiWorkerMirroredStrategy when TF_CONFIG names several workers; MirroredStrategy over
    `num_gpus` (None: all visible GPUs) when there are two or more; else the default strategy."""
    config = tf_config()
    if cluster_workers(config) > 1:
        return _multi_worker_strategy(config)
    gpus = tf.config.list_logical_devices("GPU")
    if num_gpus is not None and num_gpus > len(gpus):
        raise UserError(f"--num_gpus={num_gpus} but only {len(gpus)} GPU(s) are visible")
    wanted = gpus if num_gpus is None else gpus[:num_gpus]
    if len(wanted) >= 2:
        return tf.distribute.MirroredStrategy([d.name for d in wanted])
    if len(wanted) == 1:
        return tf.distribute.OneDeviceStrategy(wanted[0].name)
    return tf.distribute.get_strategy()


def is_chief(strategy):
    """True on the worker that writes checkpoints and summaries (always, off multi-worker)."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not resolver.cluster_spec().as_dict():
        return True
    task_type, task_id = resolver.task_type, resolver.task_id
    if task_type == "chief":
        return True
    has_chief = "chief" in resolver.cluster_spec().as_dict()
    return task_type == "worker" and task_id == 0 and not has_chief


def in_cluster(strategy):
    """True for a strategy make_strategy built over the workers of a TF_CONFIG cluster."""
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy)


def own_task(strategy):
    """This worker's (task type, index) in its cluster, as lost_workers' functions name tasks."""
    resolver = strategy.cluster_resolver
    return resolver.task_type, int(resolver.task_id)


def worker_id(strategy):
    resolver = getattr(strategy, "cluster_resolver", None)
    return 0 if resolver is None else int(resolver.task_id or 0)


def _multi_worker_strategy(config):
    """MultiWorkerMirroredStrategy, with TensorFlow's coordination service configured as the
    strategy would (its leader, its jobs) but for the wait: every task registers at a barrier
    that times out after cluster_timeout() seconds, where TensorFlow's own waits far longer on
    the chief. A cluster that does not form in time is one UserError naming the addresses that
    refuse connections, then the process ends (_leave)."""
    from tensorflow.compiler.xla.tsl.protobuf import coordination_config_pb2
    from tensorflow.python.eager import context

    timeout = cluster_timeout()
    cluster = config["cluster"]
    jobs = [job for job in _JOBS if job in cluster]
    if context.context().coordination_service is None:
        context.context().configure_coordination_service(
            service_type="standalone", service_leader=f"/job:{jobs[0]}/replica:0/task:0",
            coordinated_jobs=[coordination_config_pb2.CoordinatedJob(
                name=job, num_tasks=len(cluster[job])) for job in jobs],
            cluster_register_timeout_in_ms=int(timeout * 1000))
        # Set on the config the context keeps: configure_coordination_service has no argument
        # for it. Without it the chief's wait for the others ignores the timeout.
        context.context().coordination_service.cluster_register_with_barrier = True
    task = config["task"]
    print(f"cluster: {task['type']} {task['index']} of {sum(len(cluster[job]) for job in jobs)}, "
          f"waiting up to {timeout:g} s ({CLUSTER_TIMEOUT_ENV}) for every worker to join",
          flush=True)
    try:
        return tf.distribute.MultiWorkerMirroredStrategy()
    except (tf.errors.DeadlineExceededError, tf.errors.UnavailableError) as error:
        task = config["task"]
        own = (task["type"], task["index"])
        silent = [f"{job} {index} ({address})" for job in jobs
                  for index, address in enumerate(cluster[job])
                  if (job, index) != own and not lost_workers.accepts(address)]
        seconds = f"{timeout:g} s ({CLUSTER_TIMEOUT_ENV})"
        if silent:
            _leave(f"{', '.join(silent)} refused connections for {seconds}: start every worker "
                   "with the same TF_CONFIG cluster and its own task index, or fix the address")
        _leave(f"the workers of TF_CONFIG did not all join within {seconds} "
               f"({lost_workers.first_line(error)}): start every worker with the same TF_CONFIG "
               "cluster and its own task index")


# Where TensorFlow's coordination service records a SIGTERM its own handler took (the task it
# came to): MultiWorkerMirroredStrategy() puts that handler in place of the trainer's while the
# workers join, with the GIL held, so the trainer cannot see the signal itself.
PREEMPTION_KEY = "TF_DEFAULT_PREEMPTION_NOTICE_KEY"
_KEY_WAIT_MS = 1000  # the notice is written by the signalled task's agent, maybe a moment late


def stop_if_signalled_while_joining(strategy):
    """Under a cluster, right after the join and once the trainer's own handlers are back
    (preemption.Signals.install): every worker reads the coordination service's preemption key,
    then waits until every other has read it too (the service lives in worker 0, which must not
    leave first), and if any worker got a SIGTERM while they joined, all end together with its
    status: there is nothing to save before the first step."""
    if not in_cluster(strategy):
        return
    from tensorflow.python.eager import context

    coordination = context.context()
    timeout_ms = int(cluster_timeout() * 1000)
    try:
        coordination.wait_at_barrier("t2t_lite: joined", timeout_ms)
        try:
            signalled = coordination.get_config_key_value(PREEMPTION_KEY, _KEY_WAIT_MS)
        except tf.errors.OpError:  # no notice within the wait: no SIGTERM came
            signalled = None
        coordination.wait_at_barrier("t2t_lite: join signals read", timeout_ms)
    except tf.errors.OpError as error:
        _leave(f"a worker left the cluster before the first step ({lost_workers.first_line(error)})"
               ": start it again with the same TF_CONFIG, or restart every worker")
    if signalled:
        print(f"SIGTERM while the workers joined (to {signalled}): nothing to save yet, exiting",
              file=sys.stderr, flush=True)
        preemption.leave_now(preemption.EXIT_STATUS[signal.SIGTERM])


def _leave(message):
    """The line cli.run prints for a UserError, then out at once with status 1: TensorFlow's
    teardown of a coordination agent that failed to register adds its own complaint after the
    line, and nothing can run TensorFlow in this process any more."""
    print(f"error: {message}", file=sys.stderr, flush=True)
    preemption.leave_now(exit_status.USER_ERROR)
