"""What the bench scripts share: worker processes, alternating rounds, the matmul ceiling, the
Model Garden peer model, and t2t_lite models, batches and FLOP counts built the same way.

Scripts run as `python bench/<script>.py`, so bench/ is on sys.path and `import harness` works;
t2t_lite comes from the installed package. Nothing here imports t2t_lite or TensorFlow at import
time: the Model Garden workers import this module under the peer venv's python, which has no
t2t_lite, and TensorFlow reads its environment (tensorflow_env) only when it is imported.

Worker protocol: a worker is the calling script started again (by `Worker`) with
`--worker=ROLE --worker_config=JSON`; its main() hands those to `worker_main`, which runs the role.
The role sets itself up and calls `serve(name=handler, ...)`. Every message back is one stdout line
`@@{json}` (TensorFlow may print on stdout too); commands are JSON lines on stdin.
"""
import argparse
import collections
import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER_PYTHON = os.path.join(ROOT, "runs", "peer_venv", "bin", "python")
# The script the Model Garden peer figures come from: how its model, loss and decode are set up.
PEER_SCRIPT = os.path.join(os.path.dirname(ROOT), "shared", "peers", "mg_seq2seq_train.py")
PROTOCOL = "@@"


# ------------------------------------------------------------------------------------------------
# environment
def tensorflow_env():
    """TensorFlow's settings for a bench process; call before TensorFlow is imported (they are read
    once, at import). A value the user set is kept."""
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def worker_env(**settings):
    """The environment of a worker process: this one's, TensorFlow quiet, oneDNN as here."""
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=os.environ.get("TF_ENABLE_ONEDNN_OPTS", "1"),
               TF_CPP_MIN_LOG_LEVEL="2")
    env.update(settings)
    return env


@contextlib.contextmanager
def scratch_dir(prefix, given=None):
    """The folder `given`, kept; or a temporary folder, removed afterwards."""
    if given:
        yield given
        return
    folder = tempfile.mkdtemp(prefix=prefix)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def load_note():
    """'load average a / b / c on N CPUs' (machines are shared: read ratios next to it), or None
    where the platform has no load average."""
    if not hasattr(os, "getloadavg"):
        return None
    load = os.getloadavg()
    return f"load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} on {os.cpu_count()} CPUs"


def fmt(value, spec):
    """A table cell: `value` formatted, '-' for None."""
    return "-" if value is None else format(value, spec)


# ------------------------------------------------------------------------------------------------
# worker protocol
def answer(message):
    """Worker side: one message back to the parent."""
    print(PROTOCOL + json.dumps(message), flush=True)


def _message(line):
    """The message an `answer` line carries, or None for any other line."""
    return json.loads(line[len(PROTOCOL):]) if line.startswith(PROTOCOL) else None


def serve(**handlers):
    """Worker side: says it is ready, then answers each command line {"do": NAME, **arguments}
    with handlers[NAME](**arguments) until {"do": "quit"} or the end of stdin."""
    answer({"ready": True})
    for line in sys.stdin:
        command = json.loads(line)
        name = command.pop("do")
        if name == "quit":
            break
        answer(handlers[name](**command))


def worker_main(roles, argv=None):
    """In a process started by `Worker`: runs roles[ROLE](config) and returns True; elsewhere
    returns False (the script's own main goes on)."""
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    parser.add_argument("--worker")
    parser.add_argument("--worker_config")
    known, _ = parser.parse_known_args(argv)
    if not known.worker:
        return False
    roles[known.worker](json.loads(known.worker_config))
    return True


