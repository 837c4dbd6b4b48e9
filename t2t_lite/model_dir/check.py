"""What a model_dir says is checked before anything is built from it.

A model_dir is data someone may have edited or sent: its configs.json could ask for a model of
10^10 embeddings or 100,000 layers. Every tool that loads one (decoder, exporter, averager,
scorer, warm start) first checks the configs against sane bounds and against the checkpoint's
own variable shapes, which the checkpoint's index lists without a weight being read, and
refuses a mismatch in one line naming the first difference. Only then is the model built.

`expected_shapes` is the Transformer's variable layout written out from its config;
tests/model_dir/test_check.py holds it equal to a built model's checkpoint for every variant.
"""
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
    "extra_length": (-(1 << 16), 1 << 16),
}


def check_bounds(values, where, why=""):
    """UserError for the first of `values` ({name: number}) outside BOUNDS."""
    for name, value in values.items():
        low, high = BOUNDS[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise UserError(f"{where}: {name} = {value!r} is outside the sane range "
                            f"[{low}, {high}]{why}")


def expected_shapes(model_config, vocab_size):
    """{checkpoint variable name under model/: shape} of the Transformer `model_config` builds."""
    c = model_config
    d, heads, dk, dv = c.d_model, c.num_heads, c.key_dim, c.value_dim
    shapes = {"embedding/embeddings": [vocab_size, d]}
    if c.position_encoding == "learned":
        shapes["positions/table"] = [c.max_length, d]
    if c.norm_position == "pre":
        for stack in ("encoder", "decoder"):
            shapes.update({f"{stack}_final_norm/beta": [d], f"{stack}_final_norm/gamma": [d]})

    def sublayer(prefix, attention):
        if attention:
            shapes.update({f"{prefix}/query_kernel": [d, heads, dk],
                           f"{prefix}/key_kernel": [d, heads, dk],
                           f"{prefix}/value_kernel": [d, heads, dv],
                           f"{prefix}/output_kernel": [heads, dv, d]})
            if c.attention_bias:
                shapes.update({f"{prefix}/query_bias": [heads, dk],
                               f"{prefix}/key_bias": [heads, dk],
                               f"{prefix}/value_bias": [heads, dv],
                               f"{prefix}/output_bias": [d]})
        else:
            shapes.update({f"{prefix}/inner/_kernel": [d, c.d_ff], f"{prefix}/inner/bias": [c.d_ff],
                           f"{prefix}/outer/_kernel": [c.d_ff, d], f"{prefix}/outer/bias": [d]})
        shapes.update({f"{prefix}_residual/norm/beta": [d], f"{prefix}_residual/norm/gamma": [d]})

    for index in range(c.num_layers):
        for stack, parts in (("encoder", ("self_attention",)),
                             ("decoder", ("self_attention", "cross_attention"))):
            for part in parts:
                sublayer(f"{stack}_layer_{index}/{part}", attention=True)
            sublayer(f"{stack}_layer_{index}/feed_forward", attention=False)
    return {f"model/{name}": shape for name, shape in shapes.items()}


def checkpoint_shapes(checkpoint_path):
    """{variable name under model/: shape} of the model weights a checkpoint holds.

    Read from the checkpoint's index and its object graph, never its weights. A training
    checkpoint stores a weight once, under the first path its object graph reaches it by (often
    the optimizer's), so names are found by walking the graph from the `model` node."""
    import tensorflow as tf
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    from t2t_lite.model_dir import checkpoints

    missing = checkpoints.missing_files(checkpoint_path)
    if missing:
        raise UserError(f"checkpoint {checkpoint_path} is incomplete: {missing[0]} is missing")
    try:
        reader = tf.train.load_checkpoint(checkpoint_path)
        shapes = reader.get_variable_to_shape_map()
        graph = trackable_object_graph_pb2.TrackableObjectGraph()
        graph.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    except (tf.errors.OpError, IndexError, ValueError) as error:
        damaged = checkpoints.damaged_file(checkpoint_path) or checkpoint_path + ".index"
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
    fields = ("num_layers", "d_model", "d_ff", "num_heads", "d_k", "d_v", "max_length")
    why = "; the model_dir is damaged or was edited"
    check_bounds({"vocab_size": vocab_size,
                  **{name: getattr(model_config, name) for name in fields}}, where, why)
    if decode_config is not None:
        check_bounds({"beam_size": decode_config.beam_size,
                      "extra_length": decode_config.extra_length}, where, why)
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
