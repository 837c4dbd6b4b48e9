"""Test-wide environment: TensorFlow quiet and fast on CPU, Keras on the TF backend."""
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import subprocess  # noqa: E402
import sys  # noqa: E402

import keras  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402

from t2t_lite import hparams  # noqa: E402
from t2t_lite.data import vocab  # noqa: E402
from t2t_lite.models.transformer import Transformer  # noqa: E402
from t2t_lite.model_dir import files as model_dir_lib  # noqa: E402

# ---- a trained-looking model_dir without training, shared by the inference, export and
# model_dir tests: tiny Transformer, random weights, real SentencePiece. Random weights are
# enough: these tests check that every path (checkpoint, SavedModel, decoder CLI) computes the
# same thing, not that translations are good. Session-scoped, so the slow steps (vocabulary,
# checkpoint, SavedModel export) run once.
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORDS = ("the house is small . a cat sat on the mat , and the dog ran away ! we read books "
         "every day ? she said : no . der Hund lief weg und die Katze sass auf der Matte").split()

# Beam 2 and a short max_length keep random-weight decoding (which rarely emits EOS) fast.
GIN_PARAMS = ["MAX_LENGTH = 16", "DecodeConfig.beam_size = 2", "DecodeConfig.extra_length = 6"]


def sentences(count, seed=0):
    import random
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 12))) for _ in range(count)]


def finished(process, timeout):
    """(stdout, stderr) of a Popen child that exited 0 within `timeout` seconds (killed, and the
    timeout raised, past it)."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    assert process.returncode == 0, (stderr if isinstance(stderr, str)
                                     else stderr.decode())[-2000:]
    return stdout, stderr



def copy_model_dir(model_dir, tmp_path, numbers=(10,)):
    """(a copy of the fixture's model_dir listing checkpoints `numbers` (copies of its ckpt-10),
    their paths)."""
    import shutil

    copy = str(tmp_path / "model")
    shutil.copytree(model_dir, copy)
    paths = []
    for number in numbers:
        path = os.path.join(copy, f"ckpt-{number}")
        for name in tf.io.gfile.glob(os.path.join(copy, "ckpt-10.*")):
            target = path + name[len(os.path.join(copy, "ckpt-10")):]
            if target != name:
                shutil.copyfile(name, target)
        paths.append(path)
    tf.compat.v1.train.update_checkpoint_state(copy, paths[-1], all_model_checkpoint_paths=paths)
    return copy, paths

@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("export_model")
    text = root / "sample.txt"
    text.write_text("\n".join(sentences(300)) + "\n", encoding="utf-8")
    vocab_path = vocab.train_sentencepiece(str(text), str(root / "vocab.spm.model"), vocab_size=60)
    from t2t_lite.data.tokenizers import load_tokenizer
    vocab_size = load_tokenizer(vocab_path).vocab_size

    configs = hparams.load("tiny", GIN_PARAMS)
    model_config = configs[0]
    directory = str(root / "model")
    model_dir_lib.write_run_info(directory, "translate_export_test", "tiny", GIN_PARAMS,
                                 vocab_path, vocab_size, configs)
    keras.utils.set_random_seed(3)
    model = Transformer(model_config, vocab_size)
    manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory,
                                         max_to_keep=2)
    manager.save(checkpoint_number=10)
    return directory


def run_cli(module, *args, stdin=None):
    """Runs `python -m t2t_lite.bin.<module> args` and returns the CompletedProcess."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", TF_ENABLE_ONEDNN_OPTS="1")
    return subprocess.run([sys.executable, "-m", f"t2t_lite.bin.{module}", *args], input=stdin,
                          capture_output=True, env=env, cwd=REPO, timeout=300)


@pytest.fixture(scope="session")
def export_version_dir(model_dir, tmp_path_factory):
    """One export through the CLI, shared by every SavedModel test."""
    export_dir = tmp_path_factory.mktemp("exports") / "ende"
    result = run_cli("exporter", f"--model_dir={model_dir}", f"--export_dir={export_dir}")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return str(export_dir / "1")


@pytest.fixture(scope="session")
def cli():
    return run_cli


# Every case the decoder must survive; each still yields exactly one output line.
HOSTILE_LINES = [
    b"the house is small .",
    b"",
    b"   \t ",
    b"a cat sat on the mat " * 500,  # 10,500 characters, far beyond max_length
    b"!!! ... ,,, ???",
    b"der Hund \xff\xfe lief \xc3",  # invalid UTF-8
    b"und die\rKatze",  # carriage return inside the line
    b"we read books\r",  # CRLF line ending
    b"she said : no .",
    b"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",  # characters the vocabulary has never seen
    b"the dog ran away",  # last line, without a newline
]


@pytest.fixture(scope="session")
def hostile_lines():
    return list(HOSTILE_LINES)


@pytest.fixture(scope="session")
def checkpoint_decode(model_dir, tmp_path_factory):
    """t2t-lite-decoder --model_dir on the hostile file, 2-best with scores: (output, stderr)."""
    source = tmp_path_factory.mktemp("decode") / "hostile.txt"
    source.write_bytes(b"\n".join(HOSTILE_LINES))
    output = source.parent / "out.txt"
    result = run_cli("decoder", f"--model_dir={model_dir}", f"--decode_from_file={source}",
                     f"--decode_to_file={output}", "--nbest=2", "--print_scores")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    return output.read_bytes(), result.stderr.decode()


@pytest.fixture(scope="session")
def trained_model_dir(tmp_path_factory):
    """tests/reverse_model.py's trained model_dir, shared by the CTranslate2 export and engine
    tests."""
    from tests import reverse_model

    directory = str(tmp_path_factory.mktemp("ct2_model") / "model")
    loss = reverse_model.write_model_dir(directory)
    assert loss < 1.0, loss  # learning, not necessarily perfect
    return directory


@pytest.fixture(scope="session")
def ct2_dir(trained_model_dir, tmp_path_factory, cli):
    """trained_model_dir through `t2t-lite-exporter --format=ctranslate2`."""
    pytest.importorskip("ctranslate2")
    output = tmp_path_factory.mktemp("ct2_export") / "ct2"
    result = cli("exporter", f"--model_dir={trained_model_dir}", f"--export_dir={output}",
                 "--format=ctranslate2")
    assert result.returncode == 0, result.stderr.decode()[-3000:]
    assert result.stdout.decode().strip() == str(output)
    return str(output)
