"""Constant subgraphs (masks from arange, position ids, tables computed from buffers)
that the import rules cannot express are computed by PyTorch at compile time and
become parameters; input-dependent ops without a rule are still reported.

The rule for cumsum is removed in these tests (``no_cumsum``), so they hold whether
or not dnnc gains one; the other ops used (digamma, determinant, bucketize) are ones
dnnc is not expected to take."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

from dnnc.errors import UnsupportedOpError
from dnnc.frontend.aten import IMPORT_RULES
from dnnc.frontend.constants import ConstantGraph
from dnnc.frontend.torch_export import export, survey
from dnnc.ir.program import Program
from tests.compile_helpers import compile_program, eager, flat, run_reference

aten = torch.ops.aten


@pytest.fixture
def no_cumsum(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(IMPORT_RULES, aten.cumsum.default, raising=False)


def _computed(program: Program) -> dict[str, torch.Tensor]:
    return {name: t for name, t in program.params.items() if name.startswith("const.")}


def _assert_matches_eager(model: nn.Module, inputs: list[torch.Tensor]) -> Program:
    program = compile_program(model, inputs)
    for got, expected in zip(run_reference(program, inputs), flat(eager(model, inputs)), strict=True):
        assert got.dtype == expected.dtype
        torch.testing.assert_close(got, expected, rtol=1e-6, atol=1e-6)
    return program


class CausalMask(nn.Module):
    """Position ids by a cumulative sum, a boolean causal mask from them."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.cumsum(torch.ones(x.shape[-1], dtype=torch.int64), 0) - 1
        mask = positions[None, :] <= positions[:, None]
        return torch.where(mask, x, torch.full_like(x, -1e4)).softmax(-1)


def test_a_causal_mask_from_cumsum_is_computed_at_compile_time(no_cumsum: None) -> None:
    x = torch.randn(2, 7, 7)
    program = _assert_matches_eager(CausalMask(), [x])
    assert {t.dtype for t in _computed(program).values()} <= {torch.int64, torch.bool}
    assert _computed(program)  # the positions, or what fold-params made of them
    assert survey(export(CausalMask(), [x])).computed == {"aten.cumsum.default": 1}


class Tables(nn.Module):
    """A float table from a buffer through an op without a rule, used by the input;
    an integer bucket index (bucketize has no rule) that a mask is made of."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("freqs", torch.linspace(1.0, 3.0, 6))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = torch.special.digamma(self.freqs)  # float32, from a buffer
        odd = torch.bucketize(torch.arange(6), torch.tensor([1, 3])) == 1  # int64 buckets, a bool mask
        return torch.where(odd, x * table, x)


def test_float_and_boolean_constants_become_parameters() -> None:
    program = _assert_matches_eager(Tables(), [torch.randn(3, 6)])
    dtypes = {t.dtype for t in _computed(program).values()}
    assert torch.float32 in dtypes and (torch.bool in dtypes or torch.int64 in dtypes)


def test_computed_parameters_survive_save_and_load(tmp_path: Path, no_cumsum: None) -> None:
    x = torch.randn(5, 5)
    program = compile_program(CausalMask(), [x])
    program.save(tmp_path / "mask.mlir")
    loaded = Program.load(tmp_path / "mask.mlir")
    assert {k: v.dtype for k, v in _computed(loaded).items()} == {k: v.dtype for k, v in _computed(program).items()}
    torch.testing.assert_close(run_reference(loaded, [x])[0], CausalMask()(x))


class ChainOfUnsupported(nn.Module):
    """cumsum feeds bucketize (no rule either) and a cast: only what the input meets is stored."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = torch.bucketize(torch.cumsum(torch.arange(x.shape[-1]), 0), torch.tensor([2, 7])).float()
        return x + c


def test_constants_used_only_by_computed_constants_are_not_stored(no_cumsum: None) -> None:
    program = _assert_matches_eager(ChainOfUnsupported(), [torch.randn(2, 6)])
    computed = _computed(program)
    assert len(computed) == 1 and not any("cumsum" in name for name in computed)
    assert set(program.params) == set(computed)


