"""The reference backend against independent implementations of the documented
semantics (brute-force loops and NumPy), including cases PyTorch cannot express:
asymmetric padding, pooling padding wider than half the window, gathers along
inner axes, casts, integer clamps, boolean reductions and isolated groups."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest
import torch

from dnnc.backends.reference import ReferenceExecutor
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import shape_of
from tests.numerics import assert_matches


def run(
    text: str, *inputs: torch.Tensor, params: dict[str, torch.Tensor] | None = None, precision: str = "float32"
) -> list[torch.Tensor]:
    program = Program(parse_ir(text), ParamStore(params or {}))
    program.verify()
    return ReferenceExecutor(program, precision).run(list(inputs))


def ty(shape: tuple[int, ...], element: str = "f32") -> str:
    return "tensor<" + "x".join([*(str(d) for d in shape), element]) + ">"


def window_count(size: int, lo: int, hi: int, k: int, s: int, d: int, ceil: bool) -> int:
    """PyTorch's documented output length, written out independently."""
    span = size + lo + hi - d * (k - 1) - 1
    out = (span + (s - 1 if ceil else 0)) // s + 1
    if ceil and (out - 1) * s >= size + lo:
        out -= 1
    return out


def pool_bruteforce(
    x: np.ndarray, kind: str, k: tuple, s: tuple, pad: tuple, d: tuple, ceil: bool, include_pad: bool
) -> np.ndarray:
    n, c, h, w = x.shape
    ho = window_count(h, pad[0], pad[1], k[0], s[0], d[0], ceil)
    wo = window_count(w, pad[2], pad[3], k[1], s[1], d[1], ceil)
    out = np.zeros((n, c, ho, wo))
    for i, j in itertools.product(range(ho), range(wo)):
        h0, w0 = i * s[0] - pad[0], j * s[1] - pad[2]
        rows = [h0 + d[0] * a for a in range(k[0])]
        cols = [w0 + d[1] * b for b in range(k[1])]
        inside = [(r, q) for r in rows for q in cols if 0 <= r < h and 0 <= q < w]
        if kind == "max":
            out[:, :, i, j] = np.max([x[:, :, r, q] for r, q in inside], axis=0) if inside else -np.inf
        else:
            total = sum((x[:, :, r, q] for r, q in inside), np.zeros((n, c)))
            if include_pad:
                # the window clipped to the padded input
                divisor = (min(h0 + k[0], h + pad[1]) - h0) * (min(w0 + k[1], w + pad[3]) - w0)
            else:
                divisor = len(inside)
            with np.errstate(invalid="ignore"):  # a window of padding only: 0 / 0
                out[:, :, i, j] = total / divisor
    return out


POOLS = [
    # kernel, stride, padding (t, b, l, r), dilation, ceil
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False),
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True),
    ((2, 3), (3, 2), (0, 0, 1, 1), (1, 1), True),
    ((3, 2), (1, 2), (0, 2, 1, 0), (1, 1), False),  # asymmetric
    ((2, 2), (2, 2), (2, 2, 2, 2), (1, 1), False),  # padding wider than half the window
    ((3, 3), (2, 1), (1, 1, 0, 0), (2, 1), True),
    ((1, 1), (3, 3), (0, 0, 0, 0), (1, 1), True),
]


@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil", POOLS)
def test_max_pool_matches_bruteforce(kernel, stride, padding, dilation, ceil, rng) -> None:
    x = torch.randn(2, 3, 9, 8, generator=rng)
    ho = window_count(9, padding[0], padding[1], kernel[0], stride[0], dilation[0], ceil)
    wo = window_count(8, padding[2], padding[3], kernel[1], stride[1], dilation[1], ceil)
    text = f"""func.func @forward(%x: {ty(x.shape)}) -> {ty((2, 3, ho, wo))} {{
      %y = tcp.max_pool2d %x {{kernel = array<i64: {kernel[0]}, {kernel[1]}>, stride = array<i64: {stride[0]}, {stride[1]}>,
        padding = array<i64: {", ".join(map(str, padding))}>, dilation = array<i64: {dilation[0]}, {dilation[1]}>, ceil_mode = {str(ceil).lower()}}}
        : {ty(x.shape)} -> {ty((2, 3, ho, wo))}
      func.return %y : {ty((2, 3, ho, wo))}
    }}"""
    (y,) = run(text, x)
    expected = pool_bruteforce(x.double().numpy(), "max", kernel, stride, padding, dilation, ceil, True)
    assert_matches(y, torch.from_numpy(expected).float())


