"""Every import rule, numerically: a table of PyTorch snippets, each exported,
imported, canonicalized and run on the reference backend, on fresh random inputs
(odd sizes, broadcasting, negative dims and edge attribute values), in float32
against eager and in float16 / bfloat16 against float64 eager."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.compile_helpers import compile_program, eager, eager_exact, flat, run_reference
from tests.numerics import assert_matches

FLOATS = (torch.float32, torch.float16, torch.bfloat16)
F32 = (torch.float32,)


@dataclass(frozen=True)
class Case:
    name: str
    fn: Callable[[], nn.Module | Callable[..., Any]]  # a factory, so modules are built fresh with the test's dtype
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[torch.dtype, ...] = FLOATS
    positive: bool = False  # inputs in [0.5, 1.5] (log, sqrt, division)
    ints: dict[int, int] = field(default_factory=dict)  # input index -> exclusive upper bound of int64 values


def fn(f: Callable[..., Any]) -> Callable[[], Callable[..., Any]]:
    return lambda: f


def bn2d(channels: int, affine: bool = True) -> nn.BatchNorm2d:
    m = nn.BatchNorm2d(channels, affine=affine)
    m.running_mean.uniform_(-0.5, 0.5)
    m.running_var.uniform_(0.5, 2.0)
    if affine:
        nn.init.uniform_(m.weight, 0.5, 1.5)
        nn.init.uniform_(m.bias, -0.5, 0.5)
    return m


CASES = [
    # elementwise arithmetic with implicit broadcasting and scalars
    Case("add_broadcast", fn(lambda a, b: a + b), ((3, 1, 5), (4, 5))),
    Case("add_alpha", fn(lambda a, b: torch.add(a, b, alpha=2.5)), ((2, 7), (7,))),
    Case("sub_scalars", fn(lambda a: (a - 1.5, 2.0 - a)), ((5, 3),)),
    Case("mul_div", fn(lambda a, b: a * b / (b + 3.0)), ((2, 3, 5), (5,)), positive=True),
    Case("reciprocal", fn(lambda a: 1.0 / a + torch.reciprocal(a)), ((9,),), positive=True),
    Case("pow_forms", fn(lambda a, b: (a**1.7, 2.0**a, a**b)), ((3, 4), (3, 4)), positive=True),
    Case("max_min", fn(lambda a, b: (torch.maximum(a, b), torch.minimum(a, b))), ((3, 1), (1, 6))),
    Case("clamps", fn(lambda a: (a.clamp(-0.3, 0.7), a.clamp(min=0.1), a.clamp(max=-0.2))), ((4, 5),)),
    Case("clamp_tensor", fn(lambda a, lo: torch.clamp(a, min=lo, max=lo + 0.5)), ((3, 4), (4,))),
    Case("relu_family", lambda: nn.Sequential(nn.ReLU(), nn.ReLU6(), nn.Hardtanh(-2.0, 3.0)), ((2, 3, 5),)),
    Case("leaky_relu", fn(lambda a: F.leaky_relu(a, 0.2)), ((7, 3),)),
    Case("hard_activations", fn(lambda a: (F.hardswish(a * 4), F.hardsigmoid(a * 4))), ((6, 5),)),
    Case("transcendentals", fn(lambda a: (a.exp(), a.tanh(), a.sigmoid(), F.silu(a), torch.erf(a), -a, a.abs())), ((3, 7),)),
    Case("logs_roots", fn(lambda a: (a.log(), a.sqrt(), a.rsqrt())), ((5, 4),), positive=True),
    Case("gelu", fn(lambda a: (F.gelu(a), F.gelu(a, approximate="tanh"))), ((4, 9),)),
    # comparisons, selection, masks
    Case("compare", fn(lambda a, b: (a < b, a <= 0.1, a > b, a >= b, a == a, a != b)), ((3, 5), (5,))),
    Case("where", fn(lambda a, b: torch.where(a > 0, a, b)), ((4, 1), (4, 6))),
    # 0.25 is exact in every float type: with 0.3 the bf16 mask (against bf16's 0.3008)
    # and the float64 truth's mask differ for inputs in between, a flaky failure.
    Case("masked_fill", fn(lambda a, b: a.masked_fill(b > 0.25, float("-inf")).softmax(-1)), ((2, 3, 6), (3, 6))),
    Case("logical", fn(lambda a, b: ((a > 0) & (b > 0), (a > 0) | (b < 0), ~(a > 0))), ((5, 2), (5, 2))),
    Case("casts", fn(lambda a: ((a * 4).int(), (a > 0).float(), (a * 4).long().float() + 1)), ((3, 4),), dtypes=F32),
    Case("half_cast", fn(lambda a: a.half().float() * 2), ((3, 4),), dtypes=F32),
    Case("int_arith", fn(lambda i: (i + 3, i * 2, i / 4, -i, i.abs())), ((7,),), dtypes=F32, ints={0: 50}),
    Case("arange", fn(lambda a: a + torch.arange(a.shape[-1]) * 0.5 + torch.arange(1, 2 * a.shape[-1] + 1, 2)), ((2, 5),)),
    Case("full_like", fn(lambda a: a + torch.full_like(a, 2.0) * torch.ones_like(a) - torch.zeros(a.shape[-1])), ((3, 4),)),
    Case("tril_mask", fn(lambda a: torch.tril(a) + torch.triu(a, diagonal=1) * 2), ((5, 5),)),
    # shapes and data movement
    Case(
        "views",
        fn(lambda a: (a.view(6, 5), a.reshape(-1), a.flatten(1), a.unsqueeze(-1), a.unsqueeze(0).squeeze(0))),
        ((2, 3, 5),),
    ),
    Case("permutes", fn(lambda a: (a.permute(2, -3, 1), a.transpose(-1, -2), a[0].t())), ((2, 3, 5),)),
    Case("expand_repeat", fn(lambda a: (a.expand(4, -1, 3), a.repeat(2, 1, 3))), ((1, 5, 1),)),
    Case("cat_stack", fn(lambda a, b: (torch.cat([a, b], dim=-1), torch.stack([a, a], dim=1))), ((3, 2), (3, 5))),
    Case("slicing", fn(lambda a: (a[:, 1:-1:2], a[..., -3:], a[-2:, ::3], a[:, -1], a[1])), ((4, 9),)),
    Case("split_chunk", fn(lambda a: (*a.split(3, dim=-1), *a.chunk(2, dim=0))), ((4, 7),)),
    Case("index_select", fn(lambda a, i: (a.index_select(-1, i), a[i.clamp(max=2)])), ((3, 5), (4,)), ints={1: 5}),
    Case("embedding", lambda: nn.Embedding(11, 6), ((2, 5),), ints={0: 11}),
    Case("pad", fn(lambda a: (F.pad(a, (1, 2)), F.pad(a, (0, 0, 2, 1), value=-1.5), F.pad(a, (-1, 1)))), ((1, 3, 4),)),
    # reductions
    Case("sums", fn(lambda a: (a.sum(dim=(-1, 0), keepdim=True), a.sum(), a.mean(1), a.mean())), ((3, 4, 5),)),
    Case(
        "max_min_reductions",
        fn(lambda a: (a.amax(-1), a.amin(dim=(0, 2)), a.max(dim=1).values, a.min(dim=-1, keepdim=True).values)),
        ((3, 4, 5),),
    ),
    Case("any", fn(lambda a: ((a > 1.0).any(-1), (a > 1.0).any())), ((4, 6),)),
    Case("variance", fn(lambda a: (a.var(-1), a.var(dim=(0, 1), correction=0, keepdim=True))), ((3, 4, 5),)),
    Case("log_softmax", fn(lambda a: (F.log_softmax(a, -1), F.log_softmax(a, 0))), ((3, 7),)),
    Case("softmax", fn(lambda a: (a.softmax(-1), a.softmax(1))), ((2, 3, 5),)),
    # matmuls
    Case("linear", lambda: nn.Linear(7, 5), ((3, 7),)),
    Case("linear_3d_nobias", lambda: nn.Linear(6, 4, bias=False), ((2, 3, 6),)),
    Case("linear_1d", lambda: nn.Linear(4, 3), ((4,),)),
    Case(
        "matmuls",
        fn(lambda a, b, c: (a @ b, torch.bmm(a, c), torch.einsum("bij,bjk->bik", a, c))),
        ((2, 3, 4), (4, 5), (2, 4, 5)),
    ),
    # convolutions
    Case("conv_basic", lambda: nn.Conv2d(3, 5, 3), ((2, 3, 9, 7),)),
    Case("conv_stride_pad", lambda: nn.Conv2d(4, 6, 3, stride=2, padding=(2, 1), bias=False), ((1, 4, 11, 8),)),
    Case("conv_dilation", lambda: nn.Conv2d(3, 4, (3, 2), dilation=2, padding=1), ((1, 3, 10, 9),)),
    Case("conv_groups", lambda: nn.Conv2d(6, 4, 1, groups=2), ((2, 6, 5, 5),)),
    Case("conv_depthwise", lambda: nn.Conv2d(8, 8, 3, padding=1, groups=8), ((1, 8, 7, 7),)),
    Case("conv1d", lambda: nn.Conv1d(3, 5, 3, stride=2, padding=1), ((2, 3, 11),)),
    # 3-D convolutions: a video patch embedding, a temporal kernel, full kernels with
    # strides, padding, dilation and groups (one 2-D convolution each)
    Case("conv3d_patch", lambda: nn.Conv3d(3, 8, (1, 2, 2), stride=(1, 2, 2)), ((2, 3, 3, 8, 6),)),
    Case("conv3d_temporal", lambda: nn.Conv3d(4, 6, (3, 1, 1), padding=(1, 0, 0), groups=2), ((1, 4, 5, 3, 4),)),
    Case("conv3d_full", lambda: nn.Conv3d(3, 5, 3, padding=1), ((1, 3, 4, 6, 5),)),
    Case(
        "conv3d_strided_grouped",
        lambda: nn.Conv3d(4, 6, (2, 3, 1), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
        ((2, 4, 7, 5, 6),),
    ),
    # transposed convolutions: a kernel that tiles the output (a 1x1 convolution and a
    # pixel spread), and the general form with stride, padding, output padding, dilation
    # and groups; 1-D as a vocoder's upsampling
    Case("conv_transpose_tiling", lambda: nn.ConvTranspose2d(4, 6, 2, stride=2), ((2, 4, 5, 7),)),
    Case(
        "conv_transpose_general",
        lambda: nn.ConvTranspose2d(4, 6, (3, 5), stride=(2, 3), padding=(2, 1), output_padding=(1, 0), dilation=(1, 2), groups=2),
        ((1, 4, 5, 6),),
    ),
    Case("conv_transpose_crop", lambda: nn.ConvTranspose2d(6, 6, 4, stride=2, padding=3, groups=3, bias=False), ((1, 6, 7, 5),)),
    Case("conv_transpose1d", lambda: nn.ConvTranspose1d(4, 3, 16, stride=8, padding=4), ((2, 4, 9),)),
    Case("conv_transpose3d_tiling", lambda: nn.ConvTranspose3d(3, 4, (1, 2, 2), stride=(1, 2, 2)), ((1, 3, 2, 3, 4),)),
    Case(
        "conv_transpose3d_general",
        lambda: nn.ConvTranspose3d(4, 6, (3, 3, 2), stride=(1, 2, 2), padding=(1, 0, 1), dilation=(2, 1, 1), groups=2),
        ((1, 4, 3, 4, 3),),
    ),
    Case(
        "conv_transpose_functional", fn(lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1)), ((1, 3, 4, 5), (3, 2, 3, 3))
    ),
    Case("conv3d_functional", fn(lambda x, w: F.conv3d(x, w, stride=(1, 2, 1))), ((1, 2, 3, 6, 4), (3, 2, 2, 2, 2))),
    # norms
    Case("batchnorm", lambda: bn2d(5), ((2, 5, 3, 4),)),
    Case("batchnorm_no_affine", lambda: bn2d(3, affine=False), ((1, 3, 4, 4),)),
    Case("conv_bn_relu", lambda: nn.Sequential(nn.Conv2d(3, 4, 3, padding=1, bias=True), bn2d(4), nn.ReLU()), ((2, 3, 6, 6),)),
    Case("linear_bn1d", lambda: nn.Sequential(nn.Linear(5, 6), _bn1d(6)), ((4, 5),)),
    Case("layernorm", lambda: _affine(nn.LayerNorm(7)), ((2, 3, 7),)),
    Case("layernorm_2d_noaffine", lambda: nn.LayerNorm((3, 5), elementwise_affine=False), ((2, 3, 5),)),
    # pooling
    Case("maxpool", lambda: nn.MaxPool2d(3, 2, 1), ((1, 2, 9, 8),)),
    Case("maxpool_ceil_dilated", lambda: nn.MaxPool2d(2, 2, 0, dilation=2, ceil_mode=True), ((1, 3, 9, 10),)),
    Case("avgpool", lambda: nn.AvgPool2d(3, 2, 1), ((2, 2, 7, 8),)),
    Case("avgpool_ceil_exclude_pad", lambda: nn.AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False), ((1, 2, 8, 7),)),
    Case("avgpool_ceil_include_pad", lambda: nn.AvgPool2d((3, 2), (2, 3), (1, 1), ceil_mode=True), ((1, 2, 8, 10),)),
    Case("adaptive_pool", fn(lambda a: (F.adaptive_avg_pool2d(a, 1), F.adaptive_avg_pool2d(a, (2, 3)))), ((2, 3, 4, 6),)),
    Case(
        "adaptive_pool_uneven",
        fn(lambda a: (F.adaptive_avg_pool2d(a, (7, 7)), F.adaptive_avg_pool2d(a, (3, 4)))),
        ((2, 3, 5, 6),),
    ),
    # attention as exported by PyTorch's own modules
    Case("sdpa_causal", fn(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True)), ((1, 2, 5, 8),) * 3),
    Case("multihead_attention", lambda: _MHA(), ((2, 5, 8),)),
]


def _bn1d(n: int) -> nn.BatchNorm1d:
    m = nn.BatchNorm1d(n)
    m.running_mean.uniform_(-0.5, 0.5)
    m.running_var.uniform_(0.5, 2.0)
    return m


def _affine(m: nn.LayerNorm) -> nn.LayerNorm:
    nn.init.uniform_(m.weight, 0.5, 1.5)
    nn.init.uniform_(m.bias, -0.5, 0.5)
    return m


class _MHA(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.attn(x, x, x, need_weights=False)[0]


def make_inputs(case: Case, dtype: torch.dtype, rng: torch.Generator) -> list[torch.Tensor]:
    inputs = []
    for i, shape in enumerate(case.shapes):
        if i in case.ints:
            inputs.append(torch.randint(0, case.ints[i], shape, generator=rng))
        elif case.positive:
            inputs.append((torch.rand(shape, generator=rng) + 0.5).to(dtype))
        else:
            inputs.append(torch.randn(shape, generator=rng).to(dtype))
    return inputs


PARAMS = [pytest.param(c, d, id=f"{c.name}-{str(d).removeprefix('torch.')}") for c in CASES for d in c.dtypes]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_aten_case(case: Case, dtype: torch.dtype, rng: torch.Generator) -> None:
    with torch.random.fork_rng():
        torch.manual_seed(rng.initial_seed())
        model = case.fn()
    if isinstance(model, nn.Module):
        model = model.to(dtype).eval()
    inputs = make_inputs(case, dtype, rng)
    program = compile_program(model, inputs)
    actual = run_reference(program, inputs)
    # Float results: float32 against eager, lower precisions against the float64 truth.
    # Integer and boolean results: against eager in the case's own dtype, because
    # PyTorch's semantics round scalars to it (bf16 `x <= 0.1` compares with bf16's 0.1).
    native = flat(eager(model, inputs))
    exact = native if dtype == torch.float32 else flat(eager_exact(model, inputs))
    assert len(actual) == len(native)
    for i, (a, n, e) in enumerate(zip(actual, native, exact, strict=True)):
        if not a.is_floating_point():
            assert_matches(a, n, what=f"{case.name} output {i}")
        else:
            assert_matches(a, e.to(a.dtype) if dtype == torch.float32 else e, dtype, what=f"{case.name} output {i}")
