"""A call hands out its outputs in its graph's own buffers, without a copy, and never
rewrites a buffer the caller still refers to: a loop that keeps one result alternates
between two graphs; results kept, or views of them, stay as they were; outputs are
ordinary tensors; both the static-buffer and the direct paths do it."""

from __future__ import annotations

import pytest
import torch

import dnnc
from dnnc.runtime.cuda_graph import HANDED_OUT_GRAPHS, CudaGraphRunner

pytestmark = pytest.mark.gpu

TOL = {"rtol": 2e-2, "atol": 2e-2}


class Block(torch.nn.Module):
    """Two outputs: one of them a view (a reshape) of a kernel's result."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(16, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.conv(x))
        return y, (y * 2).flatten(1)


@pytest.fixture(scope="module")
def block() -> tuple[torch.nn.Module, dnnc.CompiledModule]:
    model = Block().eval().to("cuda", torch.float16)
    example = torch.randn(2, 16, 8, 8, device="cuda", dtype=torch.float16)
    return model, dnnc.compile(model, (example,), device="cuda")  # type: ignore[return-value]


def _fresh() -> torch.Tensor:
    return torch.randn(2, 16, 8, 8, device="cuda", dtype=torch.float16)


def _expected(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    with torch.no_grad():
        return model(x)


def _check(out: tuple[torch.Tensor, ...], want: tuple[torch.Tensor, ...]) -> None:
    for o, w in zip(out, want, strict=True):
        torch.testing.assert_close(o, w, **TOL)


def test_a_loop_keeping_one_result_alternates_between_two_graphs_without_copies(block) -> None:
    model, compiled = block
    runner = compiled._runner
    assert isinstance(runner, CudaGraphRunner) and runner.tail == len(compiled._executor.steps)
    xs = [_fresh() for _ in range(6)]  # all alive: new addresses, the static-buffer path
    addresses = set()
    y = None
    for x in xs:
        y = compiled(x)  # the previous y is still held while this call runs
        _check(y, _expected(model, x))
        addresses.add(y[0].untyped_storage().data_ptr())
    assert len(addresses) == HANDED_OUT_GRAPHS, "two graphs' buffers, handed out in turn"
    (replays,) = runner._graphs.values()
    assert len(replays.handing) == HANDED_OUT_GRAPHS and replays.shared is None


def test_results_kept_are_never_rewritten(block) -> None:
    model, compiled = block
    xs = [_fresh() for _ in range(5)]
    outs = [compiled(x) for x in xs]  # all kept: the later calls copy out of a shared graph
    for out, x in zip(outs, xs):
        _check(out, _expected(model, x))
    del outs
    view = compiled(xs[0])[1][:, :5]  # only a view of a handed-out output is kept
    kept = view.clone()
    for _ in range(3):
        compiled(_fresh())
    assert torch.equal(view, kept)


def test_outputs_are_ordinary_tensors_the_caller_may_change(block) -> None:
    model, compiled = block
    x = _fresh()
    with torch.inference_mode():
        first = compiled(x)
    y = compiled(_fresh())
    assert not y[0].is_inference() and not y[0].requires_grad
    y[0].add_(1)  # changed in place by the caller, then dropped
    del y, first
    z = compiled(x)
    _check(z, _expected(model, x))


def test_the_direct_path_hands_out_its_outputs_too(block) -> None:
    model, compiled = block
    runner = compiled._runner
    x = _fresh()
    outs = [compiled(x) for _ in range(3)]  # the second call on with a graph on x's own memory
    assert runner.captured_direct >= 1
    for out in outs:
        _check(out, _expected(model, x))
    x.copy_(_fresh())
    _check(compiled(x), _expected(model, x))
    assert len({o[0].untyped_storage().data_ptr() for o in outs}) == len(outs), "kept results are apart"
