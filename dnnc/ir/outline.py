"""Move a set of top-level ops into a ``tcp.isolated_group``.

Every value the ops read from outside becomes a capture (a block argument);
the chosen output values are yielded and replace their uses outside. The group
is inserted where the last member was, so every capture is already defined.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from xdsl.dialects.builtin import StringAttr, TensorType
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from dnnc.ir import tcp


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
