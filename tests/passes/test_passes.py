"""Pass infrastructure and semantic preservation: simplify-shapes keeps the values
of random reshape/transpose/broadcast/slice chains exactly; fold-params keeps
program results; the pipeline names a pass that breaks the IR."""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue
from xdsl.passes import ModulePass

from dnnc.backends.reference import ReferenceExecutor
from dnnc.errors import PassError
from dnnc.ir import tcp
from dnnc.ir.attrs import i64_array
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir, print_ir
from dnnc.ir.types import shape_of, tensor_type
from dnnc.passes import PASSES, parse_passes
from dnnc.pipeline import run_passes


def _factor(n: int, draw) -> list[int]:
    """A random factorization of n into up to 4 factors (with some 1s)."""
    dims = []
    while n > 1 and len(dims) < 3:
        divisors = [d for d in range(2, n + 1) if n % d == 0]
        d = draw(st.sampled_from(divisors))
        dims.append(d)
        n //= d
    dims.append(n)
    if draw(st.booleans()):
        dims.insert(draw(st.integers(0, len(dims))), 1)
    return dims


@st.composite
def shape_chains(draw) -> tuple[list[int], list[tuple[str, object]]]:
    """A start shape and a list of shape ops to apply to it."""
    start = [draw(st.sampled_from([1, 2, 3, 4])) for _ in range(draw(st.integers(1, 4)))]
    steps: list[tuple[str, object]] = []
    shape = list(start)
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["reshape", "transpose", "broadcast", "slice", "same"]))
        if kind == "reshape":
            shape = _factor(prod(shape), draw)
            steps.append(("reshape", list(shape)))
        elif kind == "transpose":
            perm = draw(st.permutations(range(len(shape))))
            shape = [shape[p] for p in perm]
            steps.append(("transpose", list(perm)))
        elif kind == "broadcast":
            shape = [draw(st.sampled_from([1, 2, 3])) if d == 1 else d for d in shape]
            steps.append(("broadcast", list(shape)))
        elif kind == "slice":
            axis = draw(st.integers(0, len(shape) - 1))
            begin = draw(st.integers(0, shape[axis] - 1))
            steps.append(("slice", (axis, begin)))
            shape[axis] -= begin
        else:
            steps.append(("same", None))
    return start, steps


def build_chain(start: list[int], steps: list[tuple[str, object]]) -> Program:
    block = Block(arg_types=[tensor_type(start, f32)])
    b = TcpBuilder.at_end(block)
    v: SSAValue = block.args[0]
    for kind, arg in steps:
        if kind == "reshape":
            v = b.typed(tcp.ReshapeOp, [v], tensor_type(arg, f32))
        elif kind == "transpose":
            v = b.emit(tcp.TransposeOp.make([v], {"permutation": i64_array(arg)}))
        elif kind == "broadcast":
            v = b.typed(tcp.BroadcastOp, [v], tensor_type(arg, f32))
        elif kind == "slice":
            axis, begin = arg
            shape = shape_of(v)
            starts = [begin if i == axis else 0 for i in range(len(shape))]
            props = {"starts": i64_array(starts), "limits": i64_array(shape), "strides": i64_array([1] * len(shape))}
            v = b.emit(tcp.SliceOp.make([v], props))
        else:
            v = b.typed(tcp.ReshapeOp, [v], v.type)
    block.add_op(func.ReturnOp(v))
    fn = func.FuncOp("forward", ([block.args[0].type], [v.type]), Region(block))
    return Program(ModuleOp([fn]), ParamStore())


@settings(max_examples=150, deadline=None)
@given(shape_chains(), st.integers(0, 2**31 - 1))
def test_simplify_shapes_preserves_values(chain, seed) -> None:
    start, steps = chain
    program = build_chain(start, steps)
    x = torch.randn(start, generator=torch.Generator().manual_seed(seed))
    before = ReferenceExecutor(program).run([x])[0]
    run_passes(program, parse_passes("simplify-shapes,dce"))
    after = ReferenceExecutor(program).run([x])[0]
    assert torch.equal(before, after)
    # the text still round-trips after rewriting
    assert print_ir(parse_ir(program.text())) == program.text()


