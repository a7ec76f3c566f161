"""An artifact served on the GPU, without a server: requests staged into fixed
buffers and gathered into the buckets get what each gets alone, no call after the
warm-up captures a CUDA graph, and a request whose index is out of range fails
alone although the GPU reports such an index only after the kernel ran."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

import dnnc
from dnnc.numerics import relative_error
from dnnc.serving.model import ServedModel
from dnnc.serving.protocol import InferRequest, ProtocolError
from tests.serving.models import image_net, token_net

pytestmark = pytest.mark.gpu


def _compiled(factory, tmp_path: Path, name: str) -> tuple[torch.nn.Module, Path]:
    model, inputs = factory()
    model = model.cuda()
    compiled = dnnc.compile(model, tuple(x.cuda() for x in inputs), device="cuda", dynamic={"batch": (1, 8)})
    return model, compiled.save(tmp_path / f"{name}.dnnc")


def _captures(served: ServedModel) -> dict:
    return {k: (m._runner.captured, m._runner.captured_direct) for k, m in served.module.modules.items()}


def test_gathered_requests_on_the_gpu_get_what_each_gets_alone_with_no_capture_after_warm_up(tmp_path: Path) -> None:
    model, path = _compiled(image_net, tmp_path, "image")
    served = ServedModel.load(path)
    assert served.module.device == "cuda"
    served.warm_up()
    warmed = _captures(served)
    rng = np.random.default_rng(0)
    for rows in ([1, 3, 2, 2], [4], [1], [2, 3], [1, 1, 1, 1, 1, 1, 1], [8], [3], [5, 2]):
        images = [rng.standard_normal((n, 3, 6, 6)).astype(np.float32) for n in rows]
        results = served.run([served.check(InferRequest({"image": x})) for x in images])
        for x, result in zip(images, results):
            assert not isinstance(result, ProtocolError), result
            with torch.no_grad():
                want = model(torch.from_numpy(x).cuda()).cpu()
            err = relative_error(torch.from_numpy(result["output_0"]), want)
            assert err < 2e-3, f"rows {rows}: relative error {err:.1e}"
    assert _captures(served) == warmed, "calls after the warm-up captured CUDA graphs"
    assert served.stats.executions == 8


def test_an_index_out_of_range_on_the_gpu_fails_only_its_own_request(tmp_path: Path) -> None:
    model, path = _compiled(token_net, tmp_path, "tokens")
    served = ServedModel.load(path)
    served.warm_up()
    good = [np.array([[1, 2, 3, 4]]), np.array([[5, 6, 7, 8], [9, 0, 1, 2]])]
    bad = np.array([[1, 2, 50, 4]])  # 50 is past the embedding's 10 rows
    results = served.run([served.check(InferRequest({"ids": x})) for x in (good[0], bad, good[1])])
    assert isinstance(results[1], ProtocolError) and "out of range" in str(results[1])
    for x, result in zip(good, (results[0], results[2])):
        assert not isinstance(result, ProtocolError), result
        with torch.no_grad():
            want = model(torch.from_numpy(x).cuda()).cpu()
        assert relative_error(torch.from_numpy(result["output_0"]), want) < 2e-3
    after = served.run([served.check(InferRequest({"ids": good[0]}))])  # nothing left over for the next request
    assert not isinstance(after[0], ProtocolError), after[0]
