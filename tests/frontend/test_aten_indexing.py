"""The import rules real models need beyond the basics, numerically, on the table of
tests/frontend/test_aten_numerics.py: trigonometry and rounding, integer and boolean
arithmetic (masks, position ids), gathers and advanced indexing, in-place updates
(scatters, index_put, slice_scatter, copy), padding modes, resizing, group norm,
vector norms and as_strided views; float32 against eager, float16 / bfloat16 against
float64 eager, integer outputs exactly. Then the messages of what stays unsupported."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dnnc.errors import UnsupportedOpError
from tests.compile_helpers import compile_program
from tests.frontend.test_aten_numerics import F32, Case, fn, test_aten_case

CASES = [
    # math (rounding at halves, signs of zero and NaN, accuracy near zero)
    Case("trig", fn(lambda a: (a.sin(), a.cos(), a.tan())), ((4, 7),)),
    Case("rounding", fn(lambda a: ((a * 4).floor(), (a * 4).ceil(), (a * 4).trunc(), (a * 2).round(), a.sign())), ((5, 6),)),
    Case("round_halves", fn(lambda a: (a.round() - a / 2).round()), ((9,),), dtypes=F32),
    Case("log1p_expm1", fn(lambda a: (torch.log1p(a * 1e-3), torch.expm1(a * 1e-3), torch.expm1(a))), ((3, 8),)),
    Case("log2_exp2", fn(lambda a: (torch.log2(a), torch.exp2(a))), ((4, 5),), positive=True),
    Case(
        "isinf_isnan",
        fn(lambda a: (torch.isinf(a / (a > 0.5)), torch.isnan((a - 1).sqrt()), torch.isfinite((a - 1).log()))),
        ((6, 5),),
        positive=True,
    ),
    # integer and boolean arithmetic
    Case(
        "floor_div_remainder",
        fn(lambda i: (i // 3, (i - 20) // 3, i % 4, (i - 20) % -3, torch.fmod(i - 20, 3))),
        ((3, 11),),
        dtypes=F32,
        ints={0: 40},
    ),
    Case(
        "div_rounding_modes",
        fn(
            lambda i, a: (
                torch.div(i - 20, 3, rounding_mode="trunc"),
                torch.div(i - 20, 3, rounding_mode="floor"),
                torch.div(a, 0.3, rounding_mode="floor"),
                torch.div(a, 0.3, rounding_mode="trunc"),
            )
        ),
        ((13,), (13,)),
        dtypes=F32,
        ints={0: 40},
    ),
    Case(
        "float_remainders",
        fn(lambda a, b: (a % (b + 2), torch.fmod(a, b + 2), torch.remainder(a, -1.5))),
        ((4, 6), (4, 6)),
        positive=False,
    ),
    Case(
        "bitwise", fn(lambda i: (i & 6, i | 1, i ^ 5, ~i, i >> 1, i << 2, (i > 3) ^ (i < 7))), ((2, 9),), dtypes=F32, ints={0: 50}
    ),
    Case(
        "where_scalars",
        fn(lambda a: (torch.where(a > 0, 1.0, a), torch.where(a > 0, a, -1.0), torch.where(a > 0, 2.0, -2.0))),
        ((3, 7),),
    ),
    # gathers
    Case(
        "gather",
        fn(lambda a, i: (torch.gather(a, 1, i), torch.take_along_dim(a, i[:, :2], dim=1))),
        ((3, 8), (3, 5)),
        ints={1: 8},
    ),
    Case(
        "advanced_indexing",
        fn(lambda a, i, j: (a[i, j], a[:, i[0], j[0]], a[i[:, :1], :, j], a[..., -1][i])),
        ((4, 5, 6), (3, 2), (3, 2)),
        ints={1: 4, 2: 5},
    ),
    Case("negative_indices", fn(lambda a, i: (a[i - 3], a[:, i[0] - 3])), ((3, 4), (3, 4)), ints={1: 6}),
    Case("flip_roll", fn(lambda a: (a.flip(0, -1), a.roll(2, 1), a.roll((1, -2), (0, 1)), a.roll(3))), ((3, 7),)),
    # in-place updates
    Case(
        "scatter",
        fn(lambda a, i: (a.scatter(1, i, a * 2), a.scatter(1, i, 3.5), a.scatter_add(1, i, a))),
        ((3, 9), (3, 9)),
        ints={1: 9},
    ),
    Case(
        "index_put",
        fn(lambda a, i: (a.index_put((i,), a[:1].expand(5, 6)), a.index_put((i,), a[:5] * 2, accumulate=True))),
        ((7, 6), (5,)),
        ints={1: 7},
    ),
    Case("setitem_forms", fn(lambda a: _setitems(a)), ((4, 9),)),
    Case(
        "slice_select_scatter",
        fn(
            lambda a: (
                torch.slice_scatter(a, a[:, ::3] * 2, 1, 0, None, 3),
                torch.slice_scatter(a, a[1:3] + 1, 0, 1, 3),
                torch.select_scatter(a, a[:, 2] * 3, 1, -1),
            )
        ),
        ((4, 9),),
    ),
    # padding modes and pixel shuffles
    Case(
        "pad_modes",
        fn(
            lambda x: (
                F.pad(x, (1, 2, 2, 1), mode="reflect"),
                F.pad(x, (2, 1, 0, 3), mode="replicate"),
                F.pad(x, (1, 2, 1, 1), mode="circular"),
            )
        ),
        ((2, 3, 5, 6),),
    ),
    Case("pad_1d_modes", fn(lambda x: (F.pad(x, (2, 3), mode="reflect"), F.pad(x, (1, 2), mode="replicate"))), ((2, 3, 7),)),
    Case("pixel_shuffle", fn(lambda x: (F.pixel_shuffle(x, 2), F.pixel_unshuffle(x, 2))), ((1, 8, 4, 6),)),
    # resizing
    Case(
        "upsample_nearest",
        fn(
            lambda x: (
                F.interpolate(x, scale_factor=2),
                F.interpolate(x, size=(7, 9)),
                F.interpolate(x, scale_factor=0.5),
                F.interpolate(x, scale_factor=2, mode="nearest-exact"),
            )
        ),
        ((2, 3, 5, 6),),
    ),
    Case(
        "upsample_bilinear",
        fn(
            lambda x: (
                F.interpolate(x, scale_factor=2, mode="bilinear"),
                F.interpolate(x, size=(7, 9), mode="bilinear", align_corners=True),
                F.interpolate(x, scale_factor=1.7, mode="bilinear"),
                F.interpolate(x, size=(3, 4), mode="bilinear"),
            )
        ),
        ((2, 3, 5, 6),),
    ),
    Case(
        "upsample_1d",
        fn(
            lambda x: (
                F.interpolate(x, scale_factor=2),
                F.interpolate(x, size=11, mode="linear"),
                F.interpolate(x, size=11, mode="linear", align_corners=True),
            )
        ),
        ((2, 3, 7),),
    ),
    Case("upsample_module", lambda: nn.Upsample(scale_factor=2, mode="nearest"), ((1, 4, 3, 5),)),
    # norms
    Case("group_norm", lambda: _gn(nn.GroupNorm(4, 12)), ((2, 12, 5, 6),)),
    Case("group_norm_silu_3d", lambda: nn.Sequential(nn.GroupNorm(2, 6, affine=False), nn.SiLU()), ((2, 6, 9),)),
    Case(
        "vector_norms",
        fn(
            lambda a: (
                F.normalize(a, dim=1),
                torch.linalg.vector_norm(a, 1, dim=0),
                torch.linalg.vector_norm(a, float("inf"), dim=1, keepdim=True),
                torch.linalg.vector_norm(a, 3, dim=1),
            )
        ),
        ((4, 7),),
    ),
    Case("full_max_min", fn(lambda a: (a.max(), a.min())), ((5, 3),)),
    # views written with as_strided
    Case(
        "as_strided_views",
        fn(
            lambda a: (
                a.as_strided((3, 4), (1, 3)),
                a.contiguous(memory_format=torch.channels_last).as_strided((2, 3, 2, 2), (12, 1, 6, 3)),
                a.as_strided((2, 3, 4), (0, 4, 1)),
            )
        ),
        ((2, 3, 2, 2),),
    ),
]


def _setitems(a: torch.Tensor) -> torch.Tensor:
    b = a.clone()
    b[:, 1] = 0.5
    b[1:3, 2:7:2] = b[1:3, 2:7:2] * 3
    b[0] += 1
    return b


def _put_apart(a: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
    b = a.clone()
    b[i, :, i] = 1.0
    return b


def _gn(m: nn.GroupNorm) -> nn.GroupNorm:
    nn.init.uniform_(m.weight, 0.5, 1.5)
    nn.init.uniform_(m.bias, -0.5, 0.5)
    return m


PARAMS = [pytest.param(c, d, id=f"{c.name}-{str(d).removeprefix('torch.')}") for c in CASES for d in c.dtypes]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_indexing_case(case: Case, dtype: torch.dtype, rng: torch.Generator) -> None:
    test_aten_case(case, dtype, rng)


@pytest.mark.parametrize(
    "f, inputs, message",
    [
        (lambda a: a.as_strided((3, 3), (1, 1)), [torch.randn(9)], r"as_strided of \[9\] .* to size \[3, 3\], strides \[1, 1\]"),
        (lambda a: a.as_strided((2, 2), (4, 1)), [torch.randn(9)], r"to size \[2, 2\], strides \[4, 1\]"),
        (
            lambda a, i: a.scatter(1, i, 2.0, reduce="multiply"),
            [torch.randn(2, 3), torch.zeros(2, 3, dtype=torch.int64)],
            "reduce='multiply'",
        ),
        (_put_apart, [torch.randn(3, 4, 3), torch.zeros(2, dtype=torch.int64)], "not next to each other"),
        (lambda a: a[a > 0], [torch.randn(5)], "data-dependent"),
        (
            lambda a: F.interpolate(a, scale_factor=2, mode="bilinear", antialias=True),
            [torch.randn(1, 1, 4, 4)],
            "_upsample_bilinear2d_aa",
        ),
    ],
    ids=["as_strided_overlapping", "as_strided_gaps", "scatter_multiply", "index_put_apart", "boolean_mask", "antialias"],
)
def test_unsupported_forms_are_named(f, inputs, message) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(UnsupportedOpError, match=message):
        compile_program(f, inputs)
