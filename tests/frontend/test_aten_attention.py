"""Scaled dot-product attention imports as one ``tcp.attention``, numerically: every
form export produces (``F.scaled_dot_product_attention`` and each kernel PyTorch
dispatches it to), masks of every kind and broadcast shape, causal, custom scales,
grouped-query attention, odd lengths and head dims, against eager in float32 and
float64 eager in float16 / bfloat16."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.nn.functional as F

from dnnc.errors import UnsupportedOpError
from dnnc.ir import tcp
from tests.compile_helpers import compile_program, eager, eager_exact, flat, run_reference
from tests.numerics import assert_matches

aten = torch.ops.aten
FLOATS = (torch.float32, torch.float16, torch.bfloat16)


def sdpa(**kw: Any) -> Callable[..., torch.Tensor]:
    return lambda q, k, v, *mask: F.scaled_dot_product_attention(q, k, v, *mask, **kw)


# name, function, shapes (q, k, v[, mask]), mask kind ("bool", "float" or None)
CASES: list[tuple[str, Callable[..., Any], tuple[tuple[int, ...], ...], str | None]] = [
    ("plain_head_dim_40", sdpa(), ((2, 3, 9, 40), (2, 3, 13, 40), (2, 3, 13, 24)), None),
    ("causal_scale", sdpa(is_causal=True, scale=0.3), ((1, 2, 11, 16), (1, 2, 11, 16), (1, 2, 11, 16)), None),
    ("causal_short_queries", sdpa(is_causal=True), ((1, 2, 5, 16), (1, 2, 9, 16), (1, 2, 9, 8)), None),
    ("padding_mask_bool", sdpa(), ((2, 2, 7, 16), (2, 2, 7, 16), (2, 2, 7, 16), (2, 1, 1, 7)), "bool"),
    ("square_mask_bool", sdpa(), ((2, 2, 7, 16), (2, 2, 6, 16), (2, 2, 6, 16), (7, 6)), "bool"),
    ("additive_mask", sdpa(), ((1, 3, 8, 16), (1, 3, 10, 16), (1, 3, 10, 16), (1, 1, 8, 10)), "float"),
    ("gqa", sdpa(enable_gqa=True), ((2, 8, 6, 16), (2, 2, 6, 16), (2, 2, 6, 16)), None),
    ("multi_query_broadcast", sdpa(), ((2, 4, 5, 16), (2, 1, 7, 16), (1, 1, 7, 8)), None),
    ("rank3", sdpa(), ((4, 9, 16), (4, 11, 16), (4, 11, 12)), None),
    ("rank5", sdpa(is_causal=True), ((2, 2, 3, 5, 16), (2, 2, 3, 5, 16), (2, 2, 3, 5, 16)), None),
    ("flash_kernel", lambda q, k, v: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True)[0], ((1, 2, 9, 16),) * 3, None),
    (
        "flash_cpu_kernel_mask",
        lambda q, k, v, m: aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, attn_mask=m)[0],
        ((1, 2, 9, 16),) * 3 + ((1, 1, 9, 9),),
        "float",
    ),
    (
        "efficient_kernel_bias",
        lambda q, k, v, m: aten._scaled_dot_product_efficient_attention(q, k, v, m, False)[0],
        ((2, 2, 9, 16),) * 3 + ((2, 2, 9, 9),),
        "float",
    ),
    (
        "cudnn_kernel",
        lambda q, k, v: aten._scaled_dot_product_cudnn_attention(q, k, v, None, False, 0.0, True)[0],
        ((1, 2, 9, 16),) * 3,
        None,
    ),
]
KERNELS = ("flash_kernel", "efficient_kernel_bias", "cudnn_kernel")
"""CUDA-only kernels: they export (their meta functions run anywhere) but have no CPU eager."""


def _inputs(
    shapes: tuple[tuple[int, ...], ...], mask: str | None, dtype: torch.dtype, rng: torch.Generator
) -> list[torch.Tensor]:
    xs = [torch.randn(s, generator=rng).to(dtype) for s in shapes[:3]]
    if mask == "bool":
        keep = torch.rand(shapes[3], generator=rng) > 0.3
        keep[..., 0] = False  # key 0 is excluded for every query
        xs.append(keep)
    elif mask == "float":
        xs.append((torch.randn(shapes[3], generator=rng) * 2).to(dtype))
    return xs


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0])
def test_attention_matches_eager(case: Any, dtype: torch.dtype, rng: torch.Generator) -> None:
    name, fn, shapes, mask = case
    inputs = _inputs(shapes, mask, dtype, rng)
    program = compile_program(fn, inputs)
    ops = [op for op in program.entry.body.walk() if isinstance(op, tcp.AttentionOp)]
    assert len(ops) == 1, program.text()
    (got,) = run_reference(program, inputs)
    if name in KERNELS:  # the same attention written with the public function
        causal = name != "efficient_kernel_bias"
        reference = lambda q, k, v, *m: F.scaled_dot_product_attention(q, k, v, *m, is_causal=causal)  # noqa: E731
    else:
        reference = fn
    expected = flat(eager(reference, inputs) if dtype == torch.float32 else eager_exact(reference, inputs))[0]
    assert_matches(got, expected.to(got.dtype) if dtype == torch.float32 else expected, dtype, what=name)


def test_fully_masked_rows_are_zero(rng: torch.Generator) -> None:
    q, k, v = (torch.randn(1, 2, 4, 16, generator=rng) for _ in range(3))
    keep = torch.ones(4, 4, dtype=torch.bool)
    keep[1] = False
    fn = sdpa()
    program = compile_program(fn, [q, k, v, keep])
    (got,) = run_reference(program, [q, k, v, keep])
    assert torch.equal(got[:, :, 1], torch.zeros_like(got[:, :, 1]))
    assert_matches(got, fn(q, k, v, keep), torch.float32)


def test_multi_head_attention_module_is_one_attention_op(rng: torch.Generator) -> None:
    mha = torch.nn.MultiheadAttention(16, 4, batch_first=True).eval()
    x = torch.randn(2, 5, 16, generator=rng)
    program = compile_program(lambda t: mha(t, t, t, need_weights=False)[0], [x])
    assert sum(isinstance(op, tcp.AttentionOp) for op in program.entry.body.walk()) == 1


def test_dropout_is_refused() -> None:
    q = torch.randn(1, 1, 4, 8)
    with pytest.raises(UnsupportedOpError, match="dropout_p=0.5"):
        compile_program(lambda a: F.scaled_dot_product_attention(a, a, a, dropout_p=0.5), [q])
