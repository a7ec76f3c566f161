"""pad-product-columns: a large product with a stored right operand whose rows are not
16-byte aligned computes on a zero-padded copy of that operand, and is cut back after.

A product ``[M, K] x [K, N]`` writes rows of N elements. Where ``N * itemsize`` is not a
multiple of 16 bytes, no row after the first starts aligned, and every GPU kernel loses:
GPT-2's vocabulary projection (1024 x 768 x 50257, float16) took 0.622 ms in cuDNN's
best plan, 0.368 ms as a generated kernel and 0.853 ms in cuBLAS on an H200, against
0.123 ms in cuDNN with N padded to 50304 (``BENCHMARKS.md``). The operand is a parameter,
so its padded copy is stored once; the product computes the ``N' - N`` extra columns
(0.1% here), and a slice of the first N columns takes its place.

The slice moves down the chain of ops that treat columns alike: reshapes that keep the
last dimension, one-operand elementwise ops, and two-operand ones whose other operand is
a parameter or constant (padded too) or a broadcast along the rows. So a bias, an
activation or a residual of constants stays in the product's epilogue. Where the slice
ends up feeding only the program's results, the executor hands out a view
(``ir.analysis.is_output_view``) and the copy every output gets makes it the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from dnnc.ir import tcp
from dnnc.ir.attrs import i64_array
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass, retyped
from dnnc.ir.types import element_of, is_float, shape_of, tensor_type, torch_dtype

ALIGN_BYTES = 16
"""The row alignment vectorized loads and stores and tensor-core copies need."""
MIN_MACS = 1 << 30
"""Products smaller than this keep their shape: a slice may cost a copy, and the time an
unaligned row loses in a small product is a few microseconds at most."""
WIDE = 4096
"""From this many columns, pad to a multiple of ``WIDE_MULTIPLE`` (under 1.6% more
columns): cuDNN's plans for 50304 columns ran 7% faster than for 50264 (H200)."""
WIDE_MULTIPLE = 64


def padded_width(columns: int, itemsize: int) -> int | None:
    """The width a product of ``columns`` columns is computed at, or None if aligned."""
    multiple = max(1, ALIGN_BYTES // itemsize)
    if columns % multiple == 0:
        return None
    if columns >= WIDE:
        multiple = max(multiple, WIDE_MULTIPLE)
    return -(-columns // multiple) * multiple


class _Padder:
    """Rewrites one product and the chain below it; padded parameters are shared."""

    def __init__(self, params: ParamStore):
        self.params = params
        self.padded_params: dict[tuple[str, int], str] = {}

    def padded_param(self, param: tcp.ParamOp, width: int, before: Operation) -> SSAValue:
        """``param`` with zero columns appended up to ``width`` (stored once per width)."""
        key = (param.param_name, width)
        if key not in self.padded_params:
            value = self.params[param.param_name]
            grown = torch.nn.functional.pad(value, (0, width - value.shape[-1]))
            name = self.params.fresh_name(f"{param.param_name}.padded")
            self.params.add(name, grown.contiguous())
            self.padded_params[key] = name
        shape = (*shape_of(param.result)[:-1], width)
        new = tcp.ParamOp(self.padded_params[key], tensor_type(shape, element_of(param.result)))
        return TcpBuilder.before(before).emit(new)

    def padded_operand(self, value: SSAValue, columns: int, width: int, before: Operation) -> SSAValue | None:
        """``value`` (of ``columns`` columns) at ``width`` columns, or None where that
        would cost run-time work."""
        b = TcpBuilder.before(before)
        shape = (*shape_of(value)[:-1], width)
        owner = value.owner
        if isinstance(owner, tcp.ParamOp) and shape_of(value)[-1] == columns:
            return self.padded_param(owner, width, before)
        if isinstance(owner, tcp.ConstantOp):
            return b.emit(tcp.ConstantOp(owner.value, tensor_type(shape, element_of(value))))
        if isinstance(owner, tcp.BroadcastOp):
            source = owner.input
            if shape_of(source)[-1] == 1:
                return b.broadcast_to(source, shape)
            if isinstance(source.owner, tcp.ParamOp):
                return b.broadcast_to(self.padded_param(source.owner, width, before), shape)
        return None

    def rewrite(self, product: tcp.MatmulOp | tcp.BatchMatmulOp, width: int) -> None:
        assert isinstance(product.rhs.owner, tcp.ParamOp)
        columns = shape_of(product.result)[-1]
        weight = self.padded_param(product.rhs.owner, width, product)
        padded = TcpBuilder.before(product).build(type(product), [product.lhs, weight])
        current: SSAValue = product.result
        while (user := _only_user(current)) is not None:
            moved = self._below(user, current, padded, columns, width)
            if moved is None:
                break
            current, padded = user.results[0], moved
        assert isinstance(current.owner, Operation)  # a product's result, or a result of the chain below it
        shape = shape_of(current)
        cut = TcpBuilder.before(current.owner).build(
            tcp.SliceOp,
            [padded],
            starts=i64_array([0] * len(shape)),
            limits=i64_array(shape),
            strides=i64_array([1] * len(shape)),
        )
        current.replace_all_uses_with(cut)

    def _below(self, user: Operation, current: SSAValue, padded: SSAValue, columns: int, width: int) -> SSAValue | None:
        """``user`` computed on the padded value (inserted before it), or None where the
        slice stops here."""
        result = user.results[0]
        shape = (*shape_of(result)[:-1], width)
        b = TcpBuilder.before(user)
        if isinstance(user, tcp.ReshapeOp):
            if shape_of(result)[-1] != columns:
                return None
            return b.reshape(padded, shape)
        if isinstance(user, (*tcp.UNARY_OPS, tcp.CastOp)):
            return b.emit(retyped(user, [padded], shape))
        if isinstance(user, tcp.BINARY_OPS):
            operands = []
            for v in user.operands:
                grown = padded if v is current else self.padded_operand(v, columns, width, user)
                if grown is None:
                    return None
                operands.append(grown)
            return b.emit(retyped(user, operands, shape))
        return None


def _only_user(value: SSAValue) -> Operation | None:
    users = {use.operation for use in value.uses}
    if len(users) != 1:
        return None
    (user,) = users
    return user if len(user.results) == 1 else None


def _width_for(op: Operation) -> int | None:
    """The padded width ``op``'s product is computed at, or None to leave it."""
    if not isinstance(op, tcp.MatmulOp | tcp.BatchMatmulOp) or not isinstance(op.rhs.owner, tcp.ParamOp):
        return None
    element = element_of(op.result)
    if not is_float(element):
        return None
    *batch, m, k = shape_of(op.lhs)
    columns = shape_of(op.result)[-1]
    if prod(batch) * m * k * columns < MIN_MACS:
        return None
    return padded_width(columns, torch_dtype(element).itemsize)


@dataclass(frozen=True)
class PadProductColumns(ParamPass):
    name = "pad-product-columns"

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        padder = _Padder(params)
        for product in list(op.walk()):
            width = _width_for(product)
            if width is not None:
                padder.rewrite(product, width)  # type: ignore[arg-type]
