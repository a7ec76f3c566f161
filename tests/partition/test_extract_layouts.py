"""A group holding a convolution, extracted to be timed alone, names the inputs the whole
program hands it NCHW: a group norm's result, not another convolution's. Two equal
convolutions after the two producers are then two groups, timed apart."""

from __future__ import annotations

import torch
from torch import nn

from dnnc.ir import tcp
from dnnc.ir.analysis import NCHW_INPUTS_ATTR
from dnnc.ir.attrs import ints
from dnnc.partition.extract import extract
from dnnc.pipeline import to_canonical_tcp


class NormThenConvs(nn.Module):
    """A 3x3 convolution after a group norm + SiLU, the same one after a convolution."""

    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(2, 8)
        self.first = nn.Conv2d(8, 8, 3, padding=1)
        self.second = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.second(self.first(nn.functional.silu(self.norm(x))))


def test_a_convolution_after_a_norm_names_its_input_nchw_and_one_after_a_convolution_does_not() -> None:
    program = to_canonical_tcp(NormThenConvs().eval(), (torch.randn(2, 8, 6, 6),))
    convs = [op for op in program.entry.body.block.ops if isinstance(op, tcp.Conv2dOp)]
    assert len(convs) == 2
    after_norm, after_conv = (extract([conv], program.params) for conv in convs)
    assert list(ints(after_norm.entry.attributes[NCHW_INPUTS_ATTR])) == [0]
    assert NCHW_INPUTS_ATTR not in after_conv.entry.attributes
    assert after_norm.text() != after_conv.text()


def test_a_group_without_a_convolution_is_extracted_as_before() -> None:
    program = to_canonical_tcp(NormThenConvs().eval(), (torch.randn(2, 8, 6, 6),))
    ops = [op for op in program.entry.body.block.ops if not isinstance(op, (*tcp.SOURCE_OPS, tcp.Conv2dOp))]
    assert NCHW_INPUTS_ATTR not in extract(ops[:1], program.params).entry.attributes
