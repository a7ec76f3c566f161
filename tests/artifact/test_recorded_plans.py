"""Loading rebuilds a cuDNN graph from the engine and knobs on its ``plan``
attribute and never times plans: checked on the CPU with the frontend calls
replaced, so the choice logic runs without a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from dnnc import knobs
from dnnc.artifact import ArtifactWarning
from dnnc.artifact.kernels import RecordedKernels
from dnnc.backends.cudnn import runtime
from dnnc.ir import cudnn
from dnnc.ir.attrs import str_attr
from dnnc.passes import parse_passes
from dnnc.pipeline import CUDNN_STAGE, run_passes, to_canonical_tcp


@pytest.fixture
def graph(rng: torch.Generator, monkeypatch: pytest.MonkeyPatch) -> cudnn.GraphOp:
    model = nn.Sequential(nn.Conv2d(4, 8, 3, padding=1), nn.ReLU()).eval()
    program = to_canonical_tcp(model, (torch.randn(1, 4, 6, 6, generator=rng),))
    run_passes(program, parse_passes(CUDNN_STAGE))
    (op,) = [op for op in program.entry.body.walk() if isinstance(op, cudnn.GraphOp)]
    op.plan = str_attr(runtime.PlanRecord(7, {"SPLIT_K": 2}, "engine7").to_json())
    monkeypatch.setattr(runtime, "handle_for", lambda device: "handle")
    monkeypatch.setattr(runtime, "load_frontend", lambda: SimpleNamespace(set_stream=lambda handle, stream: None))
    monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: SimpleNamespace(cuda_stream=0))
    monkeypatch.setattr(runtime, "_tune", lambda *a: pytest.fail("load timed cuDNN plans"))
    return op


def test_recorded_engine_is_rebuilt(graph: cudnn.GraphOp, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilt = []
    monkeypatch.setattr(runtime, "_rebuild", lambda op, device, handle, record: rebuilt.append(record) or "kernel")
    assert RecordedKernels({}).cudnn(graph, torch.device("cpu"), "sig") == "kernel"
    assert [(r.engine, r.knobs) for r in rebuilt] == [(7, {"SPLIT_K": 2})]


def test_invalid_engine_falls_back_to_heuristics_without_timing(graph: cudnn.GraphOp, monkeypatch: pytest.MonkeyPatch) -> None:
    def reject(*a: object) -> None:
        raise RuntimeError("engine 7 is not supported on this device")

    autotune_seen = []
    monkeypatch.setattr(runtime, "_rebuild", reject)
    monkeypatch.setattr(runtime, "build_kernel", lambda op, device, sig: autotune_seen.append(knobs.get().autotune) or "heur")
    with (
        knobs.override(autotune=True),
        pytest.warns(ArtifactWarning, match=r"cuDNN plan recorded .*\"engine\": 7.* not supported on this device"),
    ):
        assert RecordedKernels({}).cudnn(graph, torch.device("cpu"), "sig") == "heur"
    assert autotune_seen == [False]


def test_unreadable_plan_attribute_falls_back_to_heuristics(graph: cudnn.GraphOp, monkeypatch: pytest.MonkeyPatch) -> None:
    graph.plan = str_attr("{not json")
    monkeypatch.setattr(runtime, "_rebuild", lambda *a: pytest.fail("rebuilt an unreadable plan"))
    monkeypatch.setattr(runtime, "build_kernel", lambda op, device, sig: "heur")
    with pytest.warns(ArtifactWarning, match="does not build here"):
        assert RecordedKernels({}).cudnn(graph, torch.device("cpu"), "sig") == "heur"
