"""merge-sibling-products: products of the same rows by different stored weights run as
one product over the weights side by side; a slice hands each its columns.

An attention layer projects its input three times (query, key and value in BERT, T5,
Whisper, Llama and diffusers' attention) and a gated MLP twice (Llama's gate and up).
Three ``[M, K] x [K, N]`` products read the same rows three times and launch three
kernels of N columns each; one ``[M, K] x [K, 3N]`` product reads them once and launches
once, with three times the tiles to fill the GPU. On BERT's layer at 8 x 512 tokens the
three projections took 0.0108 ms each on an H200 (cuDNN), 0.032 ms together; merged, the
layer went from 0.1713 to 0.1688 ms (BENCHMARKS.md, "sibling products merged").

The rows must be the same value, or reshapes of one value to the same shape (each
``nn.Linear`` of a 3-D input reshapes it on its own). The weights are concatenated
once, here, into a new parameter. Where a product's one use is the add of a broadcast
stored bias, the biases are concatenated too (zeros for a product without one) and the
add moves above the slices, so it stays in the merged product's epilogue.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue

from dnnc.ir import tcp
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.params import ParamStore
from dnnc.ir.rewriting import ParamPass
from dnnc.ir.types import element_of, shape_of, tensor_type, torch_dtype


@dataclass(frozen=True)
class _Sibling:
    product: tcp.MatmulOp
    weight: tcp.ParamOp
    bias_add: tcp.AddOp | None
    bias: tcp.ParamOp | None
    """The stored ``[1, N]`` bias broadcast into ``bias_add``."""

    @property
    def columns(self) -> int:
        return shape_of(self.product.result)[1]


def _rows_key(v: SSAValue) -> tuple[SSAValue, tuple[int, ...]]:
    """What the rows of a product are: a reshape's input and shape, or the value itself."""
    owner = v.owner
    if isinstance(owner, tcp.ReshapeOp):
        return owner.input, shape_of(v)
    return v, shape_of(v)


def _bias_of(product: tcp.MatmulOp) -> tuple[tcp.AddOp, tcp.ParamOp] | None:
    """The add of a broadcast stored bias that is the product's only use, if it is."""
    uses = list(product.result.uses)
    if len(uses) != 1 or not isinstance(add := uses[0].operation, tcp.AddOp):
        return None
    other = add.rhs if add.lhs is product.result else add.lhs
    if other is product.result or not isinstance(other.owner, tcp.BroadcastOp):
        return None
    source = other.owner.input
    columns = shape_of(product.result)[1]
    if not isinstance(source.owner, tcp.ParamOp) or shape_of(source) != (1, columns):
        return None
    if element_of(source) != element_of(product.result):
        return None
    return add, source.owner


def _siblings(block: Block) -> list[list[_Sibling]]:
    """Products of one block by stored 2-D weights, grouped by their rows, in block order."""
    groups: dict[tuple, list[_Sibling]] = defaultdict(list)
    for op in block.ops:
        if not isinstance(op, tcp.MatmulOp) or not isinstance(op.rhs.owner, tcp.ParamOp):
            continue
        bias = _bias_of(op)
        sibling = _Sibling(op, op.rhs.owner, *(bias or (None, None)))
        groups[(*_rows_key(op.lhs), element_of(op.rhs))].append(sibling)
    return [g for g in groups.values() if len(g) > 1]


class _Merger:
    """Merges groups of siblings; the parameters side by side are stored once per
    sequence of sources, so layers that share their weights (ALBERT) share the merged
    ones too instead of each storing a copy."""

    def __init__(self, params: ParamStore):
        self.params = params
        self.stored: dict[tuple[str, ...], str] = {}

    def side_by_side(self, key: tuple[str, ...]) -> str:
        """The name of the values of the parameters named ``key`` concatenated along their columns."""
        if key not in self.stored:
            name = self.params.fresh_name(f"{key[0]}.merged")
            self.params.add(name, torch.cat([self.params[k] for k in key], dim=1).contiguous())
            self.stored[key] = name
        return self.stored[key]

    def zeros(self, sibling: _Sibling, element: Attribute) -> str:
        """A zero bias for a product without one among siblings with biases (Whisper's
        key projection), so the merged product adds every bias in its epilogue and each
        slice is its former product's value as it was: a bias added below a slice would be
        one more op in whatever reads the slice (an attention kernel's prologue, at every
        key block)."""
        name = f"{sibling.weight.param_name}.zero_bias"
        if name not in self.params:
            self.params.add(name, torch.zeros(1, sibling.columns, dtype=torch_dtype(element)))
        return name

    def merge(self, group: list[_Sibling]) -> None:
        first = group[0].product
        b = TcpBuilder.before(first)
        rows = first.lhs
        depth, width = shape_of(rows)[1], sum(s.columns for s in group)
        element = element_of(first.result)
        weights = tuple(s.weight.param_name for s in group)
        weight = b.emit(tcp.ParamOp(self.side_by_side(weights), tensor_type((depth, width), element_of(first.rhs))))
        merged = b.build(tcp.MatmulOp, [rows, weight])
        with_bias = any(s.bias is not None for s in group)
        if with_bias:
            biases = tuple(s.bias.param_name if s.bias is not None else self.zeros(s, element) for s in group)
            bias = b.emit(tcp.ParamOp(self.side_by_side(biases), tensor_type((1, width), element)))
            merged = b.build(tcp.AddOp, [merged, b.broadcast_to(bias, shape_of(merged))])
        start = 0
        for s in group:
            replaced: Operation = s.bias_add if s.bias_add is not None else s.product
            replaced.results[0].replace_all_uses_with(b.slice(merged, 1, start, start + s.columns))
            start += s.columns


@dataclass(frozen=True)
class MergeSiblingProducts(ParamPass):
    name = "merge-sibling-products"

    def apply_with_params(self, ctx: Context, op: ModuleOp, params: ParamStore) -> None:
        merger = _Merger(params)
        for fn in op.walk():
            if isinstance(fn, func.FuncOp):
                for group in _siblings(fn.body.block):
                    merger.merge(group)
