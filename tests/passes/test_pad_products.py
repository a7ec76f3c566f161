"""pad-product-columns keeps every value (the reference backend before and after, fresh
random inputs and weights, each dtype's tolerance); a slice left feeding only the
results is a view nothing generates a kernel for; the copy a caller gets of such a view
keeps its strides and owns its storage."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.ir import tcp
from dnnc.ir.analysis import is_output_view
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.passes import parse_passes
from dnnc.passes.pad_products import padded_width
from dnnc.pipeline import run_passes
from dnnc.runtime.outputs import owned_copy, storage_span
from tests.numerics import assert_matches

DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}

PROGRAMS = {
    "vocabulary": (
        """func.func @forward(%x: tensor<64x48xT>) -> tensor<4x16x4099xT> {
  %w = tcp.param @lm_head : tensor<48x4099xT>
  %y = tcp.matmul %x, %w : (tensor<64x48xT>, tensor<48x4099xT>) -> tensor<64x4099xT>
  %r = tcp.reshape %y : tensor<64x4099xT> to tensor<4x16x4099xT>
  func.return %r : tensor<4x16x4099xT>
}""",
        {"lm_head": (48, 4099)},
    ),
    "epilogue": (
        """func.func @forward(%x: tensor<64x48xT>) -> (tensor<64xT>, tensor<64x101xT>) {
  %w = tcp.param @fc.weight : tensor<48x101xT>
  %b = tcp.param @fc.bias : tensor<1x101xT>
  %y = tcp.matmul %x, %w : (tensor<64x48xT>, tensor<48x101xT>) -> tensor<64x101xT>
  %bb = tcp.broadcast %b : tensor<1x101xT> to tensor<64x101xT>
  %z = tcp.add %y, %bb : tensor<64x101xT>
  %g = tcp.gelu %z {approximate = "tanh"} : tensor<64x101xT>
  %half = tcp.constant {value = 5.000000e-01 : f64} : tensor<64x101xT>
  %m = tcp.mul %g, %half : tensor<64x101xT>
  %e = tcp.exp %m : tensor<64x101xT>
  %r = tcp.reduce_sum %e {axes = array<i64: 1>, keepdim = false} : tensor<64x101xT> -> tensor<64xT>
  func.return %r, %m : tensor<64xT>, tensor<64x101xT>
}""",
        {"fc.weight": (48, 101), "fc.bias": (1, 101)},
    ),
    "batched_shared_weight": (
        """func.func @forward(%x: tensor<3x32x40xT>, %c: tensor<3x32x1xT>) -> (tensor<3x32x77xT>, tensor<3x32x77xT>) {
  %w = tcp.param @w : tensor<3x40x77xT>
  %y = tcp.batch_matmul %x, %w : (tensor<3x32x40xT>, tensor<3x40x77xT>) -> tensor<3x32x77xT>
  %cc = tcp.broadcast %c : tensor<3x32x1xT> to tensor<3x32x77xT>
  %d = tcp.div %y, %cc : tensor<3x32x77xT>
  %y2 = tcp.batch_matmul %x, %w : (tensor<3x32x40xT>, tensor<3x40x77xT>) -> tensor<3x32x77xT>
  %t = tcp.tanh %y2 : tensor<3x32x77xT>
  func.return %d, %t : tensor<3x32x77xT>, tensor<3x32x77xT>
}""",
        {"w": (3, 40, 77)},
    ),
}


@pytest.fixture(autouse=True)
def _small_products(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dnnc.passes.pad_products.MIN_MACS", 0)


def _program(name: str, dtype: str, rng: torch.Generator) -> Program:
    text, shapes = PROGRAMS[name]
    params = ParamStore({p: (torch.randn(*s, generator=rng) / 4).to(DTYPES[dtype]) for p, s in shapes.items()})
    return Program(parse_ir(text.replace("xT>", f"x{dtype}>"), name), params)


def _inputs(program: Program, dtype: str, rng: torch.Generator) -> list[torch.Tensor]:
    args = program.entry.body.block.args
    return [torch.rand(*a.type.get_shape(), generator=rng).add(0.5).to(DTYPES[dtype]) for a in args]


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_padded_products_keep_their_values(name: str, dtype: str, rng: torch.Generator) -> None:
    program = _program(name, dtype, rng)
    inputs = _inputs(program, dtype, rng)
    expected = ReferenceExecutor(program).run(inputs)
    run_passes(program, parse_passes("pad-product-columns,dce"))
    slices = [op for op in program.entry.body.walk() if isinstance(op, tcp.SliceOp)]
    assert slices, program.text()
    actual = ReferenceExecutor(program).run(inputs)
    for a, e in zip(actual, expected, strict=True):
        assert a.shape == e.shape and a.dtype == e.dtype
        assert_matches(a, e, DTYPES[dtype], what=f"{name} {dtype}")


def test_a_shared_weight_is_padded_once(rng: torch.Generator) -> None:
    program = _program("batched_shared_weight", "f32", rng)
    run_passes(program, parse_passes("pad-product-columns,dce"))
    names = {op.param_name for op in program.param_ops()}
    assert names == {"w.padded"}, program.text()
    assert tuple(program.params["w.padded"].shape) == (3, 40, 80)
    assert torch.equal(program.params["w.padded"][..., 77:], torch.zeros(3, 40, 3))


@pytest.mark.parametrize(
    ("columns", "itemsize", "width"),
    [(50257, 2, 50304), (30522, 2, 30528), (1001, 2, 1008), (1001, 4, 1004), (1001, 1, 1008), (1000, 2, None), (4099, 4, 4160)],
)
def test_padded_width(columns: int, itemsize: int, width: int | None) -> None:
    assert padded_width(columns, itemsize) == width


def test_only_a_returned_slice_of_most_of_its_input_is_an_output_view(rng: torch.Generator) -> None:
    program = _program("vocabulary", "f16", rng)
    run_passes(program, parse_passes("pad-product-columns,dce,triton-fuse,dce"))
    (cut,) = [op for op in program.entry.body.block.ops if isinstance(op, tcp.SliceOp)]  # not inside a Triton group
    assert is_output_view(cut)
    epilogue = _program("epilogue", "f16", rng)
    run_passes(epilogue, parse_passes("pad-product-columns,dce"))
    assert not any(is_output_view(op) for op in epilogue.entry.body.walk())  # read by the reduction too


def test_an_owned_copy_keeps_a_views_strides_in_storage_of_its_own() -> None:
    padded = torch.randn(4, 16, 80)
    view = padded[..., :77]
    copy = owned_copy(view)
    assert torch.equal(copy, view) and copy.stride() == view.stride()
    assert copy.untyped_storage().data_ptr() != padded.untyped_storage().data_ptr()
    assert copy.untyped_storage().nbytes() == storage_span(view) * view.element_size()
    padded.zero_()
    assert not torch.equal(copy, view)
    sparse = padded[:, :, :8]  # a tenth of its span: copied densely
    assert owned_copy(sparse).is_contiguous()
    dense = torch.randn(3, 5).t()
    assert owned_copy(dense).stride() == dense.stride()
