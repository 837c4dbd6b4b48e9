"""Op time by part of the model, from the TensorFlow profiler (bench_train and bench_decode)."""
import collections
import glob
import os

# Host-side events that wrap ops rather than being ops.
_SKIP = ("$", "__inference", "EagerLocal", "KernelAndDevice", "ExecutorState")


def op_time_by_part(run, logdir, part_of):
    """Traces run() and returns a Counter {part: picoseconds}, part_of(scope_path, op_type) naming
    each op event's part (op time summed over threads: shares, not wall time)."""
    import tensorflow as tf
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    tf.profiler.experimental.start(logdir)
    run()
    tf.profiler.experimental.stop()
    space = xplane_pb2.XSpace()
    newest = sorted(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))[-1]
    with open(newest, "rb") as f:
        space.ParseFromString(f.read())
    totals = collections.Counter()
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                name = plane.event_metadata[event.metadata_id].name
                if ":" in name and not name.startswith(_SKIP):
                    totals[part_of(*name.rsplit(":", 1))] += event.duration_ps
    return totals
