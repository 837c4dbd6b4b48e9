"""Which TensorFlow / tensorflow-text releases load an export and give its translations.

    .venv/bin/python bench/serving_matrix.py --export_dir=runs/ende_gettext/export \
        --python=tf2.20=/path/to/venv-2.20/bin/python --python=tf2.19=... --python=tf2.12=... \
        [--sentences_file=runs/ende_gettext/test.src --sentences=20] [--output=matrix.json]

Each --python is an interpreter with another `tensorflow` + `tensorflow-text` pair installed
(and no t2t_lite: the export must need neither it nor Keras). This script runs itself in each of
them (`--child`), and in the interpreter that runs it, which gives the reference. A child:
- loads the export twice, as `tf.saved_model.load` does and as TF Serving does (a TF1 session
  through `tf.compat.v1.saved_model.loader.load`, feeding and fetching the signature's tensors),
  and runs every signature on the same sentences in both;
- lists the op definitions its TensorFlow registers, and which of them `import tensorflow_text`
  adds.

The parent then compares every child's outputs with the reference's (strings and integers must
be identical, floats are compared by their largest difference, relative to max(1, |value|)), and
checks every op of the export's graph and function library, and every attribute it sets, against
each child's op definitions. TF Serving 2.13-2.19 link tensorflow-text 2.12.1's ops into a newer
TensorFlow core: the op check against a tensorflow-text 2.12.1 child covers that pairing, which no
Python wheel pair reproduces.
"""
import argparse
import json
import os
import subprocess
import sys

SIGNATURES = ("serving_default", "nbest", "translate_with_settings", "score", "tokenize",
              "translate_ids", "attention", "translate_constrained")
# translate_constrained: every other sentence with a phrase to place and a word to avoid.
CONSTRAINT = "Datei\t!Ordner"  # every other sentence's constraint line (--constraints)
SETTINGS = {"alpha": 1.0, "extra_length": 10}  # translate_with_settings / translate_ids
ATTENTION_SENTENCES = 4  # attention outputs grow with B x layers x heads x T x S
DEFAULT_SENTENCES = ["Could not open the file.", "The printer is out of paper.",
                     "Do you want to save the changes to this document?", "Cancel"]


# ---- the child: only TensorFlow, tensorflow-text and the standard library ----

def _version_folder(export_dir):
    if os.path.exists(os.path.join(export_dir, "saved_model.pb")):
        return export_dir
    versions = [int(name) for name in os.listdir(export_dir) if name.isdigit()]
    if not versions:
        raise SystemExit(f"serving_matrix: no SavedModel version under {export_dir}")
    return os.path.join(export_dir, str(max(versions)))


def _registered_ops():
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session
    buffer = pywrap_tf_session.TF_GetAllOpList()
    op_list = op_def_pb2.OpList.FromString(pywrap_tf_session.TF_GetBuffer(buffer))
    return {op.name: sorted(attr.name for attr in op.attr) for op in op_list.op}


def _jsonable(value):
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="backslashreplace")
    return value


def _signature_inputs(name, sentences, targets, ids, constraint=CONSTRAINT):
    attention = name == "attention"
    sources = sentences[:ATTENTION_SENTENCES] if attention else sentences
    paired = targets[:ATTENTION_SENTENCES] if attention else targets
    if name in ("serving_default", "nbest", "tokenize"):
        return {"inputs": sources}
    if name == "translate_with_settings":
        return {"inputs": sources, **SETTINGS}
    if name in ("score", "attention"):
        return {"inputs": sources, "targets": paired}
    if name == "translate_ids":
        return {"ids": ids, **SETTINGS}
    if name == "translate_constrained":
        return {"inputs": sources,
                "constraints": [constraint if i % 2 == 0 else "" for i in range(len(sources))]}
    raise ValueError(name)


def _eager_run(version_dir, sentences, targets, constraint=CONSTRAINT):
    import tensorflow as tf
    loaded = tf.saved_model.load(version_dir)
    kinds = {"alpha": tf.float32, "extra_length": tf.int32, "ids": tf.int32}
    ids = loaded.signatures["tokenize"](inputs=tf.constant(sentences))["ids"].numpy().tolist()
    results = {}
    for name in SIGNATURES:
        feed = {key: tf.constant(value, kinds.get(key, tf.string))
                for key, value in _signature_inputs(name, sentences, targets, ids,
                                                    constraint).items()}
        outputs = loaded.signatures[name](**feed)
        results[name] = {key: _jsonable(value.numpy().tolist()) for key, value in outputs.items()}
    return results, ids


