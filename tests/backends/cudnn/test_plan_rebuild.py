"""How a recorded cuDNN plan is rebuilt without timing, checked on the CPU with a
stand-in frontend graph: by engine and knobs when the frontend can name every
knob, else by the engine tag among the heuristics' plans (the frontend names
backend knobs it does not know ``NOT_SET``, so several collapse into one key)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

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
