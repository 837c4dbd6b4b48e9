"""SavedModel export: versioned folders, loads with only tensorflow + tensorflow_text, every
signature works (empty batch and empty strings too), outputs equal the checkpoint's."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from t2t_lite.errors import UserError
from t2t_lite.export import exporters, saved_model_versions
from t2t_lite.inference import saved_model
from t2t_lite.inference import batch_decode
from t2t_lite.model_dir import loaded

SOURCES = ["the house is small .", "a cat sat on the mat", "der Hund", "! ? ,", "we"]
TARGETS = ["das Haus ist klein .", "", "the dog", "!", "wir lesen"]

# Runs in a fresh interpreter where t2t_lite and gin cannot be imported (keras stays: tensorflow
# itself imports it); tests/export/test_protected_export.py runs its own body after it too.
FRESH_PROCESS_PREAMBLE = r"""
import importlib.abc, json, sys

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("t2t_lite", "gin"):
            raise ImportError(f"{name} must not be needed to load the export")

sys.meta_path.insert(0, Block())
import tensorflow as tf
import tensorflow_text  # noqa: F401

def session_serving_default(version_dir, sources):
    # serving_default the way TF Serving runs it: a graph session that restores the variables.
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        meta_graph = tf.compat.v1.saved_model.loader.load(session, ["serve"], version_dir)
        signature = meta_graph.signature_def["serving_default"]
        result = session.run({k: v.name for k, v in signature.outputs.items()},
                             {signature.inputs["inputs"].name: sources})
    return {"outputs": [s.decode() for s in result["outputs"]],
            "scores": result["scores"].tolist()}
"""
FRESH_PROCESS_SCRIPT = FRESH_PROCESS_PREAMBLE + r"""

version_dir = sys.argv[1]
sources, targets, decoded = (json.loads(arg) for arg in sys.argv[2:5])
loaded = tf.saved_model.load(version_dir)
sig = loaded.signatures
def strings(values):
    return tf.constant(values, tf.string)
def out(result):
    return {k: v.numpy().tolist() if v.dtype != tf.string else
            [[s.decode() for s in row] if isinstance(row, list) else row.decode()
             for row in v.numpy().tolist()] for k, v in result.items()}
