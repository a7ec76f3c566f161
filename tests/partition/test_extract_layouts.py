"""A group holding a convolution, extracted to be timed alone, names the inputs the whole
program hands it NCHW: a group norm's result, not another convolution's. Two equal
convolutions after the two producers are then two groups, timed apart."""

from __future__ import annotations

import torch
from torch import nn

from dnnc.ir import tcp
from dnnc.ir.analysis import NCHW_INPUTS_ATTR, NCHW_OUTPUTS_ATTR, is_channelwise_conv, taken_channels_last
from dnnc.ir.attrs import ints
from dnnc.ir.program import Program
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


class DepthwiseReaders(nn.Module):
    """Two depthwise convolutions: one read by a squeeze-excite block (its mean beside its
    scaling), one by a 1x1 convolution after a SiLU. With ``scaled_out`` the first block's
    scaled result is the model's output."""

    def __init__(self, scaled_out: bool = False) -> None:
        super().__init__()
        self.scaled_out = scaled_out
        self.excited = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.reduce = nn.Conv2d(8, 4, 1)
        self.expand = nn.Conv2d(4, 8, 1)
        self.plain = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.project = nn.Conv2d(8, 8, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.excited(x)
        gate = torch.sigmoid(self.expand(nn.functional.silu(self.reduce(y.mean((2, 3), keepdim=True)))))
        if self.scaled_out:
            return y * gate
        return self.project(nn.functional.silu(self.plain(y * gate)))


def _depthwise(scaled_out: bool, size: int = 6) -> tuple[Program, list[tcp.Conv2dOp]]:
    program = to_canonical_tcp(DepthwiseReaders(scaled_out).eval(), (torch.randn(2, 8, size, size),))
    return program, [op for op in program.entry.body.block.ops if isinstance(op, tcp.Conv2dOp) and is_channelwise_conv(op)]


def test_a_depthwise_result_read_by_a_squeeze_excite_block_is_taken_channels_last() -> None:
    """The mean reads it as rows of channels and the scaling runs channels-last before the
    next convolution (``sink-transposes`` moves the transpose back below it), so it is
    timed storing channels-last; so is the one a 1x1 convolution reads through a SiLU."""
    program, (excited, plain) = _depthwise(scaled_out=False)
    assert taken_channels_last(excited.results[0]) and taken_channels_last(plain.results[0])
    assert NCHW_OUTPUTS_ATTR not in extract([excited], program.params).entry.attributes
    assert NCHW_OUTPUTS_ATTR not in extract([plain], program.params).entry.attributes


def test_a_depthwise_result_scaled_into_the_output_is_named_nchw() -> None:
    """Scaled into the model's NCHW output, its readers take it NCHW: timed storing NCHW."""
    program, (excited,) = _depthwise(scaled_out=True)
    assert not taken_channels_last(excited.results[0])
    assert list(ints(extract([excited], program.params).entry.attributes[NCHW_OUTPUTS_ATTR])) == [0]


def test_a_depthwise_result_read_by_a_mean_over_long_rows_is_named_nchw() -> None:
    """Over a 40 x 40 image (rows longer than ``analysis.SHORT_ROWS``) the mean beside the
    scaling would read channels-last one tile of channels down the whole image: the result
    is stored NCHW, and timed so."""
    program, (excited, _) = _depthwise(scaled_out=False, size=40)
    assert not taken_channels_last(excited.results[0])
    assert list(ints(extract([excited], program.params).entry.attributes[NCHW_OUTPUTS_ATTR])) == [0]
