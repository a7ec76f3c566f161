"""A network's stem (a strided convolution on few channels, bias, ReLU, then a 3x3/2 max
pool) as one Triton kernel, against cuDNN's convolution and a pooling kernel after it:
what fusing them would save before the compiler forms such a group.

ResNet-50's stem at batch 32 (H200, ``compile-profile-2026-11-28-h200-resnet50-b32-summed.json``)
runs as cuDNN's first-layer kernel (62 us, an mma.sync kernel at 120 TFLOP/s) writing a
51 MB NHWC tensor, then a pooling kernel reading it back (20 us). The floor of the two fused
is about 15 us: 7.6 GFLOP and 26 MB. Measured (``stem-pool-probe-2026-11-29-h200.json``):
the fused kernel loses at every batch (the horizontal max moves the float32 tile through
shared memory twice per conv row); the convolution alone beats cuDNN's by 6-9%.

The kernel here walks one image's conv rows a band at a time. A conv row is one product tile:
``2 * BLOCK_PW`` output columns by all output channels, K running over the window one kernel
row at a time (``S * C`` contiguous NHWC elements, padded to a power of two), so each operand
row is one contiguous run of the input. The horizontal max over columns (2p-1, 2p, 2p+1) is
taken on the tile (pairs by a reshape, the third column by a gather of the next pair); the
vertical one as the band walks down, the shared odd row carried to the next pooled row. ReLU
and bias commute with the max, so they run once per pooled element.

    python bench/stem_pool_probe.py [--shapes resnet-b32,...] [--out DIR]   # GPU
    TRITON_INTERPRET=1 python bench/stem_pool_probe.py --check-only --shapes tiny   # CPU
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stem_probe import SHAPES as STEM_SHAPES

SHAPES = {
    "tiny": (2, 3, 20, 16, 7, 2, 3),
    "tiny-wide": (1, 3, 150, 16, 7, 2, 3),
    "tiny-3x3": (1, 3, 33, 16, 3, 2, 1),
    **{name: shape for name, shape in STEM_SHAPES.items() if name.startswith("resnet")},
}
"""(batch, in channels, size, out channels, window, stride, padding); pool 3x3/2 after."""

LOOPS = ((1, 2), (0, 2), (0, 3))
"""(UNROLL, num_stages): the kernel-row loop unrolled, or pipelined two or three deep."""
CONFIGS = [
    dict(BLOCK_PW=bp, BAND=band, UNROLL=u, num_warps=4, num_stages=st)
    for bp, band, (u, st) in itertools.product((32, 64), (2, 4), LOOPS)
]
ROW_CONFIGS = [
    dict(BLOCK_OW=bo, ROWS=rows, UNROLL=u, num_warps=4, num_stages=st)
    for bo, rows, (u, st) in itertools.product((64, 128), (1, 2), ((1, 2), (0, 3)))
]


@triton.jit
def _kernel_row(
    x_ptr, w_ptr, n, oh, r, iw, col_ok, k, s, c, co, acc, H, W,
    C: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr, KS: tl.constexpr, CO: tl.constexpr,
):  # fmt: skip
    """``acc`` plus kernel row ``r``'s product: the input row it reads at the row's columns
    (``S * C`` contiguous NHWC elements each) by that row of the packed weight."""
    ih = oh * STRIDE - PAD + r + 0 * s[None, :]  # a tensor: the interpreter masks with tensors only
    a = tl.load(x_ptr + ((n * H + ih) * W + iw) * C + c[None, :], mask=col_ok & (ih >= 0) & (ih < H), other=0.0)
    wr = tl.load(w_ptr + (r * KS + k[:, None]) * CO + co[None, :])
    return tl.dot(a, wr, acc)


@triton.jit
def _conv_row(
    x_ptr, w_ptr, n, oh, ow, k, co, H, W,
    C: tl.constexpr, R: tl.constexpr, S: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
    KS: tl.constexpr, CO: tl.constexpr, M: tl.constexpr, UNROLL: tl.constexpr,
):  # fmt: skip
    """Conv row ``oh`` at columns ``ow`` (``M`` of them), float32, no bias. ``UNROLL``: the
    loop over kernel rows unrolled, else a loop Triton pipelines (``num_stages``)."""
    s = k // C
    c = k % C
    iw = ow[:, None] * STRIDE - PAD + s[None, :]
    col_ok = (iw >= 0) & (iw < W) & (s[None, :] < S)
    acc = tl.zeros([M, CO], dtype=tl.float32)
    if UNROLL:
        for r in tl.static_range(R):
            acc = _kernel_row(x_ptr, w_ptr, n, oh, r, iw, col_ok, k, s, c, co, acc, H, W, C, STRIDE, PAD, KS, CO)
    else:
        for r in range(R):
            acc = _kernel_row(x_ptr, w_ptr, n, oh, r, iw, col_ok, k, s, c, co, acc, H, W, C, STRIDE, PAD, KS, CO)
    return acc


@triton.jit
def _pooled_row(
    x_ptr, w_ptr, n, oh, ow, k, co, H, W, OH, OW,
    C: tl.constexpr, R: tl.constexpr, S: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
    KS: tl.constexpr, CO: tl.constexpr, BLOCK_PW: tl.constexpr, UNROLL: tl.constexpr,
):  # fmt: skip
    """Max of conv row ``oh`` over columns (2p-1, 2p, 2p+1) for each pooled column p of the
    tile (``ow`` = the tile's first pooled column times 2, minus 1, plus 0 .. 2 BLOCK_PW);
    -inf where the conv row or column lies outside the output (the pool's padding)."""
    acc = _conv_row(x_ptr, w_ptr, n, oh, ow, k, co, H, W, C, R, S, STRIDE, PAD, KS, CO, 2 * BLOCK_PW, UNROLL)
    row = oh + 0 * ow
    ok = (ow >= 0) & (ow < OW) & (row >= 0) & (row < OH)
    acc = tl.where(ok[:, None], acc, float("-inf"))
    pair = tl.max(tl.reshape(acc, [BLOCK_PW, 2, CO]), axis=1)
    after = tl.minimum(2 * tl.arange(0, BLOCK_PW) + 2, 2 * BLOCK_PW - 1)
    third = tl.gather(acc, tl.broadcast_to(after[:, None], [BLOCK_PW, CO]), axis=0)
    return tl.maximum(pair, third)


@triton.jit
def conv_pool_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, H, W, OH, OW, PH, PW, TILES_W, BANDS,
    C: tl.constexpr, R: tl.constexpr, S: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
    KS: tl.constexpr, CO: tl.constexpr, BLOCK_PW: tl.constexpr, BAND: tl.constexpr, UNROLL: tl.constexpr,
):  # fmt: skip
    """One program: image ``n``, pooled rows ``[band * BAND, +BAND)``, pooled columns
    ``[tw * (BLOCK_PW - 1), +BLOCK_PW - 1)`` (the tile's last column lacks its right
    neighbour), NHWC output."""
    pid = tl.program_id(0)
    tw = pid % TILES_W
    t = pid // TILES_W
    band = t % BANDS
    n = t // BANDS
    pw0 = tw * (BLOCK_PW - 1)
    ow = 2 * pw0 - 1 + tl.arange(0, 2 * BLOCK_PW)
    k = tl.arange(0, KS)
    co = tl.arange(0, CO)
    p = tl.arange(0, BLOCK_PW)
    pw = pw0 + p
    bias = tl.load(b_ptr + co).to(tl.float32)
    ph0 = band * BAND
    carry = _pooled_row(x_ptr, w_ptr, n, 2 * ph0 - 1, ow, k, co, H, W, OH, OW, C, R, S, STRIDE, PAD, KS, CO, BLOCK_PW, UNROLL)
    for q in range(BAND):
        ph = ph0 + q
        top = _pooled_row(x_ptr, w_ptr, n, 2 * ph, ow, k, co, H, W, OH, OW, C, R, S, STRIDE, PAD, KS, CO, BLOCK_PW, UNROLL)
        bottom = _pooled_row(x_ptr, w_ptr, n, 2 * ph + 1, ow, k, co, H, W, OH, OW, C, R, S, STRIDE, PAD, KS, CO, BLOCK_PW, UNROLL)
        y = tl.maximum(tl.maximum(tl.maximum(carry, top), bottom) + bias[None, :], 0.0)
        carry = bottom
        ok = (p < BLOCK_PW - 1) & (pw < PW) & (ph + 0 * p < PH)
        tl.store(y_ptr + ((n * PH + ph) * PW + pw)[:, None] * CO + co[None, :], y.to(y_ptr.dtype.element_ty), mask=ok[:, None])


@triton.jit
def conv_rows_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, H, W, OH, OW, TILES_W, BANDS,
    C: tl.constexpr, R: tl.constexpr, S: tl.constexpr, STRIDE: tl.constexpr, PAD: tl.constexpr,
    KS: tl.constexpr, CO: tl.constexpr, BLOCK_OW: tl.constexpr, ROWS: tl.constexpr, UNROLL: tl.constexpr,
):  # fmt: skip
    """The convolution alone (bias, ReLU, NHWC store), row tiles as above: its share of the fused kernel."""
    pid = tl.program_id(0)
    tw = pid % TILES_W
    t = pid // TILES_W
    band = t % BANDS
    n = t // BANDS
    ow = tw * BLOCK_OW + tl.arange(0, BLOCK_OW)
    k = tl.arange(0, KS)
    co = tl.arange(0, CO)
    bias = tl.load(b_ptr + co).to(tl.float32)
    for q in range(ROWS):
        oh = band * ROWS + q
        acc = _conv_row(x_ptr, w_ptr, n, oh, ow, k, co, H, W, C, R, S, STRIDE, PAD, KS, CO, BLOCK_OW, UNROLL)
        y = tl.maximum(acc + bias[None, :], 0.0)
        ok = (ow < OW) & (oh + 0 * ow < OH)
        tl.store(y_ptr + ((n * OH + oh) * OW + ow)[:, None] * CO + co[None, :], y.to(y_ptr.dtype.element_ty), mask=ok[:, None])


