"""What a model_dir says is checked before anything is built from it.

A model_dir is data someone may have edited or sent: its configs.json could ask for a model of
10^10 embeddings or 100,000 layers. Every tool that loads one (decoder, exporter, averager,
scorer, warm start) first checks the configs against sane bounds and against the checkpoint's
own variable shapes, which the checkpoint's index lists without a weight being read, and
refuses a mismatch in one line naming the first difference. Only then is the model built.

Each bound alone still lets values add up to more than a machine holds, so the products are
bounded too: the model's weights (and its sinusoid table) against a fixed ceiling and this
machine's memory, before the checkpoint's shapes are compared or anything is allocated; and one
line's decode, beam × the longest decode the model allows. Exports (SavedModel, CTranslate2)
carry the same settings in their metadata, checked by `check_settings`.

`expected_shapes` is the model's own variable layout (its class's `layout`, models/layout.py);
tests/model_dir/test_limits.py holds it equal to a built model's checkpoint for every variant.
"""
import dataclasses
import math
import numbers
import os

# No TensorFlow at import (nor models, the checkpoint reader): the bounds are what a tool's flags
# are checked against before TensorFlow loads, so that a refusal costs no start-up (issue 54).
from t2t_lite.config import (MAX_EXTRA_LENGTH, MAX_NO_REPEAT_NGRAM_SIZE, MODEL_DIMENSIONS,
                             ModelConfig)
from t2t_lite.errors import UserError

# Far beyond any model this package trains; past them a configs.json is broken, not ambitious.
BOUNDS = {
    "vocab_size": (4, 1 << 22),  # the 3 reserved ids and one more; 4M
    "num_layers": (1, 256),
    "d_model": (2, 1 << 16),
    "d_ff": (1, 1 << 18),
    "num_heads": (1, 1024),
    "d_k": (0, 1 << 14),
    "d_v": (0, 1 << 14),
    "max_length": (2, 1 << 16),
    "beam_size": (1, 1024),
    # Past the source, a line decodes at most this many steps (the step budget, see
    # decoding/translate.py); a larger configured value is a hang, not a setting.
    "extra_length": (-(1 << 16), MAX_EXTRA_LENGTH),
    # The rule against loops' n (decoding/repeats.py): past it the check costs, and sees, nothing
    # a shorter n does not.
    "no_repeat_ngram_size": (0, MAX_NO_REPEAT_NGRAM_SIZE),
}
# The ModelConfig fields BOUNDS holds: the model's dimensions and the longest sequence.
MODEL_FIELDS = (*MODEL_DIMENSIONS, "max_length")
# Real numbers: NaN compares false with everything, so finiteness is checked first. At |5|, the
# GNMT penalty of a 65,536-token output (10,923^5) stays far inside float32.
FLOAT_BOUNDS = {"alpha": (-5.0, 5.0)}
# Weights (and the sinusoid table) a model may hold: 8.6G, 40 times the paper's big model.
MAX_WEIGHTS = 1 << 33
# One line's beam × decode steps: beam 4 at the longest max_length, 4 times over. Each of them
# holds a position of every layer's cache.
MAX_BEAM_STEPS = 1 << 20


def check_bounds(values, where, why=""):
    """UserError for the first of `values` ({name: number}) outside BOUNDS or FLOAT_BOUNDS (an
    int where a float goes is fine; a bool, a string or a non-finite number never is)."""
    for name, value in values.items():
        if name in FLOAT_BOUNDS:
            low, high = FLOAT_BOUNDS[name]
            number = isinstance(value, numbers.Real) and not isinstance(value, bool)
            good = number and math.isfinite(value) and low <= value <= high
        else:
            low, high = BOUNDS[name]
            good = (isinstance(value, int) and not isinstance(value, bool)
                    and low <= value <= high)
        if not good:
            raise UserError(f"{where}: {name} = {value!r} is outside the sane range "
                            f"[{low}, {high}]{why}")


def machine_memory():
    """Bytes of memory this process may use: the machine's, or its container's limit."""
    try:
        total = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        total = None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as f:
                limit = f.read().strip()
        except OSError:
            continue
        if limit.isdigit():
            total = min(total, int(limit)) if total else int(limit)
    return total


def model_elements(model_config, vocab_size):
    """Numbers the model holds once built: its weights and its constants (a sinusoid table of
    max_length × d_model)."""
    from t2t_lite import models

    return models.layout_of(model_config, vocab_size).element_count()


def check_model_size(model_config, vocab_size, where, memory=None):
    """UserError unless the model's weights fit MAX_WEIGHTS and, as float32, this machine's
    memory (`memory` bytes; default machine_memory())."""
    check_elements(model_elements(model_config, vocab_size), f"{where} describes a model of",
                   "the model_dir", memory)


def check_elements(elements, what, damaged="the model_dir", memory=None):
    """UserError unless `elements` numbers fit MAX_WEIGHTS and, as float32, `memory` bytes
    (default machine_memory()); `what` opens the message, `damaged` names what was edited."""
    size = f"{elements:,} weights ({elements * 4 / 2 ** 30:,.1f} GiB as float32)"
    if elements > MAX_WEIGHTS:
        raise UserError(f"{what} {size}, more than the sane {MAX_WEIGHTS:,}; {damaged} is "
                        f"damaged or was edited")
    memory = machine_memory() if memory is None else memory
    if memory and elements * 4 > memory:
        raise UserError(f"{what} {size}, more than this machine's {memory / 2 ** 30:,.1f} GiB "
                        f"of memory")


