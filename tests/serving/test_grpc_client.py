"""docs/decoding.md's gRPC client runs as written against a PredictionService serving the
session's export, and prints what the export's own nbest signature gives."""
import os
import re
import subprocess
import sys

import pytest
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(REPO, "docs", "decoding.md")

pytestmark = pytest.mark.slow


def _client_code():
    text = open(PAGE, encoding="utf-8").read()
    blocks = re.findall(r"^\*tested against the stand-in gRPC server\*\n```python\n(.*?)^```",
                        text, re.M | re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_docs_grpc_client_prints_the_best_translations(export_version_dir, grpc_port):
    code = _client_code()
    sentences = re.search(r"make_tensor_proto\((\[.*?\])\)", code).group(1)
    assert '"localhost:8500"' in code
    result = subprocess.run(
        [sys.executable, "-c", code.replace('"localhost:8500"', f'"127.0.0.1:{grpc_port}"')],
        capture_output=True, text=True, timeout=300,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    expected = tf.saved_model.load(export_version_dir).signatures["nbest"](
        inputs=tf.constant(eval(sentences)))  # noqa: S307 - the page's own list literal
    lines = result.stdout.strip().splitlines()
    assert len(lines) == len(expected["outputs"])
    for line, hypotheses, scores in zip(lines, expected["outputs"].numpy(),
                                        expected["scores"].numpy()):
        text, score = line.rsplit("\t", 1)
        assert text == hypotheses[0].decode()
        assert float(score) == pytest.approx(float(scores[0]), abs=1e-5)
