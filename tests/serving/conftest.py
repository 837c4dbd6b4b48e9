"""A gRPC PredictionService over a SavedModel, for testing TF Serving clients where the
tensorflow_model_server binary cannot be installed (it ships as a Docker image and a Debian
package from Google's own repository, not as a Python wheel).

It answers Predict as the model server does for one model name: the signature by name
(`serving_default` when none is given), every input required, tensors in and out as TensorProto,
NOT_FOUND for another model name, INVALID_ARGUMENT for an unknown signature or a missing input.
"""
from concurrent import futures

import grpc
import pytest
import tensorflow as tf
from tensorflow_serving.apis import predict_pb2, prediction_service_pb2_grpc


class SavedModelPredictionService(prediction_service_pb2_grpc.PredictionServiceServicer):
    def __init__(self, model_name, version_dir):
        self.model_name = model_name
        self.version = int(version_dir.rstrip("/").rsplit("/", 1)[-1])
        self.loaded = tf.saved_model.load(version_dir)

    def Predict(self, request, context):  # noqa: N802 - the gRPC method's name
        if request.model_spec.name != self.model_name:
            context.abort(grpc.StatusCode.NOT_FOUND,
                          f"Servable not found for request: Latest({request.model_spec.name})")
        name = request.model_spec.signature_name or "serving_default"
        if name not in self.loaded.signatures:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"Serving signature name: \"{name}\" not found in signature def")
        signature = self.loaded.signatures[name]
        expected = signature.structured_input_signature[1]
        missing = sorted(set(expected) - set(request.inputs))
        if missing:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"input tensor alias not found in signature: {missing[0]}")
        feed = {key: tf.constant(tf.make_ndarray(request.inputs[key]), expected[key].dtype)
                for key in expected}
        outputs = signature(**feed)
        response = predict_pb2.PredictResponse()
        response.model_spec.name = self.model_name
        response.model_spec.signature_name = name
        response.model_spec.version.value = self.version
        wanted = request.output_filter or outputs.keys()
        for key in wanted:
            response.outputs[key].CopyFrom(tf.make_tensor_proto(outputs[key].numpy()))
        return response


@pytest.fixture
def grpc_port(export_version_dir):
    """A server for the session's export as model "ende" on 127.0.0.1; yields its port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
        SavedModelPredictionService("ende", export_version_dir), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield port
    server.stop(None)