def _session_run(version_dir, sentences, targets, ids, constraint=CONSTRAINT):
    """As TF Serving runs a SavedModel: the serve MetaGraph in a TF1 session, the signature's
    tensors fed and fetched by name."""
    import tensorflow as tf
    v1 = tf.compat.v1
    results = {}
    with tf.Graph().as_default(), v1.Session() as session:
        meta_graph = v1.saved_model.loader.load(session, ["serve"], version_dir)
        for name in SIGNATURES:
            signature = meta_graph.signature_def[name]
            values = _signature_inputs(name, sentences, targets, ids, constraint)
            feed = {signature.inputs[key].name: value for key, value in values.items()}
            keys = sorted(signature.outputs)
            fetched = session.run([signature.outputs[key].name for key in keys], feed)
            results[name] = {key: _jsonable(value.tolist()) for key, value in zip(keys, fetched)}
    return results


def child(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf
    core_ops = _registered_ops()
    import tensorflow_text
    all_ops = _registered_ops()
    with open(args.sentences_json, encoding="utf-8") as f:
        request = json.load(f)
    version_dir = _version_folder(args.export_dir)
    sentences = request["sentences"]
    targets = request.get("targets") or sentences
    constraint = request.get("constraint", CONSTRAINT)
    report = {"tensorflow": tf.__version__, "tensorflow_text": tensorflow_text.__version__,
              "ops": all_ops, "text_ops": sorted(set(all_ops) - set(core_ops))}
    for mode in ("eager", "session"):
        try:
            if mode == "eager":
                report["eager"], ids = _eager_run(version_dir, sentences, targets, constraint)
            else:
                report["session"] = _session_run(version_dir, sentences, targets, ids,
                                                 constraint)
        except Exception as error:  # noqa: BLE001 - the failure is the measurement
            report[f"{mode}_error"] = f"{type(error).__name__}: {str(error)[:500]}"
            break
    with open(args.child, "w", encoding="utf-8") as f:
        json.dump(report, f)


# ---- the parent ----

def export_ops(version_dir):
    """{op name: attributes set anywhere} over the serve graph and its function library."""
    from tensorflow.core.protobuf import saved_model_pb2
    saved = saved_model_pb2.SavedModel()
    with open(os.path.join(version_dir, "saved_model.pb"), "rb") as f:
        saved.ParseFromString(f.read())
    graph = saved.meta_graphs[0].graph_def
    functions = {function.signature.name for function in graph.library.function}
    nodes = list(graph.node)
    for function in graph.library.function:
        nodes.extend(function.node_def)
    ops = {}
    for node in nodes:
        if node.op in functions:
            continue  # a call of the export's own function, not a registered op
        ops.setdefault(node.op, set()).update(a for a in node.attr if not a.startswith("_"))
    return {op: sorted(attrs) for op, attrs in ops.items()}


def op_check(needed, registered):
    missing = sorted(op for op in needed if op not in registered)
    unknown = sorted(f"{op}.{attr}" for op, attrs in needed.items() if op in registered
                     for attr in attrs if attr not in registered[op])
    return missing, unknown


def largest_difference(reference, other, path=""):
    """(first mismatch of strings/ints/shapes or None, largest float difference, relative to
    max(1, |reference|))."""
    if isinstance(reference, list):
        if not isinstance(other, list) or len(reference) != len(other):
            return f"{path}: shape differs", 0.0
        worst, mismatch = 0.0, None
        for i, (a, b) in enumerate(zip(reference, other)):
            m, d = largest_difference(a, b, f"{path}[{i}]")
            mismatch = mismatch or m
            worst = max(worst, d)
        return mismatch, worst
    if isinstance(reference, float) or isinstance(other, float):
        # Relative above 1: a score of -40 carries float32's 7 digits, not 1e-5 in absolute.
        return None, abs(float(reference) - float(other)) / max(1.0, abs(float(reference)))
    return (None if reference == other else f"{path}: {reference!r} != {other!r}"), 0.0


def compare(reference, report, mode):
    rows = {}
    for name in SIGNATURES:
        mismatches, worst = [], 0.0
        for key, value in reference["eager"][name].items():
            mismatch, difference = largest_difference(value, report[mode][name].get(key),
                                                      f"{name}.{key}")
            if mismatch:
                mismatches.append(mismatch)
            worst = max(worst, difference)
        rows[name] = {"mismatches": mismatches, "largest_float_difference": worst}
    return rows


def run_child(python, export_dir, request_path, out_path):
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", PYTHONPATH="")
    # -I: isolated, so the t2t_lite checkout on the current directory cannot leak into the child.
    result = subprocess.run([python, "-I", os.path.abspath(__file__), "--child", out_path,
                             f"--export_dir={export_dir}", f"--sentences_json={request_path}"],
                            capture_output=True, text=True, env=env, cwd="/", timeout=1800)
    if result.returncode != 0 or not os.path.exists(out_path):
        return {"child_error": result.stderr.strip().splitlines()[-1:] or ["no output"]}
    with open(out_path, encoding="utf-8") as f:
        return json.load(f)


def _sentences(args):
    if not args.sentences_file:
        return list(DEFAULT_SENTENCES)
    with open(args.sentences_file, encoding="utf-8") as f:
        lines = [line.rstrip("\n") for line in f if line.strip()]
    return lines[:args.sentences]


def parent(args):
    import tempfile
    version_dir = _version_folder(args.export_dir)
    needed = export_ops(version_dir)
    environments = [("this interpreter", sys.executable)]
    for spec in args.python:
        label, _, path = spec.partition("=")
        environments.append((label, path))
    with tempfile.TemporaryDirectory() as scratch:
        request_path = os.path.join(scratch, "request.json")
        with open(request_path, "w", encoding="utf-8") as f:
            json.dump({"sentences": _sentences(args), "constraint": args.constraints}, f)
        reports = {label: run_child(python, version_dir, request_path,
                                    os.path.join(scratch, f"{i}.json"))
                   for i, (label, python) in enumerate(environments)}
    reference = reports["this interpreter"]
    if "eager" not in reference:
        raise SystemExit(f"serving_matrix: the reference run failed: "
                         f"{reference.get('eager_error') or reference.get('child_error')}")
    summary = {"export": version_dir, "ops_in_export": len(needed), "environments": {}}
    print(f"export {version_dir}: {len(needed)} distinct ops; reference TF "
          f"{reference['tensorflow']} + tensorflow-text {reference['tensorflow_text']}")
    print("| environment | TF | tensorflow-text | eager | TF1 session | outputs | largest float "
          "difference (relative above 1) | tensorflow-text ops: missing, unknown attributes | "
          "core ops: missing, unknown attributes |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, report in reports.items():
        if "child_error" in report:
            summary["environments"][label] = report
            print(f"| {label} | - | - | did not run: {report['child_error']} |")
            continue
        text_needed = {op: attrs for op, attrs in needed.items() if op in report["text_ops"]}
        core_needed = {op: attrs for op, attrs in needed.items() if op not in text_needed}
        text_missing, text_unknown = op_check(text_needed, report["ops"])
        core_missing, core_unknown = op_check(core_needed, report["ops"])
        row = {"tensorflow": report["tensorflow"],
               "tensorflow_text": report["tensorflow_text"],
               "text_ops_in_export": sorted(text_needed), "ops_missing": core_missing,
               "text_attributes_unknown": text_unknown, "core_attributes_unknown": core_unknown}
        cells = []
        for mode in ("eager", "session"):
            if mode in report:
                row[mode] = compare(reference, report, mode)
                cells.append("loads, runs")
            else:
                row[f"{mode}_error"] = report.get(f"{mode}_error", "not run")
                cells.append(row[f"{mode}_error"][:80])
        compared = [row[mode] for mode in ("eager", "session") if mode in row]
        mismatches = [m for rows in compared for r in rows.values() for m in r["mismatches"]]
        worst = max((r["largest_float_difference"] for rows in compared for r in rows.values()),
                    default=0.0)
        summary["environments"][label] = row
        outputs = ("identical" if not mismatches else f"{len(mismatches)} differ, first "
                   f"{mismatches[0]}") if compared else "-"
        row["largest_float_difference"] = worst
        row["outputs_identical"] = bool(compared) and not mismatches
        print(f"| {label} | {report['tensorflow']} | {report['tensorflow_text']} | {cells[0]} | "
              f"{cells[1] if len(cells) > 1 else '-'} | {outputs} | {worst:.2e} | "
              f"{_listed(text_missing)}, {_listed(text_unknown)} | "
              f"{_listed(core_missing)}, {_listed(core_unknown)} |")
    text_ops = sorted({op for row in summary["environments"].values()
                       for op in row.get("text_ops_in_export", [])})
    print(f"tensorflow-text ops in the export: {', '.join(text_ops)}")
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1)
    # Unknown attributes are reported, not failed: TensorFlow's core ignores them (with a logged
    # line per node) where the op itself is known; a missing op, a load failure or a different
    # output fails.
    failed = [label for label, row in summary["environments"].items()
              if "child_error" in row or "eager_error" in row or "session_error" in row
              or row["ops_missing"] or not row["outputs_identical"]
              or row["largest_float_difference"] > args.tolerance]
    if failed:
        print(f"not served as exported by: {', '.join(failed)}")
    return 1 if failed else 0


def _listed(items):
    return " ".join(items) if items else "none"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--export_dir", required=True)
    parser.add_argument("--python", action="append", default=[], metavar="LABEL=PATH")
    parser.add_argument("--sentences_file")
    parser.add_argument("--sentences", type=int, default=20)
    parser.add_argument("--output")
    parser.add_argument("--constraints", default=CONSTRAINT,
                        help="translate_constrained's constraint line for every other sentence "
                        "(phrases the export's vocabulary spells)")
    parser.add_argument("--tolerance", type=float, default=1e-5,
                        help="largest difference of a float output (scores, attention), "
                        "relative to max(1, |value|)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--sentences_json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return 0
    return parent(args)


if __name__ == "__main__":
    sys.exit(main())
