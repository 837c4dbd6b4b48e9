"""t2t-lite-attention-plot end to end on a model_dir with random weights (no training needed)."""
import os
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

from t2t_lite import exit_status, hparams
from t2t_lite.ids import RESERVED_TOKENS
from t2t_lite.models.transformer import Transformer
from t2t_lite.model_dir import files as model_dir_lib

pytestmark = pytest.mark.slow  # trains or runs the CLIs end to end; -m 'not slow' skips it

SYMBOLS = ["the", "cat", "sat", "on", "mat", "die", "Katze", "saß", "auf", "Matte"]
# Beam 2 and a short max_length keep random-weight decoding (which rarely emits EOS) fast.
# One layer: fewer figures to draw (the drawing itself is tested in test_attention.py).
GIN_PARAMS = ["MAX_LENGTH = 12", "ModelConfig.num_layers = 1", "DecodeConfig.beam_size = 2",
              "DecodeConfig.extra_length = 4"]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("attention_model")
    vocab_path = root / "toy.symbols.txt"
    vocab_path.write_text("\n".join(RESERVED_TOKENS + tuple(SYMBOLS)) + "\n", encoding="utf-8")
    vocab_size = len(RESERVED_TOKENS) + len(SYMBOLS)
    configs = hparams.load("tiny", GIN_PARAMS)
    config = configs[0]
    directory = str(root / "model")
    model_dir_lib.write_run_info(directory, "translate_toy", "tiny", GIN_PARAMS, str(vocab_path),
                                 vocab_size, configs)
    keras.utils.set_random_seed(1)
    model = Transformer(config, vocab_size)
    tf.train.CheckpointManager(tf.train.Checkpoint(model=model), directory, 1).save(5)
    return directory


def run_plot(*args):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, "-m", "t2t_lite.bin.attention_plot", *args],
                          capture_output=True, text=True, env=env, timeout=300)


def test_writes_pngs_and_html_for_the_models_own_translation(model_dir, tmp_path):
    out = tmp_path / "plots"
    result = run_plot(f"--model_dir={model_dir}", "--source=the cat sat on the mat",
                      f"--output_dir={out}")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "translation: " in result.stdout
    layers = hparams.load("tiny", GIN_PARAMS)[0].num_layers
    expected = {f"{kind}_layer{n}.png" for kind in ("encoder_self", "decoder_self",
                                                    "encoder_decoder")
                for n in range(1, layers + 1)}
    assert set(os.listdir(out)) == expected | {"attention.html"}
    page = (out / "attention.html").read_text(encoding="utf-8")
    # JSON's escaped "</" inside the page's script element: "<\/s>" is EOS's "</s>".
    assert '"source": ["the", "cat", "sat", "on", "the", "mat", "<\\/s>"]' in page


def test_missing_model_dir_is_one_error_line(tmp_path):
    result = run_plot(f"--model_dir={tmp_path / 'nowhere'}", "--source=the cat",
                      f"--output_dir={tmp_path / 'plots'}")
    assert result.returncode == exit_status.USER_ERROR
    # TensorFlow's C++ start-up lines may precede it; the message itself is the last line.
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("error: ") and "nowhere" in last
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "plots").exists()