def test_fold_params_keeps_results_and_drops_unused_parameters(rng) -> None:
    text = """func.func @forward(%x: tensor<3x4xf32>) -> tensor<3x2xf32> {
      %w = tcp.param @w : tensor<2x4xf32>
      %s = tcp.param @s : tensor<2xf32>
      %t = tcp.transpose %w {permutation = array<i64: 1, 0>} : tensor<2x4xf32> -> tensor<4x2xf32>
      %r = tcp.reshape %s : tensor<2xf32> to tensor<1x2xf32>
      %e = tcp.exp %r : tensor<1x2xf32>
      %b = tcp.broadcast %e : tensor<1x2xf32> to tensor<4x2xf32>
      %ws = tcp.mul %t, %b : tensor<4x2xf32>
      %y = tcp.matmul %x, %ws : (tensor<3x4xf32>, tensor<4x2xf32>) -> tensor<3x2xf32>
      func.return %y : tensor<3x2xf32>
    }"""
    params = ParamStore({"w": torch.randn(2, 4, generator=rng), "s": torch.randn(2, generator=rng)})
    program = Program(parse_ir(text), params)
    x = torch.randn(3, 4, generator=rng)
    before = ReferenceExecutor(program).run([x])[0]
    run_passes(program, parse_passes("fold-params,dce"))
    assert sorted(program.params) == ["w.folded"]
    assert [op.name for op in program.entry.body.walk()][:3] == ["tcp.param", "tcp.matmul", "func.return"]
    after = ReferenceExecutor(program).run([x])[0]
    torch.testing.assert_close(after, before, rtol=1e-6, atol=1e-6)


def test_param_pass_needs_parameters() -> None:
    (fold,) = parse_passes("fold-params")
    with pytest.raises(PassError, match="fold-params needs parameter values"):
        fold.apply(Context(), ModuleOp([]))


@dataclass(frozen=True)
class BreakTypes(ModulePass):
    """A deliberately wrong pass: gives a result the wrong type."""

    name = "break-types"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for inner in op.walk():
            if isinstance(inner, tcp.ExpOp):
                inner.result._type = TensorType(f32, [99])


def test_pipeline_names_the_pass_that_broke_the_ir() -> None:
    program = Program(
        parse_ir(
            "func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %e = tcp.exp %x : tensor<4xf32>\n  func.return %e : tensor<4xf32>\n}"
        ),
        ParamStore(),
    )
    with pytest.raises(PassError, match="pass break-types produced invalid IR"):
        run_passes(program, [BreakTypes()], verify_each=True)


@pytest.mark.parametrize(
    "spec,message",
    [
        ("no-such-pass", "unknown pass 'no-such-pass'; known passes: .*dce"),
        ("dce{x=1}", "bad options for pass 'dce'"),
        ("dce{", "cannot parse pass pipeline"),
    ],
)
def test_pass_pipeline_errors(spec: str, message: str) -> None:
    with pytest.raises(PassError, match=message.replace("{", r"\{")):
        parse_passes(spec)


def test_registry_names_every_pass() -> None:
    expected = {"fold-batchnorm", "simplify-shapes", "fold-params", "dce", "cudnn-group", "assign-layouts", "lower-cudnn"}
    assert expected <= set(PASSES)
    assert all(PASSES[name].name == name for name in PASSES)


def test_fold_params_rejects_a_nonpositive_growth_limit() -> None:
    program = Program(parse_ir("func.func @forward() {\n  func.return\n}\n"), ParamStore())
    with pytest.raises(PassError, match="max-growth must be positive, got 0.0"):
        run_passes(program, parse_passes("fold-params{max-growth=0.0}"))
