"""A candidate lowered alone to be timed is the graph the whole program runs: a bias
broadcast its cuDNN graph absorbs stays inside it as a broadcast operand, rather than
being written out whole by a Triton kernel before the graph."""

from __future__ import annotations

import torch
from torch import nn

from dnnc.ir import cudnn, tcp
from dnnc.ir.types import shape_of
from dnnc.partition.measure import lower_alone
from dnnc.partition.sources import cudnn_candidates
from dnnc.pipeline import to_canonical_tcp


class ConvBiasRelu(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(8, 16, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.conv(x))


def test_a_bias_broadcast_stays_a_broadcast_operand_of_the_graph_timed_alone() -> None:
    program = to_canonical_tcp(ConvBiasRelu().eval(), (torch.randn(2, 8, 16, 16),))
    nodes = [op for op in program.entry.body.block.ops if not isinstance(op, tcp.SOURCE_OPS)]
    candidates = cudnn_candidates(nodes, {op: i for i, op in enumerate(nodes)}, [])
    (fused,) = [c for c in candidates if c.kind == "conv_bias_relu"]
    alone = lower_alone(fused, program.params)
    block = alone.entry.body.block
    (graph,) = [op for op in block.ops if isinstance(op, cudnn.GraphOp)]
    assert sorted(shape_of(v.type) for v in graph.operands)[0] == (1, 16, 1, 1), [str(v.type) for v in graph.operands]
    assert not [op for op in block.ops if isinstance(op, tcp.IsolatedGroupOp) and "pointwise" in str(op.attributes)]
