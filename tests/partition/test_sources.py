"""cuDNN's candidate groups: a convolution is offered alone and with each longer prefix of
its epilogue; a depthwise convolution only alone, its bias and activation left to the
Triton kernel after it (``backends.cudnn.grouping.takes_epilogue``)."""

from __future__ import annotations

import torch
from torch import nn

from dnnc.ir import tcp
from dnnc.ir.attrs import scalar
from dnnc.partition.sources import cudnn_candidates
from dnnc.pipeline import to_canonical_tcp


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.depthwise = nn.Conv2d(16, 16, 3, padding=1, groups=16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.depthwise(torch.relu(self.pointwise(x))))


def _labels_by_root() -> dict[str, list[str]]:
    program = to_canonical_tcp(Block().eval(), (torch.randn(1, 8, 16, 16),))
    nodes = [op for op in program.entry.body.block.ops if not isinstance(op, tcp.SOURCE_OPS)]
    index = {op: i for i, op in enumerate(nodes)}
    out: dict[str, list[str]] = {}
    for c in cudnn_candidates(nodes, index, []):
        root = c.ops[0]
        assert isinstance(root, tcp.Conv2dOp)
        out.setdefault("depthwise" if int(scalar(root.groups)) > 1 else "pointwise", []).append(c.kind)
    return out


def test_a_depthwise_convolution_is_offered_without_its_epilogue() -> None:
    labels = _labels_by_root()
    assert labels["depthwise"] == ["conv"]
    assert len(labels["pointwise"]) > 1 and labels["pointwise"][0] == "conv", labels["pointwise"]
