"""Which cuDNN plans are built ahead in worker processes (``prebuild``), checked on the
CPU: a graph's standalone text parses back to the same graph; the runtime-compiled
plans of graphs that will be tuned are handed to the pool, once; graphs with a cached
plan or a tuning spec's are not; a lone plan, a failed build and a broken pool leave
the builds to tuning."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
from torch import nn

from dnnc import knobs
from dnnc.backends.cudnn import prebuild, prebuilt, runtime
from dnnc.backends.cudnn.signature import graph_signature
from dnnc.ir import cudnn
from dnnc.ir.text import parse_ir
from dnnc.pipeline import run_stage, to_canonical_tcp


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Conv2d(8, 8, 3, padding=1)
        self.b = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x) + x)
        return self.fc(self.b(y).mean((2, 3)))


@pytest.fixture(scope="module")
def graphs() -> list[cudnn.GraphOp]:
    program = to_canonical_tcp(Residual().eval(), (torch.randn(2, 8, 8, 8),))
    run_stage(program, "gpu-cudnn")
    found = [op for op in program.entry.body.block.ops if isinstance(op, cudnn.GraphOp)]
    assert len(found) == 3
    return found


def test_standalone_text_is_the_same_graph(graphs: list[cudnn.GraphOp]) -> None:
    for op in graphs:
        parsed = next(o for o in parse_ir(prebuild.standalone_text(op)).walk() if isinstance(o, cudnn.GraphOp))
        assert graph_signature(parsed) == graph_signature(op)


class FakePool:
    def __init__(self, fails: bool = False) -> None:
        self.fails = fails
        self.jobs: list[Any] = []

    def map(self, fn: Any, jobs: list[Any]) -> list[Any]:
        if self.fails:
            raise RuntimeError("compile worker 123 stopped answering")
        self.jobs += jobs
        return [(None, "does not build") if name.endswith("x") else (f"{name}@{rank}".encode(), "") for _, _, rank, name in jobs]


@pytest.fixture
def pool(monkeypatch: pytest.MonkeyPatch, graphs: list[cudnn.GraphOp]) -> FakePool:
    """Graph 0 ranks two runtime-compiled plans (the second does not build), graph 1
    one, graph 2 two; graph 1's plan is cached."""
    fake = FakePool()
    prebuilt.forget()
    sigs = [graph_signature(op) for op in graphs]
    fake.cached = {sigs[1]}  # type: ignore[attr-defined]
    ranked = {sigs[0]: [(0, "eng4_a"), (3, "eng7_x")], sigs[1]: [(1, "eng4_b")], sigs[2]: [(0, "eng7_c"), (1, "eng7_d")]}
    monkeypatch.setattr(prebuild, "_pool", lambda: fake)
    monkeypatch.setattr(runtime, "handle_for", lambda device: "handle")
    monkeypatch.setattr(runtime, "has_cached_plan", lambda signature, device: signature in fake.cached)  # type: ignore[attr-defined]
    monkeypatch.setattr(prebuild, "_runtime_compiled", lambda op, handle: ranked[graph_signature(op)])
    yield fake
    prebuilt.forget()


def test_runtime_compiled_plans_of_graphs_to_tune_are_built_once(graphs: list[cudnn.GraphOp], pool: FakePool) -> None:
    cuda = torch.device("cuda", 0)
    prebuild.precompile([*graphs, *graphs], cuda)  # a graph seen twice is built once
    assert sorted((rank, name) for _, _, rank, name in pool.jobs) == [(0, "eng4_a"), (0, "eng7_c"), (1, "eng7_d"), (3, "eng7_x")]
    assert {r: p.blob for r, p in prebuilt.prebuilt_for(graph_signature(graphs[0])).items()} == {0: b"eng4_a@0"}
    assert {r: p.name for r, p in prebuilt.prebuilt_for(graph_signature(graphs[2])).items()} == {0: "eng7_c", 1: "eng7_d"}
    assert not prebuilt.prebuilt_for(graph_signature(graphs[1])), "a cached plan is rebuilt from its record, not tuned"
    assert all(device == 0 for _, device, _, _ in pool.jobs)
    jobs = len(pool.jobs)
    prebuild.precompile(graphs, cuda)
    assert len(pool.jobs) == jobs, "plans built ahead once are not built again (the one that failed is left to tuning)"


