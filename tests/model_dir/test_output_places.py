"""No tool writes into a model_dir or an export it did not make for that output, through the
real tools: each refusal is one line and status 1, comes before TensorFlow loads, and leaves
the model_dir or export byte for byte as it was (the files a fixed list of names missed:
dev_evaluations.jsonl, saved_model.pb, a version folder, any new name)."""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from t2t_lite import exit_status
from tests.conftest import copy_model_dir

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
INSIDE = "no tool writes into a model_dir or an export it did not make for that output"

# Runs a tool as its console script does and records at exit whether TensorFlow was imported.
RECORDING = '''
import atexit, runpy, sys

record = sys.argv.pop(1)
atexit.register(lambda: open(record, "w").write(str("tensorflow" in sys.modules)))
module = sys.argv.pop(1)
sys.argv[0] = module
runpy.run_module(module, run_name="__main__")
'''


def _listing(root):
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.sha256(f.read()).hexdigest()
    return found


def _refused(tmp_path, tool, args, kept, kind):
    """Runs t2t-lite-<tool> `args`: one `error:` line saying the output is in `kind`, status 1,
    no TensorFlow, and `kept` (a folder) unchanged."""
    before = _listing(kept)
    record = tmp_path / "tensorflow_imported"
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    env["PYTHONPATH"] = REPO
    result = subprocess.run([sys.executable, "-c", RECORDING, str(record), f"t2t_lite.bin.{tool}",
                             *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                            timeout=300)
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert f" is in {kind} " in lines[0] and INSIDE in lines[0], lines[0]
    assert record.read_text() == "False"
    assert _listing(kept) == before
    return lines[0]


@pytest.fixture
def source(tmp_path):
    path = tmp_path / "in.txt"
    path.write_text("the house is small .\nwe read books\n")
    return path


@pytest.fixture
def copy(model_dir, tmp_path):
    copied = copy_model_dir(model_dir, tmp_path)[0]
    with open(os.path.join(copied, "dev_evaluations.jsonl"), "w") as f:
        f.write('{"bleu": 12.5, "loss": 2.0, "step": 10}\n')
    return copied


@pytest.fixture
def export(export_version_dir, tmp_path):
    """A copy of the session's export folder (E/1/saved_model.pb, variables/, assets...)."""
    folder = tmp_path / "export"
    shutil.copytree(os.path.dirname(export_version_dir), folder)
    return str(folder)


@pytest.mark.parametrize("name", ["dev_evaluations.jsonl", "translations.de",
                                  "best/new.txt"])
def test_the_decoders_output_in_a_model_dir(copy, source, tmp_path, name):
    path = os.path.join(copy, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    line = _refused(tmp_path, "decoder", [f"--model_dir={copy}", f"--decode_from_file={source}",
                                          f"--decode_to_file={path}"], copy, "the model_dir")
    assert line == (f"error: --decode_to_file {path} is in the model_dir {copy}: {INSIDE}; "
                    "write the output outside it")


@pytest.mark.parametrize("name", ["1/saved_model.pb", "1/variables/variables.index",
                                  "1/assets.extra/notes.txt", "out.de"])
def test_the_decoders_output_in_an_export(copy, export, source, tmp_path, name):
    path = os.path.join(export, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    _refused(tmp_path, "decoder", [f"--model_dir={copy}", f"--decode_from_file={source}",
                                   f"--decode_to_file={path}"], export, "the export folder")


def test_the_decoders_summary_file_in_a_model_dir(copy, source, tmp_path):
    _refused(tmp_path, "decoder", [f"--model_dir={copy}", f"--decode_from_file={source}",
                                   f"--decode_to_file={tmp_path / 'out.de'}",
                                   f"--summary_file={copy}/summary.json"], copy, "the model_dir")


def test_the_scorers_output_in_an_export(copy, export, source, tmp_path):
    _refused(tmp_path, "score", [f"--model_dir={copy}", f"--source_file={source}",
                                 f"--target_file={source}",
                                 f"--output_file={export}/1/scores.txt"], export,
             "the export folder")


def test_the_averagers_output_in_an_export(copy, export, tmp_path):
    _refused(tmp_path, "avg_checkpoints", [f"--model_dir={copy}", f"--output_dir={export}/1"],
             export, "the export folder")


def test_the_averagers_output_inside_a_model_dir(copy, tmp_path):
    _refused(tmp_path, "avg_checkpoints", [f"--model_dir={copy}",
                                           f"--output_dir={copy}/my_average"],
             copy, "the model_dir")


@pytest.mark.parametrize("where", ["1", "1/variables", "1/assets.extra"])
def test_the_exporter_into_a_version_of_an_export(copy, export, tmp_path, where):
    _refused(tmp_path, "exporter", [f"--model_dir={copy}", f"--export_dir={export}/{where}"],
             export, "the export folder")


def test_the_exporter_inside_a_model_dir(copy, tmp_path):
    _refused(tmp_path, "exporter", [f"--model_dir={copy}", f"--export_dir={copy}/export"],
             copy, "the model_dir")


def test_t2t_lite_po_output_in_a_model_dir(copy, tmp_path):
    catalog = tmp_path / "in.po"
    catalog.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                       'msgid "File not found"\nmsgstr ""\n', encoding="utf-8")
    before = _listing(copy)
    env = {key: value for key, value in os.environ.items() if key != "TF_CPP_MIN_LOG_LEVEL"}
    result = subprocess.run([sys.executable, "-m", "t2t_lite.bin.po", f"--model_dir={copy}",
                             f"--input={catalog}", f"--output={copy}/de.po"],
                            capture_output=True, text=True, env=env, cwd=REPO, timeout=300)
    assert result.returncode == exit_status.USER_ERROR, result.stderr[-2000:]
    lines = result.stderr.strip().splitlines()
    assert lines == [f"error: --output {copy}/de.po is in the model_dir {copy}: {INSIDE}; "
                     "write the output outside it"], result.stderr
    assert _listing(copy) == before


def test_the_averager_and_exporter_write_their_own_places(copy, export, tmp_path):
    """What they made for that output: the model_dir's averaged/, an export folder's next
    version."""
    env = dict(os.environ, PYTHONPATH=REPO)
    averaged = subprocess.run([sys.executable, "-m", "t2t_lite.bin.avg_checkpoints",
                               f"--model_dir={copy}", "--num_last=1"], capture_output=True,
                              text=True, env=env, cwd=tmp_path, timeout=300)
    assert averaged.returncode == 0, averaged.stderr[-2000:]
    assert os.path.isfile(os.path.join(copy, "averaged", "averaged_from.json"))
    exported = subprocess.run([sys.executable, "-m", "t2t_lite.bin.exporter",
                               f"--model_dir={copy}", f"--export_dir={export}"],
                              capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert exported.returncode == 0, exported.stderr[-2000:]
    assert os.path.isfile(os.path.join(export, "2", "saved_model.pb"))