def check_beam_steps(beam_size, max_length, where):
    """UserError unless one line's beam × its longest decode (max_length) is at most
    MAX_BEAM_STEPS."""
    if beam_size * max_length > MAX_BEAM_STEPS:
        raise UserError(f"{where}: beam_size {beam_size} × max_length {max_length} = "
                        f"{beam_size * max_length:,} beam steps per line is more than the sane "
                        f"{MAX_BEAM_STEPS:,}")


def expected_shapes(model_config, vocab_size):
    """{checkpoint variable name under model/: shape} of the model `model_config` builds."""
    from t2t_lite import models

    return models.layout_of(model_config, vocab_size).shapes()


def checkpoint_shapes(checkpoint_path):
    """{variable name under model/: shape} of the model weights a checkpoint holds.

    Read from the checkpoint's index and its object graph, never its weights. A training
    checkpoint stores a weight once, under the first path its object graph reaches it by (often
    the optimizer's), so names are found by walking the graph from the `model` node."""
    import tensorflow as tf
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    from t2t_lite.model_dir import checkpoint_reader

    missing = checkpoint_reader.missing_files(checkpoint_path)
    if missing:
        raise UserError(f"checkpoint {checkpoint_path} is incomplete: {missing[0]} is missing")
    try:
        reader = tf.train.load_checkpoint(checkpoint_path)
        shapes = reader.get_variable_to_shape_map()
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    except (tf.errors.OpError, IndexError, ValueError) as error:
        damaged = checkpoint_reader.damaged_file(checkpoint_path) or checkpoint_path + ".index"
        raise UserError(f"cannot read checkpoint {checkpoint_path}: {damaged} is damaged or "
                        f"truncated ({' '.join(str(error).split())[:200]})") from None
    found = {}
    queue = [(child.node_id, "model") for child in graph.nodes[0].children
             if child.local_name == "model"]
    seen = {node for node, _ in queue}
    while queue:  # breadth first, as the saver names a weight by the first path to it
        node, path = queue.pop(0)
        for attribute in graph.nodes[node].attributes:
            if attribute.name == "VARIABLE_VALUE" and attribute.checkpoint_key in shapes:
                found[path] = list(shapes[attribute.checkpoint_key])
        for child in graph.nodes[node].children:
            if child.node_id not in seen:
                seen.add(child.node_id)
                queue.append((child.node_id, f"{path}/{child.local_name}"))
    return found


def check_model_dir(model_config, vocab_size, checkpoint_path, where, decode_config=None):
    """UserError unless `model_config` (with `vocab_size` and, if given, `decode_config`) is
    within BOUNDS and describes exactly the model weights of `checkpoint_path`."""
    why = "; the model_dir is damaged or was edited"
    check_bounds({"vocab_size": vocab_size,
                  **{name: getattr(model_config, name) for name in MODEL_FIELDS}}, where, why)
    if decode_config is not None:
        check_bounds({"beam_size": decode_config.beam_size, "alpha": decode_config.alpha,
                      "extra_length": decode_config.extra_length,
                      "no_repeat_ngram_size": decode_config.no_repeat_ngram_size}, where, why)
        check_beam_steps(decode_config.beam_size, model_config.max_length, where)
    # Before the index is read: shapes that match it may still be more than any machine holds.
    check_model_size(model_config, vocab_size, where)
    check_shapes(expected_shapes(model_config, vocab_size), checkpoint_shapes(checkpoint_path),
                 where, checkpoint_path)


def check_shapes(expected, stored, where, checkpoint_path):
    """UserError naming the first variable whose shape differs, or that only one side has."""
    for name in sorted(set(expected) | set(stored)):
        if name not in stored:
            raise UserError(f"{where} describes a model with {name} {expected[name]}, which "
                            f"checkpoint {checkpoint_path} does not have")
        if name not in expected:
            raise UserError(f"checkpoint {checkpoint_path} holds {name} {stored[name]}, which "
                            f"the model {where} describes does not have")
        if expected[name] != stored[name]:
            raise UserError(f"{name}: {where} gives shape {expected[name]}, checkpoint "
                            f"{checkpoint_path} holds {stored[name]}")


DAMAGED_EXPORT = "; the export is damaged or was edited"


def check_settings(settings, where, why=DAMAGED_EXPORT):
    """UserError unless an export's settings (describe()'s JSON, t2t_lite.json) are within the
    bounds a model_dir's are: beam, lengths, alpha, vocabulary size, and the model they name.
    why: what the message adds about the cause."""
    check_is_settings(settings, where)
    check_bounds({name: settings.get(name) for name in
                  ("beam_size", "alpha", "extra_length", "max_length", "vocab_size")}, where, why)
    # An export written before the rule against loops has none: 0.
    check_bounds({"no_repeat_ngram_size": settings.get("no_repeat_ngram_size", 0)}, where, why)
    check_beam_steps(settings["beam_size"], settings["max_length"], where)
    check_named_model(settings, where, why)


def check_is_settings(settings, where):
    """UserError unless `settings` is a dict (a JSON object) at all."""
    if not isinstance(settings, dict):
        raise UserError(f"{where} holds no t2t_lite settings (a JSON object)")


def check_named_model(settings, where, why=DAMAGED_EXPORT):
    """UserError unless the model_config a settings dict names (if any) is a model within the
    bounds; its vocab_size already checked."""
    values = settings.get("model_config")
    if isinstance(values, dict):
        known = {field.name for field in dataclasses.fields(ModelConfig)}
        try:
            model_config = ModelConfig(**{k: v for k, v in values.items() if k in known})
        except (TypeError, ValueError) as error:
            raise UserError(f"{where}: model_config is not a t2t_lite model ({error})") from None
        check_bounds({name: getattr(model_config, name) for name in MODEL_FIELDS}, where, why)
        check_model_size(model_config, settings["vocab_size"], where)