class Float64Inside(nn.Module):
    """A constant computed in float64 (no dnnc dtype) and cast: the cast is computed too."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        table = torch.special.digamma(torch.arange(1, 5, dtype=torch.float64)).float()
        return x * table


def test_a_constant_of_an_unsupported_dtype_is_computed_with_its_users() -> None:
    program = _assert_matches_eager(Float64Inside(), [torch.randn(4)])
    assert [t.dtype for t in _computed(program).values()] == [torch.float32]


class SortedBuffer(nn.Module):
    """A multi-result op on a buffer (sort: values and indices), both used (imported, or
    computed where no rule takes it)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("keys", torch.tensor([3.0, -1.0, 2.0, 0.5]))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values, order = torch.sort(self.keys)
        return x * values + order.float()


def test_outputs_of_a_computed_multi_result_op() -> None:
    _assert_matches_eager(SortedBuffer(), [torch.randn(3, 4)])


class InputDependent(nn.Module):
    """The same ops as constants (computed) and on the input (reported)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        positions = torch.cumsum(torch.ones(x.shape[-1], dtype=torch.int64), 0)
        table = torch.special.digamma(positions.float())
        return torch.cumsum(x, -1) * table + torch.special.digamma(x.abs() + 1)


def test_input_dependent_ops_are_still_reported(no_cumsum: None) -> None:
    with pytest.raises(UnsupportedOpError) as info:
        compile_program(InputDependent(), [torch.randn(2, 5)])
    assert [(p.op, p.count) for p in info.value.problems] == [  # type: ignore[attr-defined]
        ("aten.cumsum.default", 1),
        ("aten.digamma.default", 1),
    ]
    found = survey(export(InputDependent(), [torch.randn(2, 5)]))
    assert found.computed == {"aten.digamma.default": 1}  # digamma(cumsum) computed at once
    assert found.ops["aten.cumsum.default"] == 2 and found.ops["aten.digamma.default"] == 2


class Draws(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.rand(x.shape)


def test_random_draws_are_not_constants() -> None:
    ep = export(Draws(), [torch.randn(3)])
    graph = ConstantGraph(ep)
    (draw,) = [n for n in ep.graph.nodes if n.op == "call_function" and "rand" in str(n.target)]
    assert not graph.is_constant(draw)
    with pytest.raises(ValueError, match="depends on the model's inputs"):
        graph.evaluate(draw)


def test_evaluation_computes_each_node_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ep = export(Tables(), [torch.randn(3, 6)])
    graph = ConstantGraph(ep)
    nodes = [n for n in ep.graph.nodes if n.op == "call_function" and graph.is_constant(n)]
    calls: list[object] = []
    for n in nodes:
        target = n.target
        monkeypatch.setattr(n, "target", lambda *a, _t=target, **k: calls.append(_t) or _t(*a, **k))
    for n in nodes:
        graph.evaluate(n)
        graph.evaluate(n)
    assert len(calls) == len(nodes)


def test_a_rule_that_refuses_halfway_leaves_nothing_behind() -> None:
    from xdsl.ir import Block

    from dnnc.frontend.emitter import Emitter, OpRefused
    from dnnc.ir.params import ParamStore
    from dnnc.ir.types import tensor_type

    f32 = tensor_type((2,), torch.float32)
    block = Block(arg_types=[f32])
    em = Emitter(block, ParamStore())
    kept = em.param("w", torch.ones(2))
    checkpoint = em.checkpoint()
    with pytest.raises(OpRefused, match="halfway"):
        em.param("v", torch.zeros(2))
        em.constant(0.5, (2,), f32.element_type)
        em.kernels["k"] = object()
        em.unsupported("halfway")
    em.rollback(checkpoint)
    assert list(block.ops) == [kept.owner] and list(em.params) == ["w"] and not em.kernels
    assert em.param("v", torch.zeros(2)).owner in block.ops  # built again on demand
