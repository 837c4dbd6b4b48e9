"""An export keeps format specifiers and tags by itself: its text-in signatures repair each output
with TF ops (graph_spans), so a TF Serving client running no Python of ours gets them intact.

The model is the shared random-weight one (tests/conftest.py), whose outputs are word salad: every
source span it keeps, it keeps by the repair. The export runs in a fresh interpreter that cannot
import t2t_lite, through tf.saved_model.load and through a TF1 session as TF Serving runs it; the
judge is protected_spans.kept_exactly, in this process."""
import json
import os
import subprocess
import sys

import pytest

from t2t_lite import exit_status
from t2t_lite.export import saved_model_versions
from t2t_lite.inference import protected_spans as ps
from t2t_lite.inference import span_finding
from t2t_lite.inference.translation_module import TranslationModule
from t2t_lite.model_dir import loaded
from tests.export.test_export import FRESH_PROCESS_PREAMBLE

pytestmark = pytest.mark.slow
ALL = frozenset(span_finding.KINDS)
FORMAT = frozenset(span_finding.FORMAT_KINDS)
SOURCES = ["File %s not found.", "%d of %d files", "<b>%s</b> saved", "{name} has {count} items",
           "the house is small .", "%1$s to %2$s", "50% of them", "",
           "Use --removeall on /etc/crypttab", "see https://x.org/a", "set max_size to 44100"]
# (Words the tiny vocabulary has: a phrase with an unknown token is refused.)
CONSTRAINTS = ["", "Katze", "", "", "", "", "", "", "", "", ""]

SCRIPT = FRESH_PROCESS_PREAMBLE + r"""
version_dir, sources, constraints = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
sig = tf.saved_model.load(version_dir).signatures
texts = lambda t: [s.decode() for s in t.numpy().reshape(-1).tolist()]
result = {
    "serving_default": texts(sig["serving_default"](inputs=tf.constant(sources))["outputs"]),
    "nbest": texts(sig["nbest"](inputs=tf.constant(sources))["outputs"]),
    "constrained": texts(sig["translate_constrained"](
        inputs=tf.constant(sources), constraints=tf.constant(constraints))["outputs"]),
}
result["session"] = session_serving_default(version_dir, sources)["outputs"]
print("RESULT" + json.dumps(result))
"""


@pytest.fixture(scope="module")
def exports(model_dir, tmp_path_factory):
    run = loaded.load(model_dir)
    root = tmp_path_factory.mktemp("protected_exports")
    result = {}
    for protect in ("auto", "printf,brace,markup", ",".join(span_finding.KINDS)):
        module = TranslationModule(run.model, run.tokenizer, beam_size=2,
                                   metadata=run.metadata(), protect=protect)
        result[protect] = (module, saved_model_versions.save(module, str(root / protect)))
    return result


def _served(version_dir, tmp_path):
    script = tmp_path / "serve.py"
    script.write_text(SCRIPT, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-I", str(script), version_dir, json.dumps(SOURCES),
                           json.dumps(CONSTRAINTS)], capture_output=True, text=True, timeout=300,
                          cwd=str(tmp_path), env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads([line for line in proc.stdout.splitlines()
                       if line.startswith("RESULT")][-1][len("RESULT"):])


def test_served_outputs_keep_every_span(exports, tmp_path):
    module, version_dir = exports["printf,brace,markup"]
    assert json.loads(module.metadata_json)["protect"] == ["brace", "markup", "printf"]
    served = _served(version_dir, tmp_path)
    k = len(served["nbest"]) // len(SOURCES)
    nbest = [served["nbest"][i * k:(i + 1) * k] for i in range(len(SOURCES))]
    for i, source in enumerate(SOURCES):
        for name in ("serving_default", "constrained", "session"):
            assert ps.kept_exactly(source, served[name][i], FORMAT), \
                (name, source, served[name][i])
        for hypothesis in nbest[i]:
            assert ps.kept_exactly(source, hypothesis, FORMAT), (source, hypothesis)
    assert served["session"] == served["serving_default"]
    assert served["serving_default"][SOURCES.index("")] == ""
    # Word salad keeps nothing by itself: the repair did the work.
    raw = module.translate_ids(module._ids_with_eos(SOURCES), *module._defaults())["outputs"]
    raw = [text.decode() for text in raw.numpy()[:, 0]]
    assert sum(not ps.kept_exactly(s, o, FORMAT) for s, o in zip(SOURCES, raw)) >= 3


def test_auto_protects_nothing_for_a_problem_without_format_strings(exports):
    module, _ = exports["auto"]
    assert module.protect == frozenset()
    assert json.loads(module.metadata_json)["protect"] == []


def test_served_outputs_keep_code_like_text_and_copy_lines_of_code(exports, tmp_path):
    module, version_dir = exports[",".join(span_finding.KINDS)]
    assert json.loads(module.metadata_json)["protect"] == sorted(span_finding.KINDS)
    served = _served(version_dir, tmp_path)
    for i, source in enumerate(SOURCES):
        for name in ("serving_default", "constrained", "session"):
            assert ps.kept_exactly(source, served[name][i], ALL), (name, source, served[name][i])
    assert served["serving_default"][SOURCES.index("see https://x.org/a")].count(
        "https://x.org/a") == 1
    copied = "https://x.org/docs/1.2.3"
    outputs = module.serve(tf_constant([copied, "1.2.3"]))["outputs"].numpy().tolist()
    assert [text.decode() for text in outputs] == [copied, "1.2.3"]


def tf_constant(texts):
    import tensorflow as tf

    return tf.constant(texts)


@pytest.mark.parametrize("args, message", [
    (["--protect=printf,dates"], "error: --protect=printf,dates: expected auto, none, or a comma "
     f"list of {', '.join(span_finding.KINDS)} (e.g. --protect=printf,markup)"),
    (["--format=ctranslate2", "--protect=none"], "error: --protect applies to --format=savedmodel "
     "only (CTranslate2's outputs are repaired by the decoder that runs them)"),
])
def test_exporter_protect_flag_mistakes_are_one_line_errors(cli, model_dir, tmp_path, args,
                                                            message):
    result = cli("exporter", f"--model_dir={model_dir}", f"--export_dir={tmp_path}/e", *args)
    assert result.returncode == exit_status.USER_ERROR
    assert result.stderr.decode().strip().splitlines()[-1] == message
    assert not (tmp_path / "e").exists()


def test_exporter_protect_flag_fixes_what_the_export_keeps(cli, model_dir, tmp_path):
    result = cli("exporter", f"--model_dir={model_dir}", f"--export_dir={tmp_path}/e",
                 "--protect=printf")
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    with open(tmp_path / "e" / "1" / saved_model_versions.METADATA_FILE, encoding="utf-8") as f:
        assert json.load(f)["protect"] == ["printf"]
