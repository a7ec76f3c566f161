"""Loading rebuilds a cuDNN graph from its recorded engine and knobs (the artifact's
``cudnn.json`` record for its position, else the ``plan`` a tuning spec put on the
graph) and never times plans; a built kernel's plan is a record, not an attribute the
build writes into the IR. Checked on the CPU with the frontend calls replaced, so the
choice logic runs without a GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from torch import nn

from dnnc import knobs
from dnnc.artifact import ArtifactWarning
from dnnc.backends.cudnn import kernel_backend, runtime
from dnnc.backends.interface import BuildContext, Recorded
from dnnc.errors import ArtifactError
from dnnc.ir import cudnn
from dnnc.ir.attrs import str_attr
from dnnc.passes import parse_passes
from dnnc.pipeline import CUDNN_STAGE, run_passes, to_canonical_tcp


def _load(graph: cudnn.GraphOp, records: dict[int, runtime.PlanRecord] | None = None, ordinal: int = 0) -> object:
    """The graph's kernel as loading an artifact builds it."""
    context = BuildContext(torch.device("cpu"), Recorded({"cudnn": records or {}}))
    return kernel_backend.build(graph, ordinal, context)


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
    assert _load(graph) == "kernel"
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
        assert _load(graph) == "heur"
    assert autotune_seen == [False]


def test_unreadable_plan_attribute_falls_back_to_heuristics(graph: cudnn.GraphOp, monkeypatch: pytest.MonkeyPatch) -> None:
    graph.plan = str_attr("{not json")
    monkeypatch.setattr(runtime, "_rebuild", lambda *a: pytest.fail("rebuilt an unreadable plan"))
    monkeypatch.setattr(runtime, "build_kernel", lambda op, device, sig: "heur")
    with pytest.warns(ArtifactWarning, match="does not build here"):
        assert _load(graph) == "heur"


def test_the_record_for_the_graphs_position_comes_before_the_ir(graph: cudnn.GraphOp, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuilt = []
    monkeypatch.setattr(runtime, "_rebuild", lambda op, device, handle, record: rebuilt.append(record) or "kernel")
    _load(graph, {0: runtime.PlanRecord(11, {"TILE": 3}, "engine11")}, ordinal=0)
    _load(graph, {5: runtime.PlanRecord(11, {"TILE": 3}, "engine11")}, ordinal=0)  # a record of another graph: the IR's
    assert [(r.engine, r.knobs) for r in rebuilt] == [(11, {"TILE": 3}), (7, {"SPLIT_K": 2})]


def test_identical_graphs_share_one_build(graph: cudnn.GraphOp, monkeypatch: pytest.MonkeyPatch) -> None:
    builds = []
    monkeypatch.setattr(runtime, "_rebuild", lambda op, device, handle, record: builds.append(record) or object())
    context = BuildContext(torch.device("cpu"), Recorded())
    first, second = kernel_backend.build(graph, 0, context), kernel_backend.build(graph, 1, context)
    assert first is second and len(builds) == 1


def test_a_built_kernel_records_its_plan_and_leaves_the_ir_alone(graph: cudnn.GraphOp) -> None:
    graph.plan = None
    plan = runtime.PlanRecord(3, {"SPLIT_K": 1}, "engine3", 0.25, 4)
    kernel = runtime.CudnnGraphKernel(None, None, [], [], torch.empty(1), plan)
    assert kernel.record() == {"plan": {"engine": 3, "knobs": {"SPLIT_K": 1}, "name": "engine3", "ms": 0.25, "timed": 4}}
    assert kernel.tuned_ms == 0.25
    assert graph.plan is None
    parsed = kernel_backend.parse_records([{"ordinal": 2, **kernel.record()}], "cudnn.json")
    assert parsed == {2: plan}


@pytest.mark.parametrize(
    ("records", "message"),
    [
        ({"plan": {}}, "expected a list of plan records"),
        ([{"plan": {"engine": 1}}], "plan record 0 needs the fields 'ordinal' and 'plan'"),
        ([{"ordinal": -1, "plan": {"engine": 1}}], "ordinal -1 is not a new non-negative integer"),
        ([{"ordinal": 0, "plan": {"engine": 1}}, {"ordinal": 0, "plan": {"engine": 2}}], "ordinal 0 is not a new"),
        ([{"ordinal": 0, "plan": {"knobs": {}}}], "plan record 0 is malformed: KeyError"),
        ([{"ordinal": 0, "plan": {"engine": "eval('1')"}}], "plan record 0 is malformed: ValueError"),
        ([{"ordinal": 0, "plan": [1, 2]}], "plan record 0 is malformed"),
    ],
)
def test_malformed_plan_records_are_refused(records: object, message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        kernel_backend.parse_records(records, "cudnn.json")