@pytest.mark.parametrize("include_pad", [True, False])
@pytest.mark.parametrize("kernel,stride,padding,dilation,ceil", [p for p in POOLS if p[3] == (1, 1)])
def test_avg_pool_matches_bruteforce(kernel, stride, padding, dilation, ceil, include_pad, rng) -> None:
    x = torch.randn(1, 2, 7, 10, generator=rng)
    ho = window_count(7, padding[0], padding[1], kernel[0], stride[0], 1, ceil)
    wo = window_count(10, padding[2], padding[3], kernel[1], stride[1], 1, ceil)
    out = ty((1, 2, ho, wo))
    text = f"""func.func @forward(%x: {ty(x.shape)}) -> {out} {{
      %y = tcp.avg_pool2d %x {{kernel = array<i64: {kernel[0]}, {kernel[1]}>, stride = array<i64: {stride[0]}, {stride[1]}>,
        padding = array<i64: {", ".join(map(str, padding))}>, ceil_mode = {str(ceil).lower()}, count_include_pad = {str(include_pad).lower()}}}
        : {ty(x.shape)} -> {out}
      func.return %y : {out}
    }}"""
    (y,) = run(text, x)
    expected = pool_bruteforce(x.double().numpy(), "avg", kernel, stride, padding, (1, 1), ceil, include_pad)
    assert_matches(y, torch.from_numpy(expected).float())


def conv_bruteforce(x: np.ndarray, w: np.ndarray, s: tuple, pad: tuple, d: tuple, groups: int) -> np.ndarray:
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[1]), (pad[2], pad[3])))
    ho = (h + pad[0] + pad[1] - d[0] * (kh - 1) - 1) // s[0] + 1
    wo = (wd + pad[2] + pad[3] - d[1] * (kw - 1) - 1) // s[1] + 1
    out = np.zeros((n, o, ho, wo))
    per_group = o // groups
    for oc in range(o):
        g = oc // per_group
        for a, b in itertools.product(range(kh), range(kw)):
            patch = xp[:, g * cg : (g + 1) * cg, a * d[0] : a * d[0] + s[0] * ho : s[0], b * d[1] : b * d[1] + s[1] * wo : s[1]]
            out[:, oc] += np.einsum("nchw,c->nhw", patch, w[oc, :, a, b])
    return out


