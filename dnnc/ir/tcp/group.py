"""``tcp.isolated_group``: a region that a backend takes whole.

The region sees nothing from outside but its captures (its block arguments), so a
group can be priced, compiled and cached on its own text. Grouping passes create
them; the reference backend runs their body like any other code.
"""

from __future__ import annotations

from xdsl.dialects.builtin import TensorType
from xdsl.ir import Block, Region, SSAValue
from xdsl.irdl import (
    irdl_op_definition,
    region_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import HasParent, IsolatedFromAbove, IsTerminator, Pure, RecursiveMemoryEffect

from dnnc.ir.tcp.base import TcpOp, fail


@irdl_op_definition
class IsolatedGroupOp(TcpOp):
    """Runs its single block with the captures bound to the block arguments and
    returns what its ``tcp.yield`` yields."""

    name = "tcp.isolated_group"
    captures = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    body = region_def("single_block")
    traits = traits_def(IsolatedFromAbove(), RecursiveMemoryEffect())
    assembly_format = "`(` $captures `)` attr-dict `:` functional-type($captures, $outputs) $body"

    def __init__(self, captures: list[SSAValue], result_types: list[TensorType], body: Block):
        super().__init__(operands=[captures], result_types=[result_types], regions=[Region(body)])

    def verify_(self) -> None:
        block = self.body.block
        arg_types = [a.type for a in block.args]
        if arg_types != [c.type for c in self.captures]:
            raise fail(self.name, "block arguments must match the captures one to one")
        last = block.last_op
        if not isinstance(last, YieldOp):
            raise fail(self.name, "body must end with tcp.yield")
        if [v.type for v in last.values] != [r.type for r in self.outputs]:
            raise fail(self.name, "tcp.yield types must match the group's result types")


@irdl_op_definition
class YieldOp(TcpOp):
    """Ends a ``tcp.isolated_group`` body with the group's results."""

    name = "tcp.yield"
    values = var_operand_def(TensorType)
    traits = traits_def(IsTerminator(), HasParent(IsolatedGroupOp), Pure())
    assembly_format = "($values^ `:` type($values))? attr-dict"

    def __init__(self, values: list[SSAValue]):
        super().__init__(operands=[values])


GROUP_OPS = (IsolatedGroupOp, YieldOp)
