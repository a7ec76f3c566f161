"""A candidate lowered alone to be timed is the graph the whole program runs: a bias
broadcast its cuDNN graph absorbs stays inside it as a broadcast operand, rather than
being written out whole by a Triton kernel before the graph; a Triton candidate is one
kernel, as in the program."""

from __future__ import annotations

import importlib

import pytest
import torch
from torch import nn

from dnnc.backends.triton.marking import is_triton_group
from dnnc.ir import cudnn, tcp
from dnnc.ir.types import shape_of
from dnnc.partition import memo
from dnnc.partition.candidates import graph_nodes
from dnnc.partition.enumeration import enumerate_candidates
from dnnc.partition.measure import lower_alone
from dnnc.partition.sources import cudnn_candidates
from dnnc.pipeline import ready_to_partition, to_canonical_tcp


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


def _triton_kernels_alone(model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> list[tuple[str, int]]:
    """(kind, kernels) of every Triton candidate of the model lowered alone."""
    program = ready_to_partition(to_canonical_tcp(model, inputs), ["triton"])
    nodes = graph_nodes(program.entry.body.block)
    with memo.one_compile():
        return [
            (c.kind, sum(1 for op in lower_alone(c, program.params).entry.body.block.ops if is_triton_group(op)))
            for c in enumerate_candidates(nodes, ["triton"], "auto")
            if c.backend == "triton"
        ]


MODELS = {
    "resnet50": ("dnnc.models.resnet", "resnet50", {"batch": 2, "image_size": 64}),
    "unet2d": ("dnnc.models.zoo", "unet2d", {"batch": 2, "size": 16, "channels": (32, 64), "groups": 8}),
    "bert": ("dnnc.models.zoo", "bert", {"batch": 2, "seq": 16, "layers": 1, "hidden": 64, "heads": 2, "vocab": 100}),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_triton_candidate_lowered_alone_is_one_kernel(name: str) -> None:
    """What the partitioner times for a Triton candidate is one kernel, as the program runs
    it: a candidate that came apart alone (a chain of two convolutions read through a
    pinned transpose did) would be priced as the sum of other kernels."""
    module, factory, args = MODELS[name]
    if module == "dnnc.models.zoo":
        pytest.importorskip("diffusers" if name == "unet2d" else "transformers")
    model, inputs = getattr(importlib.import_module(module), factory)(**args)
    kernels = _triton_kernels_alone(model.half(), tuple(x.half() if x.is_floating_point() else x for x in inputs))
    assert len(kernels) > 20
    assert [k for k in kernels if k[1] != 1] == []
