"""A strided stem convolution on 4 channels fed by TMA: each kernel row of the window read
as one box of an overlapping strided view of the padded NHWC input, against cuDNN's
first-layer kernel and the pointer-fed row kernel of ``bench/stem_pool_probe.py``.

ResNet-50's stem (7x7, stride 2, 3 channels padded to 4, 64 out) is the largest single gap
of its serving-batch programs: 213 us at batch 128 on an H200 against a floor of about 61
(its 256 MB of NHWC input and output at 4.2 TB/s; 46 GFLOP with K padded to 224, 63 us at
732 TFLOP/s), cuDNN's mma.sync first-layer kernel at 166 TFLOP/s
(``compile-profile-2026-11-28-h200-resnet50-b128-summed.json``). Pointer-fed Triton row
tiles reached 200.6 us (``stem-pool-probe-2026-11-29-h200.json``): 7 K steps a tile, each
a gather of 8-byte runs, so a tile's loads barely overlap its products.

With the input padded in space as well as in channels, output pixel (oh, ow)'s kernel row r
reads ``S * C`` (padded to ``KS``) contiguous elements starting at padded row
``oh * STRIDE + r``, column ``ow * STRIDE``. Over (n, oh, r, ow, k) that is an affine view
with strides (Hp*Wp*C, STRIDE*Wp*C, Wp*C, STRIDE*C, 1): every stride but the last a
multiple of 16 bytes when ``STRIDE * C * 2`` is, so a 5-D TMA descriptor walks it, and a
tile of BH x BW output pixels' kernel row is one box (the rows overlap; TMA does not mind).
For one-row tiles a 4-D view does (n, padded row, ow, k), the row being ``oh * STRIDE + r``.
Columns past the output are zero-filled by TMA on the way in and clipped on the way out. A
tile's K loop is its ``R`` kernel rows, each a wgmma fed from shared memory as TMA left it;
persistent programs keep that pipeline running from one tile into the next.

    python bench/stem_tma_probe.py [--shapes resnet-b32,resnet-b128] [--out DIR]   # GPU
    TRITON_INTERPRET=1 python bench/stem_tma_probe.py --device cpu --shapes tiny   # the flow, checked

Each config's output is checked against float64 first (not timed when wrong); times are
CUDA-graph replays (``dnnc.timing.device_time_ms``). Beside them: the pointer-fed row
kernels and torch's channels-last convolution + ReLU (eager's kernels). cuDNN's plans for
the graph dnnc builds (convolution, bias, ReLU, NHWC) come from ``python
bench/cudnn_plan_probe.py --set resnet50 --batch N --only stem``, run in the same call.
Writes ``DIR/stem-tma.json``.

Not yet run on a GPU: checked on Triton's interpreter, and built for sm_90 by Triton 3.9's
compiler without a GPU (TMA loads and stores, wgmma; ``tests/bench/test_stem_tma_probe.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.stem_pool_probe import ROW_CONFIGS, _rel, conv_rows, out_size, pack_input, pack_weight, reference
from bench.stem_pool_probe import SHAPES as STEM_SHAPES

SHAPES = {
    "tiny": (2, 3, 20, 16, 7, 2, 3),
    "tiny-3x3": (1, 3, 33, 16, 3, 2, 1),
    **{name: shape for name, shape in STEM_SHAPES.items() if name.startswith("resnet")},
    "efficientnet-b32": (32, 3, 224, 32, 3, 2, 1),
}
"""(batch, in channels, size, out channels, window, stride, padding)."""
C = 4
"""Input channels, zero-padded: 4 x 2 bytes x stride 2 makes a column step of 16 bytes."""
CONFIGS = [
    # (BH, BW, warps, stages, persistent programs per SM (0: one tile a program), view rank)
    (1, 128, 4, 3, 0, 5),
    (1, 128, 8, 4, 0, 5),
    (2, 64, 4, 3, 0, 5),
    (8, 16, 4, 3, 0, 5),
    (1, 64, 4, 4, 0, 5),
    (1, 128, 4, 3, 1, 5),
    (1, 128, 4, 3, 2, 5),
    (2, 64, 4, 4, 2, 5),
    (1, 64, 4, 4, 2, 5),
    (1, 128, 4, 3, 0, 4),
    (1, 128, 4, 3, 2, 4),
    (1, 64, 4, 4, 2, 4),
]
"""A view of rank 4, (n, padded row, ow, k), serves one-row tiles: kernel row r of output
row oh is padded row ``oh * STRIDE + r``. Rank 5 adds the kernel row as a dimension of its
own, for tiles several output rows tall."""


@triton.jit
def _stem_tile(
    ad, wd, b_ptr, yd, n, oh0, ow0,
    R: tl.constexpr, KS: tl.constexpr, CO: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
    ROWS_VIEW: tl.constexpr,
):  # fmt: skip
    """Output pixels (n, oh0 .. +BH, ow0 .. +BW), all ``CO`` channels: the window's kernel
    rows as ``R`` TMA-fed products, then bias, ReLU and a TMA store. ``ROWS_VIEW``: the
    stride, where ``ad`` is the rank-4 view of one-row tiles; 0 for the rank-5 view."""
    acc = tl.zeros([BH * BW, CO], tl.float32)
    for r in tl.range(0, R):
        if ROWS_VIEW:
            a = ad.load([n, oh0 * ROWS_VIEW + r, ow0, 0]).reshape(BW, KS)
        else:
            a = ad.load([n, oh0, r, ow0, 0]).reshape(BH * BW, KS)
        acc = tl.dot(a, wd.load([r * CO, 0]).T, acc)
    co = tl.arange(0, CO)
    y = tl.maximum(acc + tl.load(b_ptr + co).to(tl.float32)[None, :], 0.0)
    yd.store([n, oh0, ow0, 0], y.to(b_ptr.dtype.element_ty).reshape(1, BH, BW, CO))


@triton.jit
def stem_tiles(
    ad, wd, b_ptr, yd, OH, OW,
    R: tl.constexpr, KS: tl.constexpr, CO: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr,
    ROWS_VIEW: tl.constexpr = 0,
):  # fmt: skip
    """One tile a program."""
    tw, th = tl.cdiv(OW, BW), tl.cdiv(OH, BH)
    t = tl.program_id(0)
    _stem_tile(ad, wd, b_ptr, yd, t // (tw * th), (t // tw) % th * BH, t % tw * BW, R, KS, CO, BH, BW, ROWS_VIEW)


@triton.jit
def stem_persistent(
    ad, wd, b_ptr, yd, N, OH, OW,
    R: tl.constexpr, KS: tl.constexpr, CO: tl.constexpr, BH: tl.constexpr, BW: tl.constexpr, PROGRAMS: tl.constexpr,
    ROWS_VIEW: tl.constexpr = 0,
):  # fmt: skip
    """``PROGRAMS`` programs walk the tiles, the tile loop flattened with the kernel-row loop
    so that the next tile's first boxes load while this one's last products run."""
    tw, th = tl.cdiv(OW, BW), tl.cdiv(OH, BH)
    for t in tl.range(tl.program_id(0), N * th * tw, PROGRAMS, flatten=True):
        _stem_tile(ad, wd, b_ptr, yd, t // (tw * th), (t // tw) % th * BH, t % tw * BW, R, KS, CO, BH, BW, ROWS_VIEW)


def padded_input(x: torch.Tensor, r: int, s: int, stride: int, pad: int) -> tuple[torch.Tensor, int]:
    """``(N, Cin, H, W)`` -> NHWC on ``C`` channels, zero-padded in space so that every
    output pixel's kernel rows lie inside: ``(N, Hp, Wp, C)``, and the ``KS`` each row reads."""
    _, _, h, w = x.shape
    oh, ow = out_size(h, r, stride, pad), out_size(w, s, stride, pad)
    ks = triton.next_power_of_2(s * C)
    hp = (oh - 1) * stride + r
    wp = (ow - 1) * stride + ks // C
    wp += wp % 2  # a row of Wp * C * 2 bytes, a multiple of 16 as TMA's strides must be
    nhwc = pack_input(x, C)
    return F.pad(nhwc, (0, 0, pad, wp - w - pad, pad, hp - h - pad)).contiguous(), ks