@pytest.mark.parametrize(
    "stride,padding,dilation,groups",
    [((1, 1), (0, 2, 1, 0), (1, 1), 1), ((2, 1), (1, 0, 0, 3), (1, 2), 3), ((1, 2), (2, 2, 1, 1), (2, 1), 6)],
)
def test_conv2d_asymmetric_padding_matches_bruteforce(stride, padding, dilation, groups, rng) -> None:
    x = torch.randn(2, 6, 7, 9, generator=rng)
    w = torch.randn(6, 6 // groups, 3, 2, generator=rng)
    expected = conv_bruteforce(x.double().numpy(), w.double().numpy(), stride, padding, dilation, groups)
    out = ty(expected.shape)
    text = f"""func.func @forward(%x: {ty(x.shape)}) -> {out} {{
      %w = tcp.param @w : {ty(w.shape)}
      %y = tcp.conv2d %x, %w {{stride = array<i64: {stride[0]}, {stride[1]}>, padding = array<i64: {", ".join(map(str, padding))}>,
        dilation = array<i64: {dilation[0]}, {dilation[1]}>, groups = {groups} : i64}} : ({ty(x.shape)}, {ty(w.shape)}) -> {out}
      func.return %y : {out}
    }}"""
    (y,) = run(text, x, params={"w": w})
    assert_matches(y, torch.from_numpy(expected).float())


def test_gather_inner_axis_with_matrix_indices(rng) -> None:
    x = torch.randn(3, 7, 2, generator=rng)
    idx = torch.randint(0, 7, (4, 5), generator=rng)
    text = f"""func.func @forward(%x: {ty(x.shape)}, %i: {ty(idx.shape, "i64")}) -> {ty((3, 4, 5, 2))} {{
      %y = tcp.gather %x, %i {{axis = 1 : i64}} : ({ty(x.shape)}, {ty(idx.shape, "i64")}) -> {ty((3, 4, 5, 2))}
      func.return %y : {ty((3, 4, 5, 2))}
    }}"""
    (y,) = run(text, x, idx)
    assert_matches(y, torch.from_numpy(np.take(x.numpy(), idx.numpy(), axis=1)))


def test_gather_out_of_range_is_reported(rng) -> None:
    text = f"""func.func @forward(%x: {ty((4, 2))}, %i: {ty((3,), "i32")}) -> {ty((3, 2))} {{
      %y = tcp.gather %x, %i {{axis = 0 : i64}} : ({ty((4, 2))}, {ty((3,), "i32")}) -> {ty((3, 2))}
      func.return %y : {ty((3, 2))}
    }}"""
    with pytest.raises(IndexError, match=r"tcp.gather: index out of range \[0, 4\)"):
        run(text, torch.randn(4, 2, generator=rng), torch.tensor([0, 4, 1], dtype=torch.int32))


def test_iota_pad_and_casts() -> None:
    text = f"""func.func @forward(%x: {ty((5,))}) -> ({ty((6,), "i64")}, {ty((5,), "i32")}, {ty((5,), "i1")}, {ty((5,), "bf16")}, {ty((8,), "i64")}) {{
      %i = tcp.iota {{start = 7 : i64, step = -3 : i64}} : {ty((6,), "i64")}
      %t = tcp.cast %x : {ty((5,))} to {ty((5,), "i32")}
      %b = tcp.cast %x : {ty((5,))} to {ty((5,), "i1")}
      %h = tcp.cast %x : {ty((5,))} to {ty((5,), "bf16")}
      %p = tcp.pad %i {{low = array<i64: 2>, high = array<i64: 0>, value = 9 : i64}} : {ty((6,), "i64")} -> {ty((8,), "i64")}
      func.return %i, %t, %b, %h, %p : {ty((6,), "i64")}, {ty((5,), "i32")}, {ty((5,), "i1")}, {ty((5,), "bf16")}, {ty((8,), "i64")}
    }}"""
    x = torch.tensor([-2.7, -0.4, 0.0, 0.6, 3.9])
    iota, trunc, nonzero, bf16, padded = run(text, x)
    assert iota.tolist() == [7, 4, 1, -2, -5, -8]
    assert trunc.tolist() == [-2, 0, 0, 0, 3]  # toward zero
    assert nonzero.tolist() == [True, True, False, True, True]
    assert bf16.dtype == torch.bfloat16 and torch.equal(bf16, x.to(torch.bfloat16))
    assert padded.tolist() == [9, 9, 7, 4, 1, -2, -5, -8]


def test_cast_rounds_but_other_ops_keep_precision() -> None:
    """1 + 2^-12 survives float32 arithmetic but not a cast through float16."""
    text = f"""func.func @forward(%x: {ty((1,))}) -> ({ty((1,))}, {ty((1,))}) {{
      %one = tcp.constant {{value = 2.44140625e-04 : f64}} : {ty((1,))}
      %a = tcp.add %x, %one : {ty((1,))}
      %h = tcp.cast %a : {ty((1,))} to {ty((1,), "f16")}
      %back = tcp.cast %h : {ty((1,), "f16")} to {ty((1,))}
      func.return %a, %back : {ty((1,))}, {ty((1,))}
    }}"""
    kept, rounded = run(text, torch.ones(1))
    assert kept.item() == 1 + 2**-12 and rounded.item() == 1.0


def test_integer_clamp_and_boolean_reduction() -> None:
    text = f"""func.func @forward(%x: {ty((2, 4), "i64")}, %m: {ty((2, 4), "i1")}) -> ({ty((2, 4), "i64")}, {ty((2,), "i1")}) {{
      %c = tcp.clamp %x {{min = -1.5 : f64, max = 2.9 : f64}} : {ty((2, 4), "i64")}
      %a = tcp.reduce_max %m {{axes = array<i64: 1>, keepdim = false}} : {ty((2, 4), "i1")} -> {ty((2,), "i1")}
      func.return %c, %a : {ty((2, 4), "i64")}, {ty((2,), "i1")}
    }}"""
    x = torch.tensor([[-5, -1, 2, 7], [0, 3, -2, 1]])
    m = torch.tensor([[False, False, True, False], [False, False, False, False]])
    clamped, any_ = run(text, x, m)
    assert clamped.tolist() == [[-1, -1, 2, 2], [0, 2, -1, 1]]  # bounds truncated to -1 and 2
    assert any_.tolist() == [True, False]


def test_isolated_group_runs_its_body(rng) -> None:
    text = f"""func.func @forward(%x: {ty((3,))}, %y: {ty((3,))}) -> {ty((3,))} {{
      %g = tcp.isolated_group(%x, %y) : ({ty((3,))}, {ty((3,))}) -> {ty((3,))} {{
      ^bb0(%a: {ty((3,))}, %b: {ty((3,))}):
        %m = tcp.mul %a, %b : {ty((3,))}
        %e = tcp.exp %m : {ty((3,))}
        tcp.yield %e : {ty((3,))}
      }}
      %r = tcp.neg %g : {ty((3,))}
      func.return %r : {ty((3,))}
    }}"""
    x, y = torch.randn(3, generator=rng), torch.randn(3, generator=rng)
    (r,) = run(text, x, y)
    assert_matches(r, -(x * y).exp())


def test_float64_precision_is_more_accurate(rng) -> None:
    """Summing many terms: float64 compute lands on the exact sum, float32 does not."""
    n = 1 << 16
    x = (torch.rand(n, generator=rng) * 1e4).to(torch.float32)
    text = f"""func.func @forward(%x: {ty((n,))}) -> {ty(())} {{
      %s = tcp.reduce_sum %x {{axes = array<i64: 0>, keepdim = false}} : {ty((n,))} -> {ty(())}
      func.return %s : {ty(())}
    }}"""
    program = Program(parse_ir(text), ParamStore())
    exact = x.double().sum()
    wide = ReferenceExecutor(program, "float64", keep_precision=True).run([x])[0]
    assert wide.dtype == torch.float64 and abs(wide.item() - exact.item()) <= 1e-9 * exact.item()
    narrow = ReferenceExecutor(program, "float32").run([x])[0]
    assert narrow.dtype == torch.float32


def test_all_ops_program_runs_in_both_precisions(rng) -> None:
    """Every op executes, and float32 agrees with float64 to float32 accuracy."""
    text = (Path(__file__).parents[1] / "ir" / "all_ops.mlir").read_text()
    module = parse_ir(text)
    program = Program(module, ParamStore())
    for op in program.param_ops():
        program.params.add(op.param_name, torch.rand(shape_of(op.result), generator=rng) + 0.5)
    inputs = [
        torch.randn(2, 3, 8, 8, generator=rng),
        torch.randint(0, 10, (2, 5), generator=rng),
        torch.randn(4, 6, generator=rng),
    ]
    narrow = ReferenceExecutor(program, "float32").run(inputs)
    wide = ReferenceExecutor(program, "float64", keep_precision=True).run(inputs)
    for a, b in zip(narrow, wide):
        if a.is_floating_point():
            assert_matches(a, b.float(), torch.float32)
        else:
            assert torch.equal(a, b)


def test_constants_hold_their_element_types_value() -> None:
    text = f"""func.func @forward() -> ({ty((2,), "f16")}, {ty((2,))}) {{
      %h = tcp.constant {{value = 1.000000e-01 : f64}} : {ty((2,), "f16")}
      %f = tcp.constant {{value = 1.000000e-01 : f64}} : {ty((2,))}
      func.return %h, %f : {ty((2,), "f16")}, {ty((2,))}
    }}"""
    program = Program(parse_ir(text), ParamStore())
    half, single = ReferenceExecutor(program, "float64", keep_precision=True).run([])
    assert half[0].item() == torch.tensor(0.1, dtype=torch.float16).item()
    assert single[0].item() == torch.tensor(0.1, dtype=torch.float32).item()
