"""docs/terminology.md's serving example: the page shows serving/examples/'s
translate_constrained files, and a gRPC client gets what the export's signature gives."""
import json
import os
import re

import pytest
import tensorflow as tf

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(REPO, "serving", "examples")


def _example(kind):
    with open(os.path.join(EXAMPLES, f"translate_constrained.{kind}.json"),
              encoding="utf-8") as f:
        return json.load(f)


def test_the_page_shows_the_example_files():
    text = open(os.path.join(REPO, "docs", "terminology.md"), encoding="utf-8").read()
    section = text[text.index("## Through TF Serving"):]
    blocks = [json.loads(b) for b in re.findall(r"^```json\n(.*?)^```", section, re.M | re.S)]
    assert blocks == [_example("request"), _example("response")]


@pytest.mark.slow
def test_a_grpc_client_translates_under_constraints(export_version_dir, grpc_port):
    import grpc
    from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc

    instances = _example("request")["instances"]
    sources = [i["inputs"] for i in instances]
    # The page's phrases are the demo model's; the tiny test vocabulary spells "Katze".
    lines = ["Katze" if i["constraints"] else "" for i in instances]
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "ende"
    request.model_spec.signature_name = "translate_constrained"
    request.inputs["inputs"].CopyFrom(tf.make_tensor_proto(sources))
    request.inputs["constraints"].CopyFrom(tf.make_tensor_proto(lines))
    with grpc.insecure_channel(f"127.0.0.1:{grpc_port}") as channel:
        response = prediction_service_pb2_grpc.PredictionServiceStub(channel).Predict(
            request, timeout=300)
    outputs = tf.make_ndarray(response.outputs["outputs"])
    unmet = tf.make_ndarray(response.outputs["unmet"])
    expected = tf.saved_model.load(export_version_dir).signatures["translate_constrained"](
        inputs=tf.constant(sources), constraints=tf.constant(lines))
    assert outputs.tolist() == expected["outputs"].numpy().tolist()
    assert unmet.tolist() == expected["unmet"].numpy().tolist()
    assert unmet.tolist() == [0, 0]  # every phrase met
