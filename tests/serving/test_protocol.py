"""The KServe v2 protocol: JSON and binary tensors in, JSON and binary out, and every
malformed request a ProtocolError naming what is wrong."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from dnnc.serving.protocol import HEADER_LENGTH, InferRequest, ProtocolError, encode_infer, parse_infer


def _json(inputs: list[dict], **extra) -> bytes:
    return json.dumps({"inputs": inputs, **extra}).encode()


def test_json_tensors_parse_with_their_shape_and_datatype() -> None:
    body = _json(
        [
            {"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [1, 2, 3, 4]},
            {"name": "ids", "shape": [2], "datatype": "INT64", "data": [[7], [8]]},
        ],
        id="r1",
    )
    request = parse_infer(body, None)
    assert request.request_id == "r1"
    assert request.inputs["x"].dtype == np.float32 and request.inputs["x"].tolist() == [[1, 2], [3, 4]]
    assert request.inputs["ids"].dtype == np.int64 and request.inputs["ids"].tolist() == [7, 8]


def test_binary_tensors_follow_the_json_header() -> None:
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    header = _json(
        [{"name": "x", "shape": [2, 3], "datatype": "FP16", "parameters": {"binary_data_size": x.nbytes}}],
        outputs=[{"name": "y", "parameters": {"binary_data": True}}],
    )
    request = parse_infer(header + x.tobytes(), str(len(header)))
    assert np.array_equal(request.inputs["x"], x) and request.binary_outputs == {"y"}


@pytest.mark.parametrize(
    ("body", "header", "message"),
    [
        (b"{not json", None, "not valid JSON"),
        (b"[]", None, 'non-empty "inputs" list'),
        (_json([{"shape": [1], "datatype": "FP32", "data": [1]}]), None, 'must be an object with a "name"'),
        (_json([{"name": "x", "shape": [-1], "datatype": "FP32", "data": [1]}]), None, "non-negative integers"),
        (_json([{"name": "x", "shape": [1], "datatype": "FP64", "data": [1]}]), None, '"datatype" must be one of FP32'),
        (_json([{"name": "x", "shape": [3], "datatype": "FP32", "data": [1, 2]}]), None, "2 values for shape [3] (3)"),
        (_json([{"name": "x", "shape": [1], "datatype": "INT32", "data": ["a"]}]), None, "not a list of INT32 values"),
        (_json([{"name": "x", "shape": [1], "datatype": "FP32"}]), None, 'neither "data" nor binary data'),
        (
            _json([{"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}}]),
            "0",
            "outside the body",
        ),
        (
            _json([{"name": "x", "shape": [2], "datatype": "FP32", "parameters": {"binary_data_size": 8}}]) + b"1234",
            "100",
            "does not match",
        ),
        (
            _json([{"name": "x", "shape": [1 << 20, 1 << 20], "datatype": "FP32", "data": []}]),
            None,
            "over the request size limit",
        ),
    ],
)
def test_malformed_requests_are_protocol_errors(body: bytes, header: str | None, message: str) -> None:
    with pytest.raises(ProtocolError, match=re.escape(message)):
        parse_infer(body, header)


def test_responses_are_json_or_binary_as_asked() -> None:
    y = np.arange(4, dtype=np.float32).reshape(2, 2)
    body, headers = encode_infer("m", {"y": y}, InferRequest({}, "r2"))
    assert headers == {"content-type": "application/json"}
    assert json.loads(body) == {
        "model_name": "m",
        "model_version": "1",
        "id": "r2",
        "outputs": [{"name": "y", "shape": [2, 2], "datatype": "FP32", "data": [0.0, 1.0, 2.0, 3.0]}],
    }
    body, headers = encode_infer("m", {"y": y}, InferRequest({}, None, {"y"}))
    split = int(headers[HEADER_LENGTH])
    entry = json.loads(body[:split])["outputs"][0]
    assert entry["parameters"] == {"binary_data_size": 16}
    assert np.array_equal(np.frombuffer(body[split:], np.float32).reshape(2, 2), y)