class Worker:
    """A long-lived worker process: `script` (the calling script's file) run by `python` as
    `--worker=ROLE`. Its stderr is this process's; its answers come back from `ask`."""

    def __init__(self, name, python, script, role, config, env=None):
        self.name = name
        self.process = subprocess.Popen(
            [python, os.path.abspath(script), f"--worker={role}",
             f"--worker_config={json.dumps(config)}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env=worker_env() if env is None else env)
        self._ready = False

    def _read(self):
        for line in self.process.stdout:
            message = _message(line)
            if message is not None:
                return message
        raise RuntimeError(f"the {self.name} worker ended (exit {self.process.wait()}); "
                           "its stderr is above")

    def wait_ready(self):
        """Blocks until the worker is set up (built, traced, warmed up)."""
        if not self._ready:
            self._read()
            self._ready = True

    def ask(self, do, **arguments):
        self.wait_ready()
        self.process.stdin.write(json.dumps({"do": do, **arguments}) + "\n")
        self.process.stdin.flush()
        return self._read()

    def close(self):
        try:
            self.process.stdin.write(json.dumps({"do": "quit"}) + "\n")
            self.process.stdin.close()
            self.process.wait(timeout=60)
        except (OSError, ValueError, subprocess.TimeoutExpired):  # gone, or stuck
            self.process.kill()
            self.process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()


def run_for_answers(command, env=None):
    """Runs `command` (a bench script again, e.g. under other environment variables) to its end;
    returns its messages. Its other stdout lines (tables) are printed; its stderr is shown only
    when it fails, as the failure's explanation."""
    done = subprocess.run(command, env=env, capture_output=True, text=True)
    messages = []
    for line in done.stdout.splitlines():
        message = _message(line)
        if message is None:
            print(line)
        else:
            messages.append(message)
    if done.returncode:
        print(f"{os.path.basename(command[1])} failed (exit {done.returncode}):\n"
              f"{done.stderr[-2000:]}", file=sys.stderr)
    return messages


# ------------------------------------------------------------------------------------------------
# alternating rounds
def alternate(contenders, rounds, between=None, report=None):
    """Runs every contender once a round for `rounds` rounds, the order reversed every other round
    (A B C, C B A, ...), so a load that drifts during the run favours none.

    contenders: {name: function(round_index) -> result}.
    between(round_index): called before each round and once after the last (round_index ==
      rounds), e.g. to measure the matmul ceiling beside the contenders.
    report(round_index, name, result): called after each run, e.g. for a progress line.
    Returns {name: [result of each round]}.
    """
    results = {name: [] for name in contenders}
    order = list(contenders)
    for round_index in range(rounds):
        if between:
            between(round_index)
        for name in order if round_index % 2 == 0 else order[::-1]:
            result = contenders[name](round_index)
            results[name].append(result)
            if report:
                report(round_index, name, result)
    if between:
        between(rounds)
    return results


def best_of(results, key=None):
    """{name: the best of its rounds' results} (the largest, by `key`): the rounds a passing load
    slowed down do not count."""
    return {name: max(values, key=key) for name, values in results.items() if values}


def timed(function, *args):
    """(wall seconds, result) of one call."""
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def fastest(function, repeats, *args):
    """(seconds of the fastest of `repeats` calls, its result)."""
    return min((timed(function, *args) for _ in range(repeats)), key=lambda t: t[0])


# ------------------------------------------------------------------------------------------------
# the machine's ceiling
def matmul_flops_per_second(dtype="float32", size=2048, repeats=8, tries=2, threads=1):
    """FLOP/s of large square matmuls in `dtype`: the practical compute ceiling, measured in the
    same run as the figure it scales (machines are shared; the ceiling moves with their load).
    Best of `tries` timings of `repeats` chained [size, size] x [size, size] products.

    threads > 1: that many Python threads multiply at once, and the FLOP/s of all count. That is
    the ceiling of a process whose ops each run on one core (TensorFlow's intra-op threads set to
    1, as for parallel beam searches), where one matmul alone would use a single core.
    """
    import concurrent.futures

    import tensorflow as tf

    a = tf.cast(tf.random.normal([size, size]), dtype)
    b = tf.cast(tf.random.normal([size, size]), dtype)
    multiply = tf.function(lambda x, y: tf.matmul(x, y))
    multiply(a, b).numpy()

    def chain(_=None):
        for _ in range(repeats):
            c = multiply(a, b)
        c.numpy()

    best = float("inf")
    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        for _ in range(tries):
            start = time.perf_counter()
            list(pool.map(chain, range(threads)))
            best = min(best, time.perf_counter() - start)
    return 2 * size ** 3 * repeats * threads / best


def bf16_units():
    """Whether bfloat16 matmuls run on bfloat16 units here: the CPU has them, and oneDNN is not
    capped below them (ONEDNN_MAX_CPU_ISA=AVX2 imitates an AVX2-only machine; oneDNN then aborts
    on a bfloat16 matmul)."""
    from t2t_lite import cpu

    cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    uncapped = cap == "ALL" or "BF16" in cap or "AMX" in cap
    return uncapped and bool(set(cpu.BF16_CPU_FLAGS) & cpu.cpu_flags())


# ------------------------------------------------------------------------------------------------
# op time from the TensorFlow profiler
# Host-side events that wrap ops rather than being ops.
_NOT_OPS = ("$", "__inference", "EagerLocal", "KernelAndDevice", "ExecutorState")


def op_time_by_part(run, logdir, part_of):
    """Traces run() and returns a Counter {part: picoseconds}, part_of(scope_path, op_type) naming
    each op event's part (op time summed over threads: shares, not wall time)."""
    import glob

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
                if ":" in name and not name.startswith(_NOT_OPS):
                    totals[part_of(*name.rsplit(":", 1))] += event.duration_ps
    return totals


def op_time_table(run, steps, logdir, part_of):
    """op_time_by_part of run() (which runs `steps` steps) as printable lines: ms per step and
    share of op time, largest part first."""
    totals = op_time_by_part(run, logdir, part_of)
    total = sum(totals.values()) or 1
    width = max((len(part) for part in totals), default=0)
    lines = [f"op time per step by part ({steps} steps, {logdir}; summed over threads):"]
    lines += [f"  {part:{width}} {ps / 1e9 / steps:8.1f} ms/step {ps / total:6.1%}"
              for part, ps in totals.most_common()]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# TF Model Garden, the peer (these run under the peer venv's python: no t2t_lite)
def add_peer_python(parser):
    """--peer_python, once per parser (bench_peers adds peers_decode's flags to its own)."""
    if "--peer_python" not in parser._option_string_actions:
        parser.add_argument("--peer_python", default=PEER_PYTHON,
                            help="python of the Model Garden venv (set up as "
                                 "shared/peers/mg_seq2seq_train.py describes)")
    return parser


def model_garden_env(**settings):
    """A Model Garden worker's environment: Model Garden needs Keras 2 (tf_keras)."""
    return worker_env(**{"TF_USE_LEGACY_KERAS": "1", **settings})


def peer_missing(python):
    """Why `python` cannot run Model Garden (a line), or None when it can."""
    if not os.path.exists(python):
        return f"{python} does not exist"
    check = subprocess.run(
        [python, "-c", "import tf_keras; from official.nlp.modeling.models import "
                       "seq2seq_transformer"],
        capture_output=True, text=True, env=model_garden_env(TF_CPP_MIN_LOG_LEVEL="3"))
    if check.returncode:
        return (check.stderr.strip().splitlines() or ["import failed"])[-1][:200]
    return None


def model_garden_config(model_config, vocab_size):
    """model_garden_transformer's arguments for the configuration of a t2t_lite ModelConfig."""
    return dict(vocab_size=vocab_size, d_model=model_config.d_model, d_ff=model_config.d_ff,
                num_heads=model_config.num_heads, num_layers=model_config.num_layers,
                dropout=model_config.dropout, attention_dropout=model_config.attention_dropout,
                relu_dropout=model_config.relu_dropout,
                attention_bias=model_config.attention_bias,
                norm_first=model_config.norm_position == "pre",
                norm_epsilon=model_config.layer_norm_epsilon)


def model_garden_transformer(vocab_size, d_model, d_ff, num_heads, num_layers, dec_layers=None,
                             dropout=0.0, attention_dropout=0.0, relu_dropout=0.0,
                             attention_bias=False, norm_first=True, norm_epsilon=1e-6,
                             beam_size=4, alpha=0.6, extra_length=50, seed=0):
    """Model Garden's Seq2SeqTransformer as PEER_SCRIPT builds it (eos 1, pad 0, shared
    embeddings, its own beam search), variables built. Its defaults: pre-norm, no attention
    biases. Random weights from `seed`. Needs TF_USE_LEGACY_KERAS=1 (model_garden_env) before
    TensorFlow is imported."""
    import tensorflow as tf
    from official.nlp.modeling.models import seq2seq_transformer as s2s

    tf.random.set_seed(seed)

    def stack(layers):
        return dict(num_layers=layers, num_attention_heads=num_heads, intermediate_size=d_ff,
                    activation="relu", dropout_rate=dropout,
                    attention_dropout_rate=attention_dropout, use_bias=attention_bias,
                    norm_first=norm_first, norm_epsilon=norm_epsilon,
                    intermediate_dropout=relu_dropout)

    model = s2s.Seq2SeqTransformer(
        vocab_size=vocab_size, embedding_width=d_model, dropout_rate=dropout,
        padded_decode=False, decode_max_length=None, extra_decode_length=extra_length,
        beam_size=beam_size, alpha=alpha,
        encoder_layer=s2s.TransformerEncoder(**stack(num_layers)),
        decoder_layer=s2s.TransformerDecoder(**stack(dec_layers or num_layers)), eos_id=1)
    dummy = tf.constant([[5, 6, 1]], tf.int32)
    model(dict(inputs=dummy, targets=dummy), training=False)
    return model


def model_garden_search(model):
    """Model Garden's beam search as one traced function: int32 [B, S] ids -> [B, L] outputs (the
    best hypothesis, 0-padded; traced once for every shape)."""
    import tensorflow as tf

    search = tf.function(lambda ids: model(dict(inputs=ids), training=False)["outputs"],
                         input_signature=[tf.TensorSpec([None, None], tf.int32)])
    return lambda ids: search(tf.constant(ids, tf.int32)).numpy()


# ------------------------------------------------------------------------------------------------
# t2t_lite
def random_transformer(config, vocab_size, seed=0):
    """A t2t_lite Transformer with seeded random weights (which rarely emit EOS, so every sentence
    decodes to its length limit: the same work for every engine)."""
    import keras

    from t2t_lite.models.transformer import Transformer

    keras.utils.set_random_seed(seed)
    return Transformer(config, vocab_size)


def symbol_vocab(folder, vocab_size):
    """A symbol vocabulary 'w0', 'w1', ... filling vocab_size ids: (its path, the symbols)."""
    from t2t_lite.data import vocab

    symbols = [f"w{i}" for i in range(vocab_size - 3)]  # after the reserved pad, EOS, unknown
    return vocab.write_symbol_vocab(os.path.join(folder, "bench.symbols.txt"), symbols), symbols


def random_model_dir(folder, hparams_set, vocab_size, gin_params=()):
    """A model_dir under `folder` as the trainer writes one (run info, configs, one checkpoint) of
    `hparams_set` with seeded random weights and a symbol vocabulary: (its path, the symbols)."""
    import tensorflow as tf

    from t2t_lite import hparams
    from t2t_lite.model_dir import files

    vocab_path, symbols = symbol_vocab(folder, vocab_size)
    configs = hparams.load(hparams_set, list(gin_params))
    model_dir = os.path.join(folder, "model")
    files.write_run_info(model_dir, "bench", hparams_set, list(gin_params), vocab_path,
                         vocab_size, configs)
    model = random_transformer(configs[0], vocab_size)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), model_dir, 1).save(1)
    return model_dir, symbols


