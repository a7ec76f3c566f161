"""A name-free text of a ``cudnn.graph``: what identifies it for plan caches.

Two graphs with the same descriptors, nodes and attributes get the same plan, so
the text leaves out SSA names and hints and numbers values in order instead.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from dnnc.ir import cudnn
from dnnc.ir.types import describe


def graph_signature(graph: cudnn.GraphOp) -> str:
    block = graph.body.block
    ids: dict[SSAValue, int] = {}
    lines = []
    for arg in block.args:
        ids[arg] = len(ids)
        lines.append(f"%{ids[arg]} = arg {describe(arg.type)} {arg.type}")
    for op in block.ops:
        operands = ",".join(f"%{ids[v]}" for v in op.operands)
        props = ",".join(f"{k}={v}" for k, v in sorted(op.properties.items()))
        for r in op.results:
            ids[r] = len(ids)
        results = ",".join(f"%{ids[r]}" for r in op.results)
        types = ",".join(str(r.type) for r in op.results)
        lines.append(f"{results} = {op.name}({operands}) {{{props}}} : {types}")
    lines.append(f"strides {graph.output_strides()} results {[str(r.type) for r in graph.outputs]}")
    return "\n".join(lines)