def pack_input(x: torch.Tensor, c: int) -> torch.Tensor:
    """NCHW -> NHWC with channels zero-padded to ``c``."""
    return F.pad(x.permute(0, 2, 3, 1), (0, c - x.shape[1])).contiguous()


def pack_weight(w: torch.Tensor, c: int) -> tuple[torch.Tensor, int]:
    """``(O, Cin, R, S)`` -> ``(R, KS, O)`` with k = s * c + channel, zero past ``S * c``."""
    o, cin, r, s = w.shape
    ks = triton.next_power_of_2(s * c)
    packed = torch.zeros(r, ks, o, dtype=w.dtype, device=w.device)
    packed[:, : s * c] = F.pad(w, (0, 0, 0, 0, 0, c - cin)).permute(2, 3, 1, 0).reshape(r, s * c, o)
    return packed.contiguous(), ks


def out_size(size: int, k: int, stride: int, pad: int) -> int:
    return (size + 2 * pad - k) // stride + 1


def conv_pool(xp, wp, ks, b, shape, cfg):
    n, _, size, co, k, stride, pad = shape
    c = xp.shape[-1]
    oh = out_size(size, k, stride, pad)
    ph = out_size(oh, 3, 2, 1)
    y = torch.empty(n, ph, ph, co, dtype=xp.dtype, device=xp.device)
    tiles_w = triton.cdiv(ph, cfg["BLOCK_PW"] - 1)
    bands = triton.cdiv(ph, cfg["BAND"])
    conv_pool_kernel[(n * bands * tiles_w,)](
        xp, wp, b, y, size, size, oh, oh, ph, ph, tiles_w, bands,
        C=c, R=k, S=k, STRIDE=stride, PAD=pad, KS=ks, CO=co, BLOCK_PW=cfg["BLOCK_PW"], BAND=cfg["BAND"], UNROLL=cfg["UNROLL"],
        num_warps=cfg["num_warps"], num_stages=cfg.get("num_stages", 2),
    )  # fmt: skip
    return y