def run_decoder(flags, source, output, command=None):
    """One t2t-lite-decoder process translating `source` into `output`, from the start:
    (its summary: lines, seconds, lines_per_second, ... of the translation itself, without process
    start-up or model load; the process's peak RSS in MiB). Exits with the decoder's last stderr
    lines when it fails. command: what runs the decoder with the flags after it (default
    `python -m t2t_lite.bin.decoder`)."""
    summary = output + ".summary.json"
    command = [*(command or [sys.executable, "-m", "t2t_lite.bin.decoder"]), *flags,
               f"--decode_from_file={source}", f"--decode_to_file={output}",
               f"--summary_file={summary}", "--start_over"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=worker_env(), text=True)
    stderr = process.stderr.read()
    _, status, usage = os.wait4(process.pid, 0)  # wait4: the child's own peak RSS
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode or not os.path.isfile(summary):
        sys.exit(f"t2t-lite-decoder {' '.join(flags)} failed (exit {process.returncode}):\n"
                 f"{stderr[-2000:]}")
    with open(summary) as f:
        result = json.load(f)
    os.remove(summary)
    return result, usage.ru_maxrss / 1024  # Linux reports KiB


def train_steps(hparams_set, gin_params, precision, vocab_size, element_spec=None):
    """(model config, train config, TrainSteps) as the trainer builds them for `hparams_set` under
    Keras policy `precision`, on a seeded random model; TrainSteps.final_step(batch) is one step."""
    import keras
    import tensorflow as tf

    from t2t_lite import hparams
    from t2t_lite.training.schedule import make_schedule, optimizer_with
    from t2t_lite.training.steps import TrainSteps

    model_config, train_config, _ = hparams.load(
        hparams_set, [*gin_params, f"TrainConfig.mixed_precision = '{precision}'"])
    keras.mixed_precision.set_global_policy(precision)
    model = random_transformer(model_config, vocab_size)
    optimizer = optimizer_with(make_schedule(model_config, train_config), train_config)
    optimizer.build(model.trainable_variables)
    steps = TrainSteps(tf.distribute.get_strategy(), model, optimizer,
                       train_config.label_smoothing, 1, element_spec=element_spec,
                       jit_compile=train_config.jit_compile)
    return model_config, train_config, steps


def real_batches(problem_name, data_dir, batch_tokens, max_length, count=12):
    """(vocab size, the first `count` length-bucketed int32 training batches of a data dir)."""
    import tensorflow as tf

    from t2t_lite import problems

    problem = problems.build(problem_name)
    dataset = problem.dataset("train", data_dir, batch_tokens=batch_tokens,
                              max_length=max_length, seed=0)
    batches = [{key: tf.cast(batch[key], tf.int32) for key in ("inputs", "targets")}
               for _, batch in zip(range(count), dataset)]
    return problem.tokenizer(data_dir).vocab_size, batches


def useful_flops(model_config, vocab_size, inputs, targets):
    """Training FLOPs of a batch (int arrays, 0 = pad) with every sentence at its real length:
    work on pads is not counted."""
    from t2t_lite.training.flops import training_flops

    return sum(training_flops(model_config, vocab_size, int(s), int(t))
               for s, t in zip((inputs != 0).sum(axis=1), (targets != 0).sum(axis=1)))


def file_sha256(path):
    """The hex sha256 of a file, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