def test_a_spec_chosen_plan_and_a_lone_plan_are_left_to_tuning(graphs: list[cudnn.GraphOp], pool: FakePool) -> None:
    from dnnc.ir.attrs import str_attr

    spec_chosen = graphs[0].clone()
    spec_chosen.plan = str_attr('{"engine": 4, "knobs": {}}')
    prebuild.precompile([spec_chosen], torch.device("cuda", 0))
    assert not pool.jobs
    pool.cached.clear()  # type: ignore[attr-defined]
    prebuild.precompile([graphs[1]], torch.device("cuda", 0))
    assert not pool.jobs, "one plan is cheaper to build in place than to start workers for"


def test_a_lone_plan_goes_to_workers_already_running(
    graphs: list[cudnn.GraphOp], pool: FakePool, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool.cached.clear()  # type: ignore[attr-defined]
    monkeypatch.setattr(prebuild, "_WORKERS", SimpleNamespace(started=True, close=lambda: None))
    prebuild.precompile([graphs[1]], torch.device("cuda", 0))
    assert [(rank, name) for _, _, rank, name in pool.jobs] == [(1, "eng4_b")]
    assert prebuild._IDLE is not None
    prebuild._IDLE.cancel()


def test_a_broken_pool_leaves_every_build_to_tuning(graphs: list[cudnn.GraphOp], pool: FakePool) -> None:
    pool.fails = True
    prebuild.precompile(graphs, torch.device("cuda", 0))
    assert not prebuilt._KEPT


def test_no_workers_are_started_off_the_gpu_or_with_one_compile_worker(graphs: list[cudnn.GraphOp], pool: FakePool) -> None:
    from dnnc.knobs import override

    prebuild.precompile(graphs, torch.device("cpu"))
    with override(compile_workers=1):
        prebuild.precompile(graphs, torch.device("cuda", 0))
    assert not pool.jobs


def test_workers_start_ahead_and_are_let_go_when_idle(monkeypatch: pytest.MonkeyPatch) -> None:
    """A GPU compile starts the build workers before it exports (their warm-up makes a
    cuDNN handle on the current GPU) and arms the idle timer, so workers no build
    comes to do not keep their CUDA contexts."""
    started: list[Any] = []
    armed: list[bool] = []
    fake = SimpleNamespace(start_ahead=lambda fn, arg: started.append((fn, arg)))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 3)
    monkeypatch.setattr(runtime, "load_frontend", lambda: object())
    monkeypatch.setattr(prebuild, "_pool", lambda: fake)
    monkeypatch.setattr(prebuild, "_close_when_idle", lambda: armed.append(True))
    with knobs.override(compile_workers=4):
        prebuild.start_workers()
    assert started == [(prebuild._ready, 3)] and armed == [True]
    started.clear()
    with knobs.override(compile_workers=1):
        prebuild.start_workers()
    monkeypatch.setattr(runtime, "load_frontend", lambda: (_ for _ in ()).throw(ImportError("no cudnn")))
    with knobs.override(compile_workers=4):
        prebuild.start_workers()
    assert not started, "no workers with one compile process, nor without the frontend"


class FakeRanked:
    """A ranked graph whose plans at ``compiled`` ranks are runtime-compiled."""

    def __init__(self, count: int, compiled: set[int]) -> None:
        self.count, self.compiled = count, compiled

    def get_execution_plan_count(self) -> int:
        return self.count

    def get_behavior_notes_for_plan_at_index(self, i: int) -> list[str]:
        return ["BehaviorNote_t.RUNTIME_COMPILATION"] if i in self.compiled else []

    def get_plan_name_at_index(self, i: int) -> str:
        return f"eng{i}"


@pytest.mark.parametrize(
    "plans,autotune,expected",
    [(2, True, [1, 3]), (1, True, [1]), (8, True, [1, 3, 4, 5, 7]), (2, False, [])],
)
def test_the_runtime_compiled_plans_tuning_builds(
    graphs: list[cudnn.GraphOp], monkeypatch: pytest.MonkeyPatch, plans: int, autotune: bool, expected: list[int]
) -> None:
    """The first ``knobs.runtime_compiled_plans`` runtime-compiled plans among the first
    ``MAX_TIMED_PLANS`` ranks (precompiled ones are built by tuning, a millisecond each);
    without autotuning, only the first plan, and it is precompiled here."""
    fake = FakeRanked(10, {1, 3, 4, 5, 7, 8, 9})
    monkeypatch.setattr(runtime, "_ranked", lambda op, handle: SimpleNamespace(graph=fake))
    with knobs.override(runtime_compiled_plans=plans, autotune=autotune):
        found = prebuild._runtime_compiled(graphs[0], "handle")
    assert found == [(i, f"eng{i}") for i in expected]
    assert [i for i in range(10) if runtime.runtime_compiled(fake, i)] == sorted(fake.compiled)
