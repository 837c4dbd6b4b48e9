"""The Python examples of docs/decoding.md ("From Python") run as written, on the session's tiny
model_dir and its export in place of the demo's, and print one translation per input."""
import ast
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # every test here runs end to end

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(REPO, "docs", "decoding.md")


def _examples():
    text = open(PAGE, encoding="utf-8").read()
    return re.findall(r"^\*tested\*\n```python\n(.*?)^```", text, re.M | re.S)


def test_the_python_examples_translate(model_dir, export_version_dir):
    examples = _examples()
    assert len(examples) == 2
    places = {"runs/ende_gettext/model": model_dir,
              "runs/ende_gettext/export": os.path.dirname(export_version_dir)}
    for code in examples:
        assert len(code.strip().splitlines()) == 3  # three lines, as the page promises
        for name, path in places.items():
            code = code.replace(f'"{name}"', repr(path))
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                cwd=REPO, timeout=300,
                                env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
        assert result.returncode == 0, result.stderr[-3000:]
        translations = ast.literal_eval(result.stdout.strip().splitlines()[-1])
        assert isinstance(translations, list) and len(translations) == 1
        assert isinstance(translations[0], str)