def descriptors(
    xp: torch.Tensor, wp: torch.Tensor, y: torch.Tensor, r: int, stride: int, ks: int, bh: int, bw: int, rank: int = 5
):
    """The input's overlapping view, (n, oh, kernel row, ow, k) or (``rank`` 4, one-row
    tiles) (n, padded row, ow, k), the weight as ``(R * CO, KS)`` rows, the NHWC output."""
    n, hp, wpad, _ = xp.shape
    _, oh, ow, co = y.shape
    if rank == 4:
        assert bh == 1, "the rank-4 view serves one-row tiles"
        ad = TensorDescriptor(xp, [n, hp, ow, ks], [hp * wpad * C, wpad * C, stride * C, 1], [1, 1, bw, ks])
    else:
        strides = [hp * wpad * C, stride * wpad * C, wpad * C, stride * C, 1]
        ad = TensorDescriptor(xp, [n, oh, r, ow, ks], strides, [1, bh, 1, bw, ks])
    wd = TensorDescriptor.from_tensor(wp, [co, ks])
    yd = TensorDescriptor.from_tensor(y, [1, bh, bw, co])
    return ad, wd, yd


def stem_weight(w: torch.Tensor) -> torch.Tensor:
    """``(O, Cin, R, S)`` -> ``(R * O, KS)``: kernel row r's weights for output o in row
    ``r * O + o``, k = s * C + channel (``pack_weight``'s order), K contiguous for TMA."""
    packed, ks = pack_weight(w, C)  # (R, KS, O)
    return packed.permute(0, 2, 1).reshape(-1, ks).contiguous()