def conv_rows(xp, wp, ks, b, shape, cfg):
    n, _, size, co, k, stride, pad = shape
    c = xp.shape[-1]
    oh = out_size(size, k, stride, pad)
    y = torch.empty(n, oh, oh, co, dtype=xp.dtype, device=xp.device)
    tiles_w = triton.cdiv(oh, cfg["BLOCK_OW"])
    bands = triton.cdiv(oh, cfg["ROWS"])
    conv_rows_kernel[(n * bands * tiles_w,)](
        xp, wp, b, y, size, size, oh, oh, tiles_w, bands,
        C=c, R=k, S=k, STRIDE=stride, PAD=pad, KS=ks, CO=co, BLOCK_OW=cfg["BLOCK_OW"], ROWS=cfg["ROWS"], UNROLL=cfg["UNROLL"],
        num_warps=cfg["num_warps"], num_stages=cfg["num_stages"],
    )  # fmt: skip
    return y


def reference(x, w, b, stride, pad, pool=True):
    y = F.relu(F.conv2d(x, w, b, stride=stride, padding=pad))
    return F.max_pool2d(y, 3, 2, 1) if pool else y


def _rel(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).norm() / want.float().norm().clamp_min(1e-12))


def _checked_and_timed(name: str, label: str, run, configs: list[dict], args: tuple, want, check_only: bool) -> list[dict]:
    """Each config of ``run`` checked against ``want`` first, then (on a GPU) timed as a
    CUDA-graph replay; a config that does not build (shared memory, registers) or is
    wrong is recorded so, not timed."""
    entries = []
    for cfg in configs:
        try:
            got = run(*args, cfg).permute(0, 3, 1, 2)
        except Exception as e:  # a config past the shared memory or registers
            entries.append({**cfg, "status": f"error: {type(e).__name__}"})
            continue
        entry = {**cfg, "rel_error": _rel(got, want)}
        if not entry["rel_error"] <= 5e-3:  # NaN included
            entry["status"] = "wrong"
        elif not check_only:
            from bench.gpu_timing import in_cuda_graph, median_ms

            replay, _ = in_cuda_graph(lambda cfg=cfg: run(*args, cfg))
            entry["ms"] = median_ms(replay)
        entries.append(entry)
        print(name, label, entry, flush=True)
    return entries


