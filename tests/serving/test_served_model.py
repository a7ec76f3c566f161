"""An artifact as a served model, without a server: requests checked one by one,
gathered into the buckets and split back to exactly what each gets alone, and a
request that fails its gathered call failing alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import dnnc
from dnnc.serving.model import ServedModel
from dnnc.serving.protocol import InferRequest, ProtocolError
from tests.serving.models import image_net, token_net


@pytest.fixture(scope="module")
def image_artifact(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, inputs = image_net()
    compiled = dnnc.compile(model, inputs, device="cpu", dynamic={"batch": (1, 8)})
    return compiled.save(tmp_path_factory.mktemp("served") / "image.dnnc")


def _request(**inputs: np.ndarray) -> InferRequest:
    return InferRequest(dict(inputs))


def test_gathered_requests_get_what_each_gets_alone(image_artifact: Path) -> None:
    served = ServedModel.load(image_artifact)
    rng = np.random.default_rng(0)
    images = [rng.standard_normal((rows, 3, 6, 6)).astype(np.float32) for rows in (1, 3, 2, 2, 4)]
    results = served.run([served.check(_request(image=x)) for x in images])
    assert served.stats.executions == 2  # 1+3+2+2 rows fill the batch-8 bucket; 4 more start another call
    alone = dnnc.load(image_artifact)
    for x, result in zip(images, results):
        assert not isinstance(result, ProtocolError)
        # alone is another bucket's program (batch 1, 2 or 4): the same up to rounding
        np.testing.assert_allclose(result["output_0"], alone(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-6)


def test_metadata_marks_the_batch_as_varying(image_artifact: Path) -> None:
    meta = ServedModel.load(image_artifact, name="net").metadata()
    assert meta["inputs"] == [{"name": "image", "datatype": "FP32", "shape": [-1, 3, 6, 6]}]
    assert meta["outputs"] == [{"name": "output_0", "datatype": "FP32", "shape": [-1, 5]}]
    assert meta["parameters"] == {"max_batch": 8, "gathers_requests": True}


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        ({"picture": np.zeros((1, 3, 6, 6), np.float32)}, "takes inputs image; the request has picture"),
        ({"image": np.zeros((1, 3, 5, 6), np.float32)}, "input 'image': expected shape [batch, 3, 6, 6], got [1, 3, 5, 6]"),
        ({"image": np.zeros((1, 3, 6, 6), np.int64)}, "input 'image': expected datatype FP32, got INT64"),
        ({"image": np.zeros((9, 3, 6, 6), np.float32)}, "batch 9 is outside the compiled range batch=1..8"),
    ],
)
def test_requests_that_do_not_fit_are_named(image_artifact: Path, inputs: dict, message: str) -> None:
    with pytest.raises(ProtocolError) as raised:
        ServedModel.load(image_artifact).check(_request(**inputs))
    assert message in str(raised.value)


def test_a_failing_request_does_not_fail_its_batch_mates(tmp_path: Path) -> None:
    model, inputs = token_net()
    path = dnnc.compile(model, inputs, device="cpu", dynamic={"batch": (1, 8)}).save(tmp_path / "tokens.dnnc")
    served = ServedModel.load(path)
    good = [np.array([[1, 2, 3, 4]]), np.array([[5, 6, 7, 8], [9, 0, 1, 2]])]
    bad = np.array([[1, 2, 50, 4]])  # 50 is past the embedding's 10 rows
    results = served.run([served.check(_request(ids=x)) for x in (good[0], bad, good[1])])
    assert isinstance(results[1], ProtocolError) and "failed on this request" in str(results[1])
    for x, result in zip(good, (results[0], results[2])):
        assert not isinstance(result, ProtocolError)
        with torch.no_grad():
            np.testing.assert_allclose(result["output_0"], model(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)
    assert served.stats.failures == 1
