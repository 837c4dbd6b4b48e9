"""The planner's constrained-search state (batching.SearchBudget.constraint_bytes) against the
tensors the search really makes: TensorFlow's debug dump (tfdbg2, SHAPE mode) records the shape
of every tensor each op of the search loop makes at run time; per line and step, what the
constrained search makes beyond the plain search must stay within the estimate."""
import json
import os
import subprocess
import sys

import pytest

from t2t_lite.inference import batching

# Run in a child process: the debug dump instruments every graph traced while it is on, and
# TensorFlow cannot turn it on a second time in one process.
MEASURE = r'''
import collections, json, sys
import numpy as np
import tensorflow as tf
from tensorflow.python.debug.lib import debug_events_reader
from t2t_lite.decoding.beam_search import beam_search
from t2t_lite.decoding.constrained_search import constrained_beam_search
from t2t_lite.inference.graph_prefixes import PrefixPieces

folder, configs = sys.argv[1], json.loads(sys.argv[2])
tf.debugging.experimental.enable_dump_debug_info(folder, tensor_debug_mode="SHAPE",
                                                 circular_buffer_size=-1)
searches = {}
for n, c in enumerate(configs):
    rng = np.random.default_rng(n)
    positive = tf.constant(rng.integers(2, c["V"], [c["B"], c["P"], c["A"], c["T"]]), tf.int32)
    negative = tf.constant(rng.integers(2, c["V"], [c["B"], c["Q"], c["U"]]), tf.int32)

    def logits(ids, index, cache, static, vocab=c["V"]):
        return tf.cast(ids[:, None] * tf.range(vocab)[None] % 7, tf.float32), cache

    settings = dict(beam_size=c["K"], max_decode_length=c["L"], early_stopping=False)
    bars = None
    if c["F"]:
        # Every piece begins with the prefix: each form bars the whole vocabulary every step.
        pieces = PrefixPieces([""] * 3 + ["\u2581a" + str(i) for i in range(c["V"] - 3)])
        bars = (tf.constant([["\u2581a"] * c["F"]] * c["B"]), pieces.barred)

    def plain():
        return beam_search(logits, {}, {}, c["B"], c["V"], **settings)

    def constrained():
        return constrained_beam_search(logits, {}, {}, c["B"], c["V"], positive, negative,
                                       prefix_bars=bars, **settings)

    for kind, search in (("plain", plain), ("constrained", constrained)):
        search.__name__ = f"search_{n}_{kind}"  # the graph's name says whose tensors
        tf.function(search)()
tf.debugging.experimental.disable_dump_debug_info()
reader = debug_events_reader.DebugDataReader(folder)
reader.update()
item_bytes = {1: 4, 2: 8, 3: 4, 9: 8, 10: 1, 14: 2, 19: 2}  # DataType enum -> bytes

def owner(graph_id):
    """The names of the graph and of those it is nested in, the tf.function's among them."""
    graph = reader.graph_by_id(graph_id)
    names = [graph.name]
    while graph.outer_graph_id:
        graph = reader.graph_by_id(graph.outer_graph_id)
        names.append(graph.name)
    return "/".join(str(name) for name in names)

made = collections.Counter()
for trace in reader.graph_execution_traces():
    # The loop's body and the branches nested in it (a tf.cond's).
    name = owner(trace.graph_id)
    if any(part.startswith("while_body") for part in name.split("/")):
        _, dtype, _, elements = (int(v) for v in trace.debug_tensor_value[:4])
        made[name] += elements * item_bytes[dtype]
print(json.dumps([{kind: sum(b for name, b in made.items() if f"search_{n}_{kind}" in name)
                   / c["L"] / c["B"] for kind in ("plain", "constrained")}
                  for n, c in enumerate(configs)]))
'''

CONFIGS = [
    # 1-3 short phrases on the demo's vocabulary: the masks dominate.
    dict(B=2, K=4, V=8000, L=20, P=3, A=1, T=4, Q=1, U=2, F=0),
    # Many phrases and alternatives, a small vocabulary: the matches dominate.
    dict(B=2, K=4, V=64, L=6, P=16, A=4, T=5, Q=4, U=5, F=0),
    # Every extent different, long negatives, a wider beam.
    dict(B=3, K=6, V=101, L=10, P=5, A=7, T=11, Q=13, U=17, F=0),
    # Two `*` prefix forms that begin every piece of the demo's vocabulary size.
    dict(B=2, K=4, V=8000, L=8, P=1, A=1, T=2, Q=2, U=2, F=2),
]


@pytest.mark.slow
def test_the_estimate_covers_every_tensor_a_constrained_step_makes(tmp_path):
    script = tmp_path / "measure.py"
    script.write_text(MEASURE)
    result = subprocess.run([sys.executable, str(script), str(tmp_path / "dump"),
                             json.dumps(CONFIGS)], capture_output=True, text=True,
                            env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    measured = json.loads(result.stdout.strip().splitlines()[-1])
    for config, made in zip(CONFIGS, measured):
        # steps(width) == L: the search's decode length.
        budget = batching.search_budget(4096, config["K"], config["V"], extra_length=0,
                                        max_length=config["L"])
        shape = batching.ConstraintShape(*(config[k] for k in "PATQUF"))
        estimate = budget.constraint_bytes(config["L"], shape)
        beyond_plain = made["constrained"] - made["plain"]
        # Every tensor a step makes, summed, bounds what it holds at once; the estimate is not
        # below it, and not far above.
        assert beyond_plain <= estimate <= 1.6 * beyond_plain, (config, made, estimate)
