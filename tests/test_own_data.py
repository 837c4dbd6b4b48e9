"""docs/own-data.md is run: every block marked *tested* runs, command by command, in one folder
on 1,500 of this machine's gettext EN-DE pairs, with tiny budgets appended to each tool's
command (absl keeps a flag's last value), and each step's output is checked."""
import json
import os
import re
import shlex
import subprocess
import sys

import pytest

from t2t_lite import problems, registry
from t2t_lite.data import text_io

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, "docs", "own-data.md")
BIN = os.path.dirname(sys.executable)  # the venv's console scripts
# What makes each tool quick here; the page's own values are what a user runs.
TINY = {
    "t2t-lite-demo": ["--hparams_set=tiny", "--train_minutes=0", "--train_steps=6",
                      "--problem_param=vocab_size=400", "--test_sentences=5"],
    "t2t-lite-datagen": ["--problem_param=vocab_size=400"],
    "t2t-lite-trainer": ["--hparams_set=tiny", "--train_minutes=0", "--train_steps=6",
                         "--bleu_sentences=0"],
}


def runnable_blocks(text):
    """The command lines of each ```bash block preceded by a line *tested*."""
    return [block.strip().splitlines()
            for block in re.findall(r"^\*tested\*\n```bash\n(.*?)^```", text, re.M | re.S)]


def _with_tiny_budget(command):
    words = shlex.split(command)
    extra = TINY.get(words[0], [])
    return command + "".join(" " + shlex.quote(flag) for flag in extra)


def _write_corpus(folder):
    """my.en/my.de: 1,500 gettext pairs; domain.en/domain.de: 200 others."""
    problem = problems.build("translate_ende_gettext")
    pairs = [s for s in problem.generate_samples("train", None)
             if not isinstance(s, text_io.Skipped)][:1700]
    if len(pairs) < 1700:
        pytest.skip("this machine has too few gettext EN-DE catalogs")
    for name, part in (("my", pairs[:1500]), ("domain", pairs[1500:])):
        for column, language in ((0, "en"), (1, "de")):
            with open(os.path.join(folder, f"{name}.{language}"), "w", encoding="utf-8") as f:
                f.writelines(pair[column] + "\n" for pair in part)


def _check_step(folder, command):
    """What each tool must have left behind."""
    words = shlex.split(command)
    flags = dict(w[2:].split("=", 1) for w in words if w.startswith("--") and "=" in w)
    path = lambda *parts: os.path.join(folder, *parts)  # noqa: E731
    if words[0] == "t2t-lite-demo":
        results = json.load(open(path(flags["run_dir"], "results.json")))
        assert results["test_sentences"] == 5 and "bleu" in results
    elif words[0] == "t2t-lite-datagen":
        assert os.path.isfile(path(flags["data_dir"], "translate_text_files-test.tsv"))
    elif words[0] == "t2t-lite-trainer":
        assert os.path.isfile(path(flags["model_dir"], "checkpoint"))
    elif words[0] == "t2t-lite-avg-checkpoints":
        assert os.path.isdir(path(flags["model_dir"], "averaged"))
    elif words[0] == "t2t-lite-exporter":
        assert os.path.isfile(path(flags["export_dir"], "1", "saved_model.pb"))
    elif words[0] == "t2t-lite-decoder":
        lines = open(path(flags["decode_from_file"]), "rb").read().count(b"\n")
        assert lines > 0 and open(path(flags["decode_to_file"]), "rb").read().count(b"\n") == lines


@pytest.mark.slow
def test_the_own_data_page_runs(tmp_path):
    blocks = runnable_blocks(open(PAGE, encoding="utf-8").read())
    commands = [line for block in blocks for line in block]
    tools = {shlex.split(c)[0] for c in commands}
    assert len(blocks) >= 6 and {"t2t-lite-demo", "t2t-lite-datagen", "t2t-lite-trainer",
                                 "t2t-lite-decoder", "t2t-lite-bleu"} <= tools
    _write_corpus(tmp_path)
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ["PATH"], TF_CPP_MIN_LOG_LEVEL="2")
    for command in commands:
        result = subprocess.run(["bash", "-c", "set -o pipefail; " + _with_tiny_budget(command)],
                                cwd=tmp_path, env=env, capture_output=True, text=True,
                                timeout=600)
        assert result.returncode == 0, f"{command}\n{result.stderr[-3000:]}"
        assert "Traceback" not in result.stderr, f"{command}\n{result.stderr[-3000:]}"
        _check_step(tmp_path, command)
        if command.startswith("t2t-lite-bleu"):
            assert "BLEU" in result.stdout and "chrF" in result.stdout, result.stdout


def test_the_runnable_blocks_are_found():
    blocks = runnable_blocks("*tested*\n```bash\na --x=1\nb\n```\n\n```bash\nnot me\n```\n")
    assert blocks == [["a --x=1", "b"]]
