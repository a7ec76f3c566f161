"""How a recorded cuDNN plan is rebuilt without timing, checked on the CPU with a
stand-in frontend graph: by engine and knobs when the frontend can name every
knob, else by the engine tag among the heuristics' plans (the frontend names
backend knobs it does not know ``NOT_SET``, so several collapse into one key)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, ClassVar

import pytest
import torch

from dnnc.backends.cudnn import runtime


class FakeGraph:
    def __init__(self, names: list[str], knob_build_fails: bool = False):
        self.names = names
        self.knob_build_fails = knob_build_fails
        self.calls: list[Any] = []

    def create_execution_plan(self, engine: int, knobs: dict[Any, int]) -> None:
        self.calls.append(("by_knobs", engine, knobs))

    def create_execution_plans(self, modes: list[Any]) -> None:
        self.calls.append(("heuristics",))

    def check_support(self) -> None:
        pass

    def build_plans(self) -> None:
        if self.knob_build_fails:
            raise RuntimeError("CUDNN_STATUS_INVALID_VALUE")

    def get_workspace_size(self) -> int:
        return 16

    def get_execution_plan_count(self) -> int:
        return len(self.names)

    def get_plan_name_at_index(self, i: int) -> str:
        return self.names[i]

    def build_plan_at_index(self, i: int) -> None:
        self.calls.append(("build", i))

    def get_workspace_size_plan_at_index(self, i: int) -> int:
        return 32


@pytest.fixture
def frontend(monkeypatch: pytest.MonkeyPatch) -> list[FakeGraph]:
    graphs: list[FakeGraph] = []
    fake = SimpleNamespace(
        knob_type=SimpleNamespace(SPLIT_K="SPLIT_K", TILE_SIZE="TILE_SIZE"),
        heur_mode=SimpleNamespace(A="A", FALLBACK="FALLBACK"),
        set_stream=lambda **kw: None,
    )
    monkeypatch.setattr(runtime, "load_frontend", lambda: fake)

    def front(op: Any, handle: Any) -> Any:
        return SimpleNamespace(graph=graphs.pop(0), uids=[1, 2], extra=[])

    monkeypatch.setattr(runtime, "_front", front)
    return graphs


class Op:
    plan = None
    inputs = ()
    attributes: ClassVar[dict[str, Any]] = {}


def test_named_knobs_rebuild_the_engine_directly(frontend: list[FakeGraph]) -> None:
    g = FakeGraph(["eng1_k2=1"])
    frontend.append(g)
    kernel = runtime._rebuild(Op(), torch.device("cpu"), "h", runtime.PlanRecord(7, {"SPLIT_K": 2}, "eng7_k0=2"))
    assert kernel.rebuilt and g.calls == [("by_knobs", 7, {"SPLIT_K": 2})]


def test_unnamed_knobs_find_the_plan_by_its_engine_tag(frontend: list[FakeGraph]) -> None:
    g = FakeGraph(["eng32_k2=1_k6=3", "eng32_k2=2_k6=3_k22=0", "eng40"])
    frontend.append(g)
    record = runtime.PlanRecord(32, {"TILE_SIZE": 2, "NOT_SET": 0}, "eng32_k2=2_k6=3_k22=0")
    kernel = runtime._rebuild(Op(), torch.device("cpu"), "h", record)
    assert kernel.rebuilt and kernel.workspace.numel() == 32
    assert g.calls == [("heuristics",), ("build", 1)]


def test_failed_knob_rebuild_falls_back_to_the_tag(frontend: list[FakeGraph]) -> None:
    frontend += [FakeGraph([], knob_build_fails=True), FakeGraph(["eng7_k0=2"])]
    kernel = runtime._rebuild(Op(), torch.device("cpu"), "h", runtime.PlanRecord(7, {"SPLIT_K": 2}, "eng7_k0=2"))
    assert kernel.rebuilt


def test_a_tag_cuDNN_no_longer_lists_is_a_clear_error(frontend: list[FakeGraph]) -> None:
    frontend.append(FakeGraph(["eng1", "eng2"]))
    with pytest.raises(runtime.GraphUnsupported, match="eng32_k2=2 is not among cuDNN's plans"):
        runtime._rebuild(Op(), torch.device("cpu"), "h", runtime.PlanRecord(32, {"NOT_SET": 0}, "eng32_k2=2"))


class Deserialized:
    """What the fake frontend's ``pygraph().deserialize`` gives: a graph holding one plan."""

    def __init__(self, handle: Any = None):
        self.blob: bytes | None = None

    def deserialize(self, handle: Any, blob: bytes) -> None:
        if blob == b"corrupt":
            raise RuntimeError("CUDNN_STATUS_BAD_PARAM")
        self.blob = blob

    def get_workspace_size(self) -> int:
        return 8