best = out(sig["serving_default"](inputs=strings(sources)))
result = {
    "signatures": sorted(sig.keys()),
    "serving_default": best,
    "decoder_lines": out(sig["serving_default"](inputs=strings(decoded))),
    "empty_batch": {k: list(v.shape) for k, v in
                    sig["serving_default"](inputs=tf.zeros([0], tf.string)).items()},
    "empty_strings": out(sig["serving_default"](inputs=strings(["", "   "]))),
    "nbest": out(sig["nbest"](inputs=strings(sources))),
    "nbest_empty_batch": {k: list(v.shape) for k, v in sig["nbest"](inputs=tf.zeros([0], tf.string)).items()},
    "settings": out(sig["translate_with_settings"](inputs=strings(sources), alpha=tf.constant(0.0),
                                                   extra_length=tf.constant(2))),
    "score": out(sig["score"](inputs=strings(sources), targets=strings(targets))),
    "score_empty_batch": {k: list(v.shape) for k, v in sig["score"](
        inputs=tf.zeros([0], tf.string), targets=tf.zeros([0], tf.string)).items()},
    "attention": {k: list(v.shape) for k, v in sig["attention"](
        inputs=strings(sources), targets=strings(targets)).items()},
    "attention_row_sums": [float(tf.reduce_max(tf.abs(tf.reduce_sum(v, -1) - 1.0)))
                           for k, v in sig["attention"](inputs=strings(sources[:1]),
                                                        targets=strings(targets[:1])).items()
                           if v.dtype == tf.float32],
    "unconstrained": out(sig["translate_constrained"](
        inputs=strings(sources), constraints=strings([""] * len(sources)))),
    "constrained_empty_batch": {k: list(v.shape) for k, v in sig["translate_constrained"](
        inputs=tf.zeros([0], tf.string), constraints=tf.zeros([0], tf.string)).items()},
    "describe": json.loads(loaded.describe().numpy().decode()),
    "session": session_serving_default(version_dir, sources),
    "blocked_modules_loaded": sorted(m for m in sys.modules
                                     if m.split(".")[0] in ("t2t_lite", "gin")),
}
print("RESULT" + json.dumps(result))
"""


def decodable(hostile_lines):
    """The hostile lines that have text, as the decoder cleans them."""
    texts = [batch_decode.clean_line(line)[0] for line in hostile_lines]
    return [text for text in texts if text.strip()]


@pytest.fixture(scope="module")
def fresh(export_version_dir, tmp_path_factory, hostile_lines):
    script = tmp_path_factory.mktemp("fresh") / "load_export.py"
    script.write_text(FRESH_PROCESS_SCRIPT, encoding="utf-8")
    # -I: isolated mode, no PYTHONPATH and no current directory on sys.path.
    proc = subprocess.run([sys.executable, "-I", str(script), export_version_dir,
                           json.dumps(SOURCES), json.dumps(TARGETS),
                           json.dumps(decodable(hostile_lines))],
                          capture_output=True, text=True, timeout=300,
                          cwd=str(script.parent),
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [l for l in proc.stdout.splitlines() if l.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT"):])


@pytest.fixture(scope="module")
def checkpoint(model_dir):
    run = loaded.load(model_dir)
    model, tokenizer = run.model, run.tokenizer
    return model, tokenizer


def test_version_folders(tmp_path):
    for name in ("1", "3", "notaversion", ".incomplete-x"):
        (tmp_path / name).mkdir()
    (tmp_path / "7").write_text("a file, not a version")
    assert saved_model.versions(str(tmp_path)) == [1, 3]
    assert saved_model_versions.next_version(str(tmp_path)) == 4
    assert saved_model_versions.next_version(str(tmp_path / "missing")) == 1
    assert saved_model.latest_version_dir(str(tmp_path)) == str(tmp_path / "3")
    with pytest.raises(UserError, match="no SavedModel"):
        saved_model.latest_version_dir(str(tmp_path / "notaversion"))


@pytest.mark.slow
def test_export_layout(export_version_dir):
    export_dir = os.path.dirname(export_version_dir)
    assert sorted(os.listdir(export_dir)) == ["1"]  # no temporary folder left behind
    assert os.path.isfile(os.path.join(export_version_dir, "saved_model.pb"))
    assert os.listdir(os.path.join(export_version_dir, "assets")) == ["vocab.spm.model"]
    with open(os.path.join(export_version_dir, saved_model_versions.METADATA_FILE),
              encoding="utf-8") as f:
        metadata = json.load(f)
    assert metadata["problem"] == "translate_export_test"
    assert metadata["hparams_set"] == "tiny"
    assert (metadata["beam_size"], metadata["max_length"], metadata["extra_length"]) == (2, 16, 6)
    assert metadata["checkpoint"].endswith("ckpt-10")


@pytest.mark.slow
def test_loads_without_t2t_lite(fresh):
    assert fresh["blocked_modules_loaded"] == []
    assert fresh["signatures"] == ["attention", "nbest", "score", "serving_default",
                                   "tokenize", "translate_constrained", "translate_ids",
                                   "translate_with_settings"]
    assert fresh["describe"]["beam_size"] == 2


@pytest.mark.slow
def test_constrained_signature_without_constraints_is_serving_default(fresh):
    assert fresh["unconstrained"]["outputs"] == fresh["serving_default"]["outputs"]
    assert fresh["unconstrained"]["scores"] == fresh["serving_default"]["scores"]
    assert fresh["unconstrained"]["unmet"] == [0] * len(fresh["serving_default"]["outputs"])
    assert fresh["constrained_empty_batch"] == {"outputs": [0], "scores": [0], "unmet": [0]}


@pytest.mark.slow
def test_saved_model_equals_the_decoder(fresh, checkpoint_decode, hostile_lines):
    """serving_default in a fresh process == t2t-lite-decoder --model_dir on the same checkpoint."""
    decoder_lines = checkpoint_decode[0].decode("utf-8").split("\n")[:-1]
    decoder_best = [(line.split("\t")[1], float(line.split("\t")[0]))
                    for line in decoder_lines if line]
    assert len(decoder_best) == len(decodable(hostile_lines))
    assert fresh["decoder_lines"]["outputs"] == [text for text, _ in decoder_best]
    np.testing.assert_allclose(fresh["decoder_lines"]["scores"],
                               [score for _, score in decoder_best], rtol=1e-5, atol=1e-5)
    assert all(fresh["serving_default"]["outputs"])


@pytest.mark.slow
def test_session_loader_as_tf_serving(fresh):
    """Keras 3 variables must be restored for session-based loaders (TF Serving's C++ loader)."""
    assert fresh["session"]["outputs"] == fresh["serving_default"]["outputs"]
    np.testing.assert_allclose(fresh["session"]["scores"], fresh["serving_default"]["scores"],
                               rtol=1e-5, atol=1e-5)


@pytest.mark.slow
def test_nbest_is_sorted_and_starts_with_the_best(fresh):
    nbest = fresh["nbest"]
    assert np.shape(nbest["outputs"]) == (len(SOURCES), 2)
    assert [row[0] for row in nbest["outputs"]] == fresh["serving_default"]["outputs"]
    scores = np.array(nbest["scores"])
    assert np.all(scores[:, 0] >= scores[:, 1])


@pytest.mark.slow
def test_request_settings_change_the_output(fresh):
    # extra_length=2: at most input length + 2 tokens, so the random model's long outputs shrink.
    assert np.shape(fresh["settings"]["outputs"]) == (len(SOURCES), 2)
    for short, default in zip(fresh["settings"]["outputs"], fresh["nbest"]["outputs"]):
        assert len(short[0]) <= len(default[0])
    assert fresh["settings"]["outputs"] != fresh["nbest"]["outputs"]


@pytest.mark.slow
def test_empty_batch_and_empty_strings(fresh):
    assert fresh["empty_batch"] == {"outputs": [0], "scores": [0]}
    assert fresh["nbest_empty_batch"] == {"outputs": [0, 2], "scores": [0, 2]}
    assert fresh["score_empty_batch"] == {"log_prob": [0], "score": [0], "target_length": [0]}
    assert fresh["empty_strings"] == {"outputs": ["", ""], "scores": [0.0, 0.0]}


@pytest.mark.slow
def test_forced_decoding_scores(fresh, checkpoint):
    """score equals the log probability the checkpoint's model gives the tokenized pair."""
    model, tokenizer = checkpoint
    for i, (source, target) in enumerate(zip(SOURCES, TARGETS)):
        source_ids = tokenizer.encode_batch([source])[0][:15] + [1]  # truncated as exported
        target_ids = tokenizer.encode_batch([target])[0][:15] + [1]
        logits = model({"inputs": tf.constant([source_ids]), "targets": tf.constant([target_ids])})
        log_probs = tf.nn.log_softmax(logits[0]).numpy()
        expected = sum(log_probs[t, token] for t, token in enumerate(target_ids))
        assert fresh["score"]["log_prob"][i] == pytest.approx(expected, abs=1e-4)
        assert fresh["score"]["target_length"][i] == len(target_ids)
        penalty = ((5 + len(target_ids)) / 6) ** 0.6
        assert fresh["score"]["score"][i] == pytest.approx(expected / penalty, abs=1e-4)


@pytest.mark.slow
def test_attention_signature(fresh):
    shapes = fresh["attention"]
    batch, layers, heads = len(SOURCES), 2, 4
    source_width, target_width = shapes["source_tokens"][1], shapes["target_tokens"][1]
    assert shapes["encoder_self"] == [batch, layers, heads, source_width, source_width]
    assert shapes["decoder_self"] == [batch, layers, heads, target_width, target_width]
    assert shapes["encoder_decoder"] == [batch, layers, heads, target_width, source_width]
    assert max(fresh["attention_row_sums"]) < 1e-4  # every row is a distribution


@pytest.mark.slow
def test_saved_model_cli_show(export_version_dir):
    tool = os.path.join(os.path.dirname(sys.executable), "saved_model_cli")
    proc = subprocess.run([tool, "show", "--dir", export_version_dir, "--all"],
                          capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    for name in ("serving_default", "nbest", "score", "attention", "translate_with_settings",
                 "tokenize", "translate_ids", "translate_constrained"):
        assert f"signature_def['{name}']" in text
    assert "inputs['inputs'] tensor_info:\n        dtype: DT_STRING\n        shape: (-1)" in text
    assert "outputs['outputs'] tensor_info:\n        dtype: DT_STRING" in text


@pytest.mark.slow
def test_bfloat16_export_equals_its_checkpoint_module(model_dir, tmp_path):
    # The opt-in bfloat16 beam search: exported (with its own copy of the weights), it decodes as
    # the checkpoint's bfloat16 module does; scoring stays float32.
    from t2t_lite.inference import translation_module

    version_dir = exporters.make_exporter("savedmodel", precision="bfloat16").export(
        model_dir, str(tmp_path / "bf16"))
    loaded_module = tf.saved_model.load(version_dir)
    assert json.loads(loaded_module.describe().numpy())["decode_precision"] == "bfloat16"
    module = translation_module.from_model_dir(model_dir, precision="bfloat16")
    texts = tf.constant(SOURCES[:3])
    expected = module.nbest(texts)
    result = loaded_module.nbest(texts)
    assert result["outputs"].numpy().tolist() == expected["outputs"].numpy().tolist()
    np.testing.assert_allclose(result["scores"].numpy(), expected["scores"].numpy(), atol=1e-4)
    float32_module = translation_module.from_model_dir(model_dir)
    float32_scores = float32_module.score(texts, texts)
    np.testing.assert_allclose(module.score(texts, texts)["log_prob"].numpy(),
                               float32_scores["log_prob"].numpy(), atol=1e-5)


def test_every_format_is_one_registered_exporter():
    from t2t_lite.export import exporters

    assert exporters.names() == ["savedmodel", "ctranslate2"]
    assert isinstance(exporters.make_exporter("ctranslate2", quantization="int8"),
                      exporters.Exporter)
    with pytest.raises(UserError, match="unknown export format 'onnx'"):
        exporters.make_exporter("onnx")
