"""The REST examples: docs/decoding.md shows serving/examples/ as they are, and
serving/make_examples.py still writes files of the same layout from an export."""
import json
import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "serving", "examples")
# In the order the page shows them.
SHOWN = [("serving_default", "request"), ("serving_default", "response"), ("nbest", "response"),
         ("score", "request"), ("score", "response"), ("translate_with_settings", "request"),
         ("translate_with_settings", "response")]


def _example(name, kind, folder=EXAMPLES):
    with open(os.path.join(folder, f"{name}.{kind}.json"), encoding="utf-8") as f:
        return json.load(f)


def test_the_page_shows_the_example_files():
    text = open(os.path.join(REPO, "docs", "decoding.md"), encoding="utf-8").read()
    section = text[text.index("### REST requests and responses"):text.index("### gRPC from Python")]
    blocks = [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", section, re.M | re.S)]
    assert blocks == [_example(name, kind) for name, kind in SHOWN]


def _layout(value):
    """The JSON's shape with the strings and numbers taken out."""
    if isinstance(value, dict):
        return {key: _layout(v) for key, v in value.items()}
    if isinstance(value, list):
        return [_layout(v) for v in value[:1]]
    return type(value).__name__


@pytest.mark.slow
def test_make_examples_writes_the_same_layout(export_version_dir, tmp_path):
    requests = {name: _example(name, "request") for name in
                ("serving_default", "nbest", "score", "translate_with_settings")}
    sentences = requests["serving_default"]["instances"]
    targets = [instance["targets"] for instance in requests["score"]["instances"]]
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "serving", "make_examples.py"),
         f"--export_dir={export_version_dir}", f"--out_dir={tmp_path}",
         *[f"--sentence={s}" for s in sentences], *[f"--target={t}" for t in targets]],
        capture_output=True, text=True, timeout=600, cwd=REPO,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3"))
    assert result.returncode == 0, result.stderr[-3000:]
    for name, request in requests.items():
        assert _example(name, "request", str(tmp_path)) == request
        # The layout only: the test export is a random-weight model with beam 2.
        assert _layout(_example(name, "response", str(tmp_path))) == _layout(
            _example(name, "response"))