def stem_tma(xp, wk, ks, b, shape, cfg, sms: int = 132):
    n, _, size, co, k, stride, pad = shape
    bh, bw, warps, stages, per_sm, rank = cfg
    oh = out_size(size, k, stride, pad)
    y = torch.empty(n, oh, oh, co, dtype=xp.dtype, device=xp.device)
    ad, wd, yd = descriptors(xp, wk, y, k, stride, ks, bh, bw, rank)
    view = stride if rank == 4 else 0
    tiles = n * triton.cdiv(oh, bh) * triton.cdiv(oh, bw)
    launch = {"num_warps": warps, "num_stages": stages}
    if per_sm:
        programs = min(tiles, sms * per_sm)
        stem_persistent[(programs,)](ad, wd, b, yd, n, oh, oh, k, ks, co, bh, bw, programs, view, **launch)
    else:
        stem_tiles[(tiles,)](ad, wd, b, yd, oh, oh, k, ks, co, bh, bw, view, **launch)
    return y


def _checked_us(run, want: torch.Tensor, timed: bool) -> dict:
    try:
        got = run().permute(0, 3, 1, 2)
    except Exception as e:  # a config past the shared memory, or one the compiler refuses
        return {"status": f"error: {type(e).__name__}: {str(e)[:160]}"}
    entry: dict = {"rel_error": _rel(got, want)}  # NaN where either holds one
    if not entry["rel_error"] <= 5e-3:  # NaN included
        entry["status"] = "wrong"
    elif timed:
        from dnnc.timing import device_time_ms

        entry["us"] = round(device_time_ms(run) * 1e3, 2)
    return entry


def probe(name: str, device: str = "cuda", configs: list | None = None) -> dict:
    shape = SHAPES[name]
    n, cin, size, co, k, stride, pad = shape
    timed = device == "cuda"
    dtype = torch.float16 if timed else torch.float32
    torch.manual_seed(0)
    x = torch.randn(n, cin, size, size, device=device)
    w = torch.randn(co, cin, k, k, device=device) / (cin * k * k) ** 0.5
    b = torch.randn(co, device=device) * 0.1
    want = reference(x.double(), w.double(), b.double(), stride, pad, pool=False).float()
    xh, wh, bh = x.to(dtype), w.to(dtype), b.to(dtype)
    sms = torch.cuda.get_device_properties(0).multi_processor_count if timed else 4
    xp, ks = padded_input(xh, k, k, stride, pad)
    wk = stem_weight(wh)
    oh = out_size(size, k, stride, pad)
    row: dict = {
        "shape": dict(zip(("batch", "cin", "size", "cout", "window", "stride", "pad"), shape)),
        "gflop": 2 * n * oh * oh * co * cin * k * k / 1e9,
        "gflop_padded": 2 * n * oh * oh * co * k * ks / 1e9,
        "floor_mb": (n * size * size * C + n * oh * oh * co) * 2 / 1e6,
        "tma": {},
    }
    for cfg in configs or CONFIGS:
        tag = "{}x{}_w{}s{}".format(*cfg[:4]) + (f"_pers{cfg[4]}" if cfg[4] else "") + f"_v{cfg[5]}"
        row["tma"][tag] = _checked_us(lambda cfg=cfg: stem_tma(xp, wk, ks, bh, shape, cfg, sms), want, timed)
        print(name, tag, row["tma"][tag], flush=True)
    if timed:
        xn = pack_input(xh, C)
        wr, ksr = pack_weight(wh, C)
        rows = {}
        for cfg in ROW_CONFIGS:
            tag = "rows_{BLOCK_OW}x{ROWS}_u{UNROLL}s{num_stages}".format(**cfg)
            rows[tag] = _checked_us(lambda cfg=cfg: conv_rows(xn, wr, ksr, bh, shape, cfg), want, timed)
        row["pointer_rows"] = rows
        torch.backends.cudnn.benchmark = True
        xc = xh.contiguous(memory_format=torch.channels_last)
        wc = wh.contiguous(memory_format=torch.channels_last)
        row["cudnn_conv_relu"] = _checked_us(
            lambda: reference(xc, wc, bh, stride, pad, pool=False).permute(0, 2, 3, 1), want, timed
        )
        best = {
            label: min(((v["us"], t) for t, v in entries.items() if "us" in v), default=None)
            for label, entries in (("tma", row["tma"]), ("pointer_rows", rows))
        }
        row["best"] = {**best, "cudnn_conv_relu": row["cudnn_conv_relu"].get("us")}
        print(name, row["best"], flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="resnet-b32,resnet-b128,resnet-b1,efficientnet-b32")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    args = ap.parse_args()
    if args.device == "cuda":
        from bench.gpu_timing import environment

        env = environment()
    else:
        env = {"device": "cpu"}
    out: dict = {"environment": env, "rows": []}
    for name in args.shapes.split(","):
        out["rows"].append(probe(name, args.device))
        Path(args.out, "stem-tma.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