def probe(name: str, check_only: bool, configs: list[dict], row_configs: list[dict]) -> dict:
    shape = SHAPES[name]
    n, cin, size, co, k, stride, pad = shape
    device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device == "cuda" else torch.float32
    torch.manual_seed(0)
    x = torch.randn(n, cin, size, size, device=device)
    w = torch.randn(co, cin, k, k, device=device) / (cin * k * k) ** 0.5
    b = torch.randn(co, device=device) * 0.1
    want = reference(x.double(), w.double(), b.double(), stride, pad).float()
    want_conv = reference(x.double(), w.double(), b.double(), stride, pad, pool=False).float()
    xh, wh, bh = x.to(dtype), w.to(dtype), b.to(dtype)
    cpad = max(4, triton.next_power_of_2(cin))
    xp = pack_input(xh, cpad)
    wp, ks = pack_weight(wh, cpad)
    oh = out_size(size, k, stride, pad)
    ph = out_size(oh, 3, 2, 1)
    record: dict = {"shape": dict(zip(("batch", "cin", "size", "cout", "window", "stride", "pad"), shape))}
    flops = 2 * n * oh * oh * co * cin * k * k
    record["gflop"] = flops / 1e9
    record["floor_bytes_mb"] = (n * size * size * cpad + n * ph * ph * co) * 2 / 1e6
    fused = _checked_and_timed(name, "fused", conv_pool, configs, (xp, wp, ks, bh, shape), want, check_only)
    rows = _checked_and_timed(name, "conv rows", conv_rows, row_configs, (xp, wp, ks, bh, shape), want_conv, check_only)
    record["fused"] = fused
    record["conv_rows"] = rows
    if not check_only:
        from bench.gpu_timing import in_cuda_graph, median_ms

        torch.backends.cudnn.benchmark = True
        xc = xh.contiguous(memory_format=torch.channels_last)
        wc = wh.contiguous(memory_format=torch.channels_last)
        steps = {
            "cudnn_conv_relu_pool": lambda: reference(xc, wc, bh, stride, pad),
            "cudnn_conv_relu": lambda: reference(xc, wc, bh, stride, pad, pool=False),
        }
        conv_out = reference(xc, wc, bh, stride, pad, pool=False)
        steps["pool_alone"] = lambda: F.max_pool2d(conv_out, 3, 2, 1)
        for label, fn in steps.items():
            replay, _ = in_cuda_graph(fn)
            record[label + "_ms"] = median_ms(replay)
        record["cudnn_rel_error"] = _rel(reference(xc, wc, bh, stride, pad), want)
        timed = [e for e in fused if "ms" in e]
        if timed:
            record["fused_best"] = min(timed, key=lambda e: e["ms"])
        timed = [e for e in rows if "ms" in e]
        if timed:
            record["conv_rows_best"] = min(timed, key=lambda e: e["ms"])
        print(name, {key: v for key, v in record.items() if key not in ("fused", "conv_rows")}, flush=True)
    return record


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="resnet-b1,resnet-b32,resnet-b128")
    ap.add_argument("--check-only", action="store_true", help="check outputs, time nothing (CPU interpreter)")
    ap.add_argument("--quick", action="store_true", help="two configs of each kernel")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    configs, row_configs = (CONFIGS[:2], ROW_CONFIGS[:2]) if args.quick else (CONFIGS, ROW_CONFIGS)
    if args.check_only:
        configs = [CONFIGS[0], CONFIGS[1]]
        row_configs = [ROW_CONFIGS[0], ROW_CONFIGS[1]]
    results = [probe(s, args.check_only, configs, row_configs) for s in args.shapes.split(",")]
    if args.check_only:
        return 0 if all("wrong" not in str(r) for r in results) else 1
    from bench.gpu_timing import environment, result_path

    out = Path(args.out) if args.out else Path(__file__).with_name("results")
    path = result_path(out, "stem-pool-probe")
    path.write_text(json.dumps({"environment": environment(), "results": results}, indent=1) + "\n")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
