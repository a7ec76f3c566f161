"""A candidate group as a program of its own, to check and time it in isolation.

The values the group reads from other compute ops become the function's
arguments; the parameters and constants it reads come along (parameters keep
their stored values, renamed ``p0, p1, ...``), and the values used outside the
group are returned. The program's text without names is the group's identity
for the measurement cache: two blocks of a ResNet with the same shapes share it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region, SSAValue

from dnnc.ir import tcp
from dnnc.ir.analysis import (
    NCHW_INPUTS_ATTR,
    NCHW_OUTPUTS_ATTR,
    handed_channels_last,
    is_channelwise_conv,
    is_ungrouped_conv,
    taken_channels_last,
)
from dnnc.ir.attrs import i64_array
from dnnc.ir.params import ParamStore
from dnnc.ir.program import ENTRY, Program
from dnnc.ir.types import shape_of
from dnnc.ir.work import boundary_values


def extract(ops: Sequence[Operation], params: ParamStore) -> Program:
    """``ops`` in program order (top-level ops of one block)."""
    members = set(ops)
    _, writes = boundary_values(ops)
    inputs: list[SSAValue] = []
    sources: list[Operation] = []
    for op in ops:
        for v in op.operands:
            owner = v.owner
            if isinstance(owner, Operation) and owner in members:
                continue
            if isinstance(owner, tcp.SOURCE_OPS):
                if owner not in sources:
                    sources.append(owner)
            elif v not in inputs:
                inputs.append(v)
    block = Block(arg_types=[v.type for v in inputs])
    mapping: dict[SSAValue, SSAValue] = dict(zip(inputs, block.args))
    store = ParamStore()
    for source in sources:
        clone = source.clone()
        if isinstance(source, tcp.ParamOp):
            name = f"p{len(store)}"
            clone = tcp.ParamOp(name, source.result.type)
            store.add(name, params[source.param_name])
        block.add_op(clone)
        mapping[source.results[0]] = clone.results[0]
    for op in ops:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping.update(zip(op.results, clone.results))
    block.add_op(func.ReturnOp(*[mapping[v] for v in writes]))
    fn = func.FuncOp(ENTRY, ([v.type for v in inputs], [v.type for v in writes]), Region(block))
    nchw = _nchw_inputs(ops, inputs)
    if nchw:
        fn.attributes[NCHW_INPUTS_ATTR] = i64_array(nchw)
    nchw = _nchw_outputs(ops, writes)
    if nchw:
        fn.attributes[NCHW_OUTPUTS_ATTR] = i64_array(nchw)
    return Program(ModuleOp([fn]), store)


def _nchw_inputs(ops: Sequence[Operation], inputs: Sequence[SSAValue]) -> list[int]:
    """Where the group holds an ungrouped convolution: its 4-D inputs that the program
    hands it NCHW (``analysis.handed_channels_last``). Timed alone, a Triton convolution
    reads the others channels-last, as it will beside cuDNN's convolutions; these it reads
    as its real producer (a group norm, say) stores them. Part of the group's text, so a
    convolution after a norm and the same one after a convolution are timed apart."""
    if not any(is_ungrouped_conv(op) for op in ops):
        return []
    return [i for i, v in enumerate(inputs) if len(shape_of(v)) == 4 and not handed_channels_last(v)]


def _nchw_outputs(ops: Sequence[Operation], writes: Sequence[SSAValue]) -> list[int]:
    """Where the group holds a depthwise convolution: its 4-D results that the program's
    readers take NCHW (``analysis.taken_channels_last``). Timed alone, such a group stores
    them NCHW as it will in the program; stored channels-last instead it was timed faster
    than it ran (EfficientNet-B0 at batch 32, when its squeeze-excite blocks still read
    NCHW: its depthwise convolutions chosen on Triton and the program 4% slower, H200)."""
    if not any(is_channelwise_conv(op) for op in ops):
        return []
    return [i for i, v in enumerate(writes) if len(shape_of(v)) == 4 and not taken_channels_last(v)]


def identity_text(program: Program) -> str:
    """The program's text (parameters are already numbered in order of use)."""
    return program.text()
