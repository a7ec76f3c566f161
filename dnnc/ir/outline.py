"""Move a set of top-level ops into a ``tcp.isolated_group`` (and back out of one),
and change what an existing group captures.

Every value the ops read from outside becomes a capture (a block argument);
the chosen output values are yielded and replace their uses outside. The group
is inserted where the last member was, so every capture is already defined.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.ir import tcp
from dnnc.ir.attrs import i64_array


def outline(
    members: Sequence[Operation], outputs: Sequence[SSAValue], attrs: Mapping[str, str | Attribute]
) -> tcp.IsolatedGroupOp:
    """``members`` in program order; clones of ops that must stay outside too
    (used elsewhere) are allowed: a member is erased only when nothing outside uses it."""
    inside = set(members)
    captures: list[SSAValue] = []
    for op in members:
        for v in op.operands:
            if v.owner not in inside and v not in captures:
                captures.append(v)
    block = Block(arg_types=[v.type for v in captures])
    mapping: dict[SSAValue, SSAValue] = dict(zip(captures, block.args))
    for outer, arg in zip(captures, block.args):
        arg.name_hint = outer.name_hint
    for op in members:
        clone = op.clone(value_mapper=mapping)
        block.add_op(clone)
        mapping.update(zip(op.results, clone.results))
    block.add_op(tcp.YieldOp([mapping[v] for v in outputs]))
    group = tcp.IsolatedGroupOp(captures, [TensorType(v.type.element_type, v.type.get_shape()) for v in outputs], block)  # type: ignore[attr-defined]
    for key, value in attrs.items():
        group.attributes[key] = StringAttr(value) if isinstance(value, str) else value
    Rewriter.insert_op(group, InsertPoint.after(members[-1]))
    for v, r in zip(outputs, group.outputs):
        r.name_hint = v.name_hint
        v.replace_all_uses_with(r)
    for op in reversed(members):
        if all(not r.uses for r in op.results):
            op.detach()
            op.erase()
    return group


def inline(group: tcp.IsolatedGroupOp) -> None:
    """Put the group's ops back where the group stands, reading its captures, and
    give its users the values it yielded: the inverse of ``outline``."""
    block = group.body.block
    yielded = block.last_op
    assert isinstance(yielded, tcp.YieldOp)
    values = list(yielded.values)
    for arg, capture in zip(block.args, group.captures):
        arg.replace_all_uses_with(capture)
    yielded.detach()
    yielded.erase()
    for op in list(block.ops):
        op.detach()
        Rewriter.insert_op(op, InsertPoint.before(group))
    for r, v in zip(group.outputs, values):
        r.replace_all_uses_with(v)
    group.detach()
    group.erase()


def replace_capture(
    group: tcp.IsolatedGroupOp, index: int, operand: SSAValue, rewire: Callable[[BlockArgument, BlockArgument], None]
) -> None:
    """Give the group ``operand`` as capture ``index`` (its block argument takes the
    new type); ``rewire(old_arg, new_arg)`` moves the body off the old argument,
    which is then erased."""
    group.operands[index] = operand
    block = group.body.block
    old = block.args[index]
    new = block.insert_arg(operand.type, index)
    new.name_hint = old.name_hint
    rewire(old, new)
    block.erase_arg(old)


def capture_transposed(group: tcp.IsolatedGroupOp, index: int, operand: SSAValue, inner: Sequence[int]) -> None:
    """Capture ``operand`` (a transposed copy of what the group read) and transpose it
    back by ``inner`` at the top of the body, so the body computes what it did."""

    def rewire(old: BlockArgument, new: BlockArgument) -> None:
        back = tcp.TransposeOp.make([new], {"permutation": i64_array(inner)})
        Rewriter.insert_op(back, InsertPoint.at_start(group.body.block))
        old.replace_all_uses_with(back.result)

    replace_capture(group, index, operand, rewire)