@pytest.fixture
def serializing(frontend: list[FakeGraph], monkeypatch: pytest.MonkeyPatch) -> list[Deserialized]:
    made: list[Deserialized] = []

    def pygraph(handle: Any = None) -> Deserialized:
        made.append(Deserialized(handle))
        return made[-1]

    runtime.load_frontend().pygraph = pygraph
    monkeypatch.setattr(runtime, "serialization_target", lambda device: "cudnn 91900 on GPU X")
    monkeypatch.setattr(runtime, "_Builder", lambda op, handle: SimpleNamespace(uids=[1, 2], extra=[]))
    return made


def test_a_serialized_plan_for_this_gpu_is_deserialized_not_built(frontend, serializing) -> None:
    record = runtime.PlanRecord(4, {"KERNEL_CFG": 9}, "eng4_k24=9", serialized=b"plan", serialized_for="cudnn 91900 on GPU X")
    kernel = runtime._rebuild(Op(), torch.device("cpu"), "h", record)
    assert kernel.rebuilt and kernel.deserialized and serializing[0].blob == b"plan"
    assert kernel.workspace.numel() == 8 and not frontend, "no graph was built from its descriptors"


@pytest.mark.parametrize(
    "blob, target",
    [
        (b"plan", "cudnn 90800 on GPU X"),
        (b"corrupt", "cudnn 91900 on GPU X"),
        (runtime.PYTHON_PLAN_MAGIC + b"{}", "cudnn 91900 on GPU X"),
    ],
    ids=["other-target", "does-not-deserialize", "python-engine-format"],
)
def test_a_serialized_plan_that_cannot_be_used_is_rebuilt_from_engine_and_knobs(frontend, serializing, blob, target) -> None:
    g = FakeGraph(["eng4_k24=9"])
    frontend.append(g)
    record = runtime.PlanRecord(4, {"SPLIT_K": 9}, "eng4_k24=9", serialized=blob, serialized_for=target)
    kernel = runtime._rebuild(Op(), torch.device("cpu"), "h", record)
    assert kernel.rebuilt and not kernel.deserialized and g.calls == [("by_knobs", 4, {"SPLIT_K": 9})]
    assert all(d.blob in (None, b"corrupt") for d in serializing), "a Python-engine blob never reaches the frontend"
    assert kernel.plan.serialized is None, "the stale blob is not recorded again (the fake graph does not serialize)"


def test_tuning_takes_a_plan_built_in_a_worker_when_it_is_the_same_plan(frontend, serializing, monkeypatch) -> None:
    from dnnc.backends.cudnn.prebuilt import Prebuilt
    from dnnc.knobs import override

    g = FakeGraph(["eng4_k24=9", "eng4_k24=3"])
    g.get_engine_and_knobs_at_index = lambda i: (4, {})  # type: ignore[attr-defined]
    g.serialize = lambda as_bytes: b"local"  # type: ignore[attr-defined]
    frontend.append(g)
    monkeypatch.setattr(runtime, "prebuilt_for", lambda signature: {0: Prebuilt("eng4_k24=9", b"from-worker")})
    with override(autotune=False):
        kernel = runtime._tune(Op(), torch.device("cpu"), "h", "sig")
    assert kernel.deserialized and kernel.plan.serialized == b"from-worker" and ("build", 0) not in g.calls

    g = FakeGraph(["eng4_k24=3", "eng4_k24=9"])  # ranked otherwise here: the worker's plan 0 is not this plan 0
    g.get_engine_and_knobs_at_index = lambda i: (4, {})  # type: ignore[attr-defined]
    g.serialize = lambda as_bytes: b"local"  # type: ignore[attr-defined]
    frontend.append(g)
    with override(autotune=False):
        kernel = runtime._tune(Op(), torch.device("cpu"), "h", "sig")
    assert not kernel.deserialized and ("build", 0) in g.calls and kernel.plan.serialized == b"local"


def test_an_artifact_records_the_serialized_plan_as_base64_and_reads_it_back() -> None:
    from dnnc.backends.cudnn.kernel_backend import parse_records
    from dnnc.errors import ArtifactError

    plan = runtime.PlanRecord(4, {"KERNEL_CFG": 9}, "eng4_k24=9", 0.01, 3, b"\x00plan\xff", "cudnn 91900 on GPU X")
    kernel = runtime.CudnnGraphKernel.__new__(runtime.CudnnGraphKernel)
    kernel.plan = plan
    record = kernel.record()
    assert set(record["plan"]) == {"engine", "knobs", "name", "ms", "timed"}, "tuning specs see engine and knobs only"
    parsed = parse_records([{"ordinal": 0, **record}], "kernels/sm90/cudnn.json")[0]
    assert parsed.serialized == plan.serialized and parsed.serialized_for == plan.serialized_for
    with pytest.raises(ArtifactError, match="kernels/sm90/cudnn.json: plan record 0 is malformed"):
        parse_records([{"ordinal": 0, **record, "serialized": "not base64!"}], "kernels/sm90/cudnn.json")
