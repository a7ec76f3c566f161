"""Which tensors of a product kernel move through Hopper's tensor memory accelerator.

A product whose operands are plain row-major matrices in memory (a 1x1 convolution
reading a channels-last tensor: rows are pixels, columns channels; a matmul of two
matrices, either one transposed) can load its operand tiles with TMA: one instruction
per tile instead of an address per element, into the swizzled shared-memory layout the
tensor cores read, with out-of-range rows and columns filled with zeros. Its epilogue
reads a residual of the output's shape the same way and stores the output tile through
TMA too. On an H200 that took the 1x1 convolution + bias + residual + ReLU of
ResNet-50's stages 2-4 at batch 128 from 91 / 57 / 42 us (the best pointer tiles) to
82 / 49 / 37 us (``bench/gemm_tile_probe.py``, ``bench/results/gemm-tma-2026-11-27-h200.json``).

The kernel takes a ``tensordesc`` parameter per such tensor (``skeleton.TileDescriptor``), which
Triton's launcher encodes from a ``TensorDescriptor`` the launch builds over the
tensor (``launch.TritonKernel``). TMA needs 16-byte-aligned rows and base addresses:
shapes that have no such rows get pointer tiles here, and a launch on an unaligned base
runs the pointer kernel of the same config (``KernelSource.fallback``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from xdsl.ir import BlockArgument, Operation, SSAValue

from dnnc.backends.triton.skeleton import gathers
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW, is_pixelwise_conv, is_ungrouped_conv
from dnnc.ir.attrs import ints
from dnnc.ir.types import element_name, element_of, shape_of, torch_dtype

TMA_CAPABILITY = 90
"""The first compute capability with a tensor memory accelerator (Hopper)."""

OPERAND_TYPES = ("f16", "bf16")
"""Operand types of TMA products: float32 products multiply exactly (no TF32) in
pointer kernels, and tensor descriptors would round them to TF32."""

DESCRIPTOR_TYPES = {"f16": "fp16", "bf16": "bf16"}

EPILOGUE_TILES = 2
"""Output-shaped tensors an epilogue moves through TMA (a residual and the output): each
takes a ``BLOCK_M x BLOCK_N`` buffer of shared memory beside the operands' pipeline
(96 KiB at 128 x 128 x 64 in three stages), so more would outgrow Hopper's 227 KiB;
further ones are read and stored through pointers."""


@dataclass(frozen=True)
class Operand:
    """A product operand read as a row-major matrix from a block argument."""

    arg: BlockArgument
    shape: tuple[int, int]
    k_inner: bool
    """Whether K runs along the matrix's columns (an ``M x K`` left operand, an ``N x K``
    right one): the tile is loaded that way and transposed in registers otherwise."""


def _rows_fit(shape: tuple[int, int], v: SSAValue) -> bool:
    """TMA reads rows whose byte length is a multiple of 16."""
    return (shape[1] * torch_dtype(element_of(v)).itemsize) % 16 == 0 and min(shape) > 0


def _own_arg(v: SSAValue, group: tcp.IsolatedGroupOp) -> BlockArgument | None:
    return v if isinstance(v, BlockArgument) and v.owner is group.body.block else None


def transposed_arg(v: SSAValue, perm: tuple[int, ...], group: tcp.IsolatedGroupOp) -> BlockArgument | None:
    """The block argument ``v`` is, transposed by ``perm`` in ``group``, or None."""
    op = v.owner
    if isinstance(op, tcp.TransposeOp) and op.parent_block() is group.body.block and tuple(ints(op.permutation)) == perm:
        return _own_arg(op.input, group)
    return None


def _matrix(v: SSAValue, group: tcp.IsolatedGroupOp, k_last: bool) -> Operand | None:
    """A matmul operand: a 2-D block argument, or one transposed in the group."""
    arg = _own_arg(v, group)
    if arg is not None:
        rows, cols = shape_of(arg)
        return Operand(arg, (rows, cols), k_last)
    arg = transposed_arg(v, (1, 0), group)
    if arg is not None:
        rows, cols = shape_of(arg)
        return Operand(arg, (rows, cols), not k_last)
    return None


def _conv_input(op: tcp.Conv2dOp, group: tcp.IsolatedGroupOp) -> Operand | None:
    """The input of a 1x1 convolution as pixels x channels: a channels-last tensor brought
    back to NCHW in the kernel, or an NCHW tensor of one pixel per image."""
    nb, c, h, w = shape_of(op.input)
    arg = transposed_arg(op.input, TO_NCHW, group)
    if arg is None and h * w == 1:
        arg = _own_arg(op.input, group)
    return None if arg is None else Operand(arg, (nb * h * w, c), True)


def operands(anchor: Operation | None, group: tcp.IsolatedGroupOp) -> tuple[Operand, Operand] | None:
    """The product's operands as TMA matrices (left ``M x K``-ish, right ``K x N``-ish),
    or None where either is not one: a 1x1 ungrouped convolution or a 2-D matmul of
    float16 / bfloat16 block arguments, transposed or not, with rows TMA can read, in a
    group that gathers nothing (a gathering kernel's index flag is its last parameter)."""
    if (
        anchor is None
        or gathers(group)
        or any(element_name(element_of(v)) not in OPERAND_TYPES for v in (*anchor.operands, anchor.results[0]))
    ):
        return None
    if isinstance(anchor, tcp.Conv2dOp):
        if not is_pixelwise_conv(anchor) or not is_ungrouped_conv(anchor):
            return None
        weight = _own_arg(anchor.weight, group)
        lhs = _conv_input(anchor, group)
        if weight is None or lhs is None:
            return None
        o, c, _, _ = shape_of(weight)
        rhs = Operand(weight, (o, c), True)
    elif isinstance(anchor, tcp.MatmulOp) and len(shape_of(anchor.lhs)) == 2:
        lhs = _matrix(anchor.lhs, group, k_last=True)
        rhs = _matrix(anchor.rhs, group, k_last=False)
        if lhs is None or rhs is None:
            return None
    else:
        return None
    if not (_rows_fit(lhs.shape, lhs.arg) and _rows_fit(rhs.shape, rhs.arg)):
        return None
    return lhs, rhs


def output_tile(anchor: Operation) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The shape and position names at which the epilogue's tile is a row-major
    ``BLOCK_M x BLOCK_N`` block of an output-shaped tensor: the convolution's result
    channels-last (rows are its pixels), a matmul's result itself."""
    if isinstance(anchor, tcp.Conv2dOp):
        nb, o, ho, wo = shape_of(anchor.results[0])
        return (nb, ho, wo, o), ("n_i", "ho_i", "wo_i", "o_i")
    m, n = shape_of(anchor.results[0])
    return (m, n), ("rm", "rn")


def tile_matrix(shape: tuple[int, ...], v: SSAValue) -> tuple[int, int] | None:
    """``shape`` (an output-shaped tensor) as the matrix its TMA descriptor covers, or None
    where TMA cannot read its rows or it is not a float16 / bfloat16 tensor (a float32 tile
    would double its buffer)."""
    if element_name(element_of(v)) not in DESCRIPTOR_TYPES:
        return None
    matrix = (math.prod(shape[:-1]), shape[-1])
    return matrix if _rows_fit(matrix, v) else None


def descriptor_type(v: SSAValue, block: tuple[int, int]) -> str:
    """The signature type of a descriptor over ``v``'s tensor with ``block`` tiles."""
    return f"tensordesc<{DESCRIPTOR_TYPES[element_name(element_of(v))]}[{block[0]}, {block[1]}]>"
