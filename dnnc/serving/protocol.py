"""The KServe v2 inference protocol over HTTP, the one Triton Inference Server,
KServe and their clients (``tritonclient.http``) speak: a JSON request naming each
input's shape and datatype with its data inline, or in the binary-data extension
(the JSON header first, its length in ``Inference-Header-Content-Length``, then each
tensor's raw bytes); a JSON response, binary where the request asks for it.

Pure parsing and encoding: every malformed request is a ``ProtocolError`` with the
message the client gets, never an exception from inside numpy or json.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

HEADER_LENGTH = "Inference-Header-Content-Length"
DATATYPES: dict[str, np.dtype] = {
    "FP32": np.dtype(np.float32),
    "FP16": np.dtype(np.float16),
    "INT64": np.dtype(np.int64),
    "INT32": np.dtype(np.int32),
    "BOOL": np.dtype(np.bool_),
}
MAX_REQUEST_BYTES = 1 << 30
"""A request declaring more than this is refused before anything is allocated."""


class ProtocolError(Exception):
    """A request the protocol or the model cannot take: HTTP 400 with ``{"error": message}``."""

    status = 400


def datatype_of(dtype: Any) -> str:
    """The protocol's name of a numpy or torch dtype (``FP32``)."""
    name = str(dtype).removeprefix("torch.")
    for key, value in DATATYPES.items():
        if value.name == name or (name == "bool" and key == "BOOL"):
            return key
    raise ProtocolError(f"dtype {name} has no KServe v2 datatype dnnc serves ({', '.join(DATATYPES)})")


@dataclass
class InferRequest:
    inputs: dict[str, np.ndarray]
    request_id: str | None = None
    binary_outputs: set[str] = field(default_factory=set)
    """Outputs the client asked for as binary data (the rest come back as JSON lists)."""
    all_binary: bool = False
    """``binary_data_output`` set for every output."""


def parse_infer(body: bytes, header_length: str | None) -> InferRequest:
    """A v2 infer request, JSON or JSON plus binary tensors."""
    if len(body) > MAX_REQUEST_BYTES:
        raise ProtocolError(f"request of {len(body)} bytes is over the {MAX_REQUEST_BYTES} byte limit")
    if header_length is not None:
        try:
            split = int(header_length)
        except ValueError:
            raise ProtocolError(f"{HEADER_LENGTH} must be an integer, got {header_length!r}") from None
        if not 0 < split <= len(body):
            raise ProtocolError(f"{HEADER_LENGTH} {split} is outside the body's {len(body)} bytes")
        header, blobs = body[:split], memoryview(body)[split:]
    else:
        header, blobs = body, memoryview(b"")
    try:
        data = json.loads(header)
    except (ValueError, UnicodeDecodeError) as e:
        raise ProtocolError(f"the request is not valid JSON: {e}") from None
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), list) or not data["inputs"]:
        raise ProtocolError('the request must be a JSON object with a non-empty "inputs" list')
    inputs: dict[str, np.ndarray] = {}
    offset = 0
    for i, spec in enumerate(data["inputs"]):
        array, used = _tensor(spec, i, blobs[offset:])
        offset += used
        inputs[spec["name"]] = array
    if offset != len(blobs):
        raise ProtocolError(f"{len(blobs) - offset} bytes of binary data follow the inputs that declared theirs")
    params = data.get("parameters") or {}
    outputs = data.get("outputs") or []
    if not isinstance(outputs, list) or not all(isinstance(o, dict) and isinstance(o.get("name"), str) for o in outputs):
        raise ProtocolError('"outputs" must be a list of {"name": ...}')
    binary = {o["name"] for o in outputs if (o.get("parameters") or {}).get("binary_data")}
    request_id = data.get("id")
    return InferRequest(
        inputs, request_id if isinstance(request_id, str) else None, binary, bool(params.get("binary_data_output"))
    )


def _tensor(spec: Any, index: int, blobs: memoryview) -> tuple[np.ndarray, int]:
    if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
        raise ProtocolError(f'input {index} must be an object with a "name"')
    name = spec["name"]
    shape, datatype = spec.get("shape"), spec.get("datatype")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise ProtocolError(f'input {name!r}: "shape" must be a list of non-negative integers, got {shape!r}')
    if datatype not in DATATYPES:
        raise ProtocolError(f'input {name!r}: "datatype" must be one of {", ".join(DATATYPES)}, got {datatype!r}')
    dtype = DATATYPES[datatype]
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count * dtype.itemsize > MAX_REQUEST_BYTES:
        raise ProtocolError(f"input {name!r}: shape {shape} is over the request size limit")
    size = (spec.get("parameters") or {}).get("binary_data_size")
    if size is not None:
        if not isinstance(size, int) or size != count * dtype.itemsize or size > len(blobs):
            raise ProtocolError(
                f"input {name!r}: binary_data_size {size!r} does not match shape {shape} of {datatype} "
                f"({count * dtype.itemsize} bytes) or the {len(blobs)} bytes left"
            )
        return np.frombuffer(blobs[:size], dtype=dtype).reshape(shape).copy(), size
    values = spec.get("data")
    if values is None:
        raise ProtocolError(f'input {name!r} has neither "data" nor binary data')
    try:
        array = np.asarray(values, dtype=dtype)
    except (ValueError, TypeError, OverflowError) as e:
        raise ProtocolError(f'input {name!r}: "data" is not a list of {datatype} values: {e}') from None
    if array.size != count:
        raise ProtocolError(f"input {name!r}: {array.size} values for shape {shape} ({count})")
    return array.reshape(shape), 0


def encode_infer(model: str, outputs: dict[str, np.ndarray], request: InferRequest) -> tuple[bytes, dict[str, str]]:
    """The response body and its headers: JSON, with the outputs the request asked
    for in binary after the JSON header."""
    entries, blobs = [], []
    for name, array in outputs.items():
        entry: dict[str, Any] = {"name": name, "shape": list(array.shape), "datatype": datatype_of(array.dtype)}
        if request.all_binary or name in request.binary_outputs:
            raw = np.ascontiguousarray(array).tobytes()
            entry["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        else:
            entry["data"] = array.reshape(-1).tolist()
        entries.append(entry)
    response: dict[str, Any] = {"model_name": model, "model_version": "1", "outputs": entries}
    if request.request_id is not None:
        response["id"] = request.request_id
    header = json.dumps(response).encode()
    if not blobs:
        return header, {"content-type": "application/json"}
    return header + b"".join(blobs), {"content-type": "application/octet-stream", HEADER_LENGTH: str(len(header))}
