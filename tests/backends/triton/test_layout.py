"""Which axis a kernel's loads run along, through reshapes that merge or split axes
(``layout``): it picks tiled transposes and row kernels' positions, never values."""

from __future__ import annotations

import pytest

from dnnc.backends.triton.layout import _reshape_axes, tile_axes
from dnnc.ir import tcp
from dnnc.ir.text import parse_ir


@pytest.mark.parametrize(
    ("src", "dst", "axes", "expected"),
    [
        ((2, 3, 4), (2, 3, 4), (5, 6, 7), (5, 6, 7)),
        # the positions of a group split into rows and columns, the group's channels merged
        ((8, 32, 2, 4096), (8, 64, 64, 64), (0, 3, 1, 2), (0, None, 3, 2)),
        # channels split into groups: the innermost of the split moves with them
        ((8, 64, 64, 64), (8, 32, 2, 4096), (0, 1, 2, 3), (0, 2, None, 3)),
        ((1, 5, 1, 7), (5, 7, 1), (0, 1, 2), (None, 0, None, 1)),
        # one run of equal size: the innermost axes of both sides run together
        ((6, 4), (4, 6), (0, 1), (None, 1)),
        ((4, 6), (3, 8), (0, 1), (None, 1)),
    ],
)
def test_reshape_axes_match_runs_from_the_right(src, dst, axes, expected) -> None:
    assert _reshape_axes(src, dst, axes) == expected


def _outputs(ir: str):
    (func,) = parse_ir(ir, "layout").ops
    block = func.body.block
    return [op for op in block.ops if isinstance(op, tcp.TransposeOp)][-1].results


def test_a_grouped_result_copied_to_channels_last_is_tiled_along_positions_and_channels() -> None:
    ir = """func.func @f(%x: tensor<8x32x2x4096xf16>) -> tensor<8x64x64x64xf16> {
  %r = tcp.reshape %x : tensor<8x32x2x4096xf16> to tensor<8x64x64x64xf16>
  %t = tcp.transpose %r {permutation = array<i64: 0, 2, 3, 1>} : tensor<8x64x64x64xf16> -> tensor<8x64x64x64xf16>
  func.return %t : tensor<8x64x64x64xf16>
}"""
    outputs = _outputs(ir)
    assert tile_axes(outputs, lambda op: isinstance(op, (tcp.ReshapeOp, tcp.TransposeOp))) == (2, 3)
