"""Choosing a tf.distribute strategy: several workers, several GPUs, or the default."""
import json
import os

import tensorflow as tf

from t2t_lite.errors import UserError


def cluster_workers():
    """Number of workers named in TF_CONFIG (0 when unset)."""
    raw = os.environ.get("TF_CONFIG")
    if not raw:
        return 0
    try:
        cluster = json.loads(raw).get("cluster", {})
    except ValueError as error:
        raise UserError(f"TF_CONFIG is not valid JSON: {error}") from None
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def make_strategy(num_gpus=None):
    """MultiWorkerMirroredStrategy when TF_CONFIG names several workers; MirroredStrategy over
    `num_gpus` (None: all visible GPUs) when there are two or more; else the default strategy."""
    if cluster_workers() > 1:
        return tf.distribute.MultiWorkerMirroredStrategy()
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


def worker_id(strategy):
    resolver = getattr(strategy, "cluster_resolver", None)
    return 0 if resolver is None else int(resolver.task_id or 0)
