"""Writes TF Serving REST request/response examples for an export (serving/examples/*.json).

    python serving/make_examples.py --export_dir=E [--out_dir=serving/examples] \
        --sentence="Directory not found" --target="Ordner nicht gefunden" \
        --constraints='Ordner\t!Verzeichnis' ...

The responses are computed with tf.saved_model.load on this machine and written in the JSON
layout TF Serving's REST API returns ("instances" in, "predictions" out; the columnar "inputs"
form for translate_with_settings, whose alpha/extra_length are scalars).
"""
import json
import os

from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_string("export_dir", None, "Export (version folder or folder of versions).")
flags.DEFINE_string("out_dir", os.path.join(os.path.dirname(__file__), "examples"), "Output.")
flags.DEFINE_multi_string("sentence", [], "Source sentences for the requests.")
flags.DEFINE_multi_string("target", [], "Target sentences for score/attention requests.")
flags.DEFINE_multi_string("constraints", [], "Constraint lines for translate_constrained, one "
                          "per --sentence (docs/terminology.md's format; \\t for a tab).")
flags.mark_flags_as_required(["export_dir"])


def _json_value(tensor):
    value = tensor.numpy().tolist()

    def clean(v):
        if isinstance(v, list):
            return [clean(x) for x in v]
        if isinstance(v, bytes):
            return v.decode("utf-8")
        if isinstance(v, float):
            return round(v, 5)
        return v
    return clean(value)


def _rows(result):
    """Row format: one object per example (TF Serving's "predictions")."""
    names = sorted(result)
    values = {name: _json_value(result[name]) for name in names}
    batch = len(values[names[0]])
    return [{name: values[name][i] for name in names} for i in range(batch)]


def main(argv):
    del argv
    import tensorflow as tf

    from t2t_lite.inference import saved_model

    loaded = saved_model.load(FLAGS.export_dir)
    sig = loaded.signatures
    sources = FLAGS.sentence
    targets = FLAGS.target or sources
    strings = lambda values: tf.constant(values, tf.string)  # noqa: E731
    examples = {
        "serving_default": ({"instances": sources},
                            {"predictions": _rows(sig["serving_default"](inputs=strings(sources)))}),
        "nbest": ({"signature_name": "nbest", "instances": sources},
                  {"predictions": _rows(sig["nbest"](inputs=strings(sources)))}),
        "score": ({"signature_name": "score",
                   "instances": [{"inputs": s, "targets": t} for s, t in zip(sources, targets)]},
                  {"predictions": _rows(sig["score"](inputs=strings(sources),
                                                     targets=strings(targets)))}),
        "translate_with_settings": (
            {"signature_name": "translate_with_settings",
             "inputs": {"inputs": sources, "alpha": 1.0, "extra_length": 10}},
            {"outputs": {k: _json_value(v) for k, v in sig["translate_with_settings"](
                inputs=strings(sources), alpha=tf.constant(1.0),
                extra_length=tf.constant(10)).items()}}),
    }
    if FLAGS.constraints:
        constraints = [line.replace("\\t", "\t") for line in FLAGS.constraints]
        examples["translate_constrained"] = (
            {"signature_name": "translate_constrained",
             "instances": [{"inputs": s, "constraints": c} for s, c in zip(sources, constraints)]},
            {"predictions": _rows(sig["translate_constrained"](
                inputs=strings(sources), constraints=strings(constraints)))})
    os.makedirs(FLAGS.out_dir, exist_ok=True)
    for name, (request, response) in examples.items():
        for kind, body in (("request", request), ("response", response)):
            path = os.path.join(FLAGS.out_dir, f"{name}.{kind}.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(body, f, indent=1, ensure_ascii=False)
                f.write("\n")
            print(path)


if __name__ == "__main__":
    app.run(main)
