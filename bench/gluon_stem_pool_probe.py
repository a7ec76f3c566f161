"""ResNet's stem with its 3x3/2 max pool in the epilogue (+ bias + ReLU, NHWC out), one Gluon
kernel, against the stem alone: what fusing the pool into the Gluon stem would save.

Why: in ResNet-50's program on an H200 the stem stores 51 MB (b32) that the max pool reads
back, the two 44.8 + 19.2 us at batch 32 and 152.4 + 65.7 at 128 (steps in place,
``compile-profile-2026-11-30-h200-resnet50-*-stem-region-after.json``); their floor as one
kernel is about 15 and 61. ``gluon_stem_probe.py --ablate``: storing a quarter of the stem's
output (what a pooled output takes) ran it 38.6 / 131.1 us against 44.7 / 151.0.

The kernel is the compiler's stem (``dnnc/backends/triton/stem.py``: a product of 64 output
channels by a tile of 8 output rows x 16 columns on 2 x 2 cells of the image, a loader that
reads the tile's region once and builds the four tap-column copies) with the tiles walked so
the pool can be taken on them. A program owns strips of one image: 16 stem columns from
``14 s - 1`` (7 pooled columns, the first and last stem column only read by the pool), and
walks its 14 bands of 8 stem rows top to bottom. A band pools 4 rows: stem rows ``2i - 1 ..
2i + 1`` of the band, row -1 the last row of the band before, carried in shared memory (zero
above the image: the values are ReLU's, at least 0, and every window holds one). The pool
goes through shared memory: the tile is stored as [pixels, channels], the horizontal max
read as three views one pixel apart, stored back, the vertical max read as three views a
row apart (views from a row a subslice could not start at: ``_reinterpret``, which Triton
3.6 builds). Columns overlap by 2 of 16: 14% more products and loads than the stem alone.

Every kernel's result is checked against float32 first, then timed as a CUDA-graph replay
(``dnnc.timing.device_time_ms``). Run on the GPU: ``python bench/gluon_stem_pool_probe.py``
(writes ``$OUT/gluon-stem-pool.json``); ``--compile-only`` builds it for sm_90 without a GPU.

Measured on an H200 (2026-11-30, BENCHMARKS.md, fortieth session): 65.0 us at batch 32 and
245.7 at 128, against the program's stem and pool apart, 64.0 and 218.1: not faster. The
pooling's shared-memory passes run on the product's warpgroup after each tile.
"""

from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from bench.gluon_common import built_summary, gpu_run, kept, printed_builds, probe_arguments
from bench.gluon_common import thread_barrier as _thread_barrier
from bench.gluon_common import viewed as _viewed

SIDE = gl.constexpr(224)
"""The image's rows and columns (3 channels)."""
STEM_SIDE = gl.constexpr(112)
POOL_SIDE = gl.constexpr(56)
BH = gl.constexpr(8)
"""Stem rows a band (a tile: 8 rows by 16 columns, 128 pixels, wgmma's N)."""
BANDS = gl.constexpr(STEM_SIDE // BH)
STRIPS = gl.constexpr(8)
"""Strips an image: 7 pooled columns each."""
PITCH = gl.constexpr(12)
"""Cell rows of a tap-column copy in shared memory (BH + 3 read), as in the compiler's stem."""
REGION = gl.constexpr(32)
REGION_ROWS = gl.constexpr(12)
STAGES = gl.constexpr(2)
PROGRAMS_PER_SM = 2
LOADER_REGS = 96
BATCHES = (1, 32, 128)
MATRIX = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=2))


@gluon.jit
def _tile(j, pid, programs):
    """This program's tile ``j``: its image, band and strip."""
    strip = pid + (j // BANDS) * programs
    return strip // STRIPS, j % BANDS, strip % STRIPS


@gluon.jit
def _fill(image, q_smem, first: gl.constexpr, n, y0, x0):
    """The region's cell rows ``first .. first + 3``: cell ``(r, cc)`` the 2 x 2 pixels of
    each channel at the window corner of stem row ``y0 + r``, column ``x0 + cc``."""
    COUNT: gl.constexpr = 4 * REGION
    cells: gl.constexpr = gl.BlockedLayout([1, 16], [32, 1], [4, 1], [1, 0])
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0])
    region = q_smem.index(first * REGION)._reinterpret(gl.float16, [COUNT, 16], plain)
    cell = gl.arange(0, COUNT, layout=gl.SliceLayout(1, cells))[:, None]
    ch = gl.arange(0, 16, layout=gl.SliceLayout(0, cells))[None, :]
    k = ch % 4
    r = first + cell // REGION
    cc = cell % REGION
    y = 2 * (y0 + r) + ch // 8 - 3
    x = 2 * (x0 + cc) + (ch // 4) % 2 - 3
    taken = (r < BH + 3) & (cc < 19) & (k < 3) & (y >= 0) & (y < SIDE) & (x >= 0) & (x < SIDE)
    region.store(gl.load(image + ((n * 3 + k) * SIDE + y) * SIDE + x, mask=taken, other=0.0))


@gluon.jit
def _copy(q_smem, rows, first: gl.constexpr, tx: gl.constexpr, layout: gl.constexpr):
    """Cell rows ``first ..`` of copy ``tx``: the region's from its column ``tx``."""
    R: gl.constexpr = rows.type.shape[0] // 16
    plain3: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[2, 1, 0])
    region = q_smem.index(first * REGION + tx)._reinterpret(gl.float16, [R, REGION, 16], plain3)
    values = region.slice(0, 16, dim=1).load(layout)
    rows.store(gl.reshape(values, [R * 16, 16]))


@gluon.jit
def _loader(image, bufs, bars, pid, programs, tiles):
    _, x_smem, q_smem, _ = bufs
    ready, empty = bars
    cells3: gl.constexpr = gl.BlockedLayout([1, 1, 16], [2, 16, 1], [4, 1, 1], [2, 1, 0])
    tap3: gl.constexpr = gl.BlockedLayout([1, 1, 8], [1, 16, 2], [4, 1, 1], [2, 1, 0])
    for j in range(tiles):
        slot = j % STAGES
        n, band, strip = _tile(j, pid, programs)
        for first in gl.static_range(0, REGION_ROWS, 4):
            _fill(image, q_smem, first, n, band * BH, strip * 14 - 1)
        _thread_barrier()
        mbarrier.wait(empty.index(slot), ((j // STAGES) & 1) ^ 1)
        stage = _viewed(x_smem.index(slot * 3), gl.float16, [PITCH * 4, 16, 16], MATRIX)
        for tx in gl.static_range(4):
            _copy(q_smem, _viewed(stage.index(PITCH * tx), gl.float16, [128, 16], MATRIX), 0, tx, cells3)
            _copy(q_smem, _viewed(stage.index(PITCH * tx + 8), gl.float16, [64, 16], MATRIX), 8, tx, tap3)
        fence_async_shared()
        _thread_barrier()
        mbarrier.arrive(ready.index(slot))


@gluon.jit
def _rows(p_smem, first, count: gl.constexpr):
    """Pixels ``first ..`` of the pooling buffer (64 channels each) as a [count, 64] matrix."""
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0])
    return p_smem.index(first)._reinterpret(gl.float16, [count, 64], plain)


@gluon.jit
def _product(image, bufs, bars, pid, programs, tiles, bias, out):
    """The default partition: each tile's sixteen tap products, then bias, ReLU and the pool.
    The pooling buffer holds 16 pixels of the carried row (the band above's last, its
    horizontal max), then the tile's 128, then slack the shifted views read past."""
    w_smem, x_smem, _, p_smem = bufs
    ready, empty = bars
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, 128, 16])
    rows_layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    channels = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
    pixels = gl.arange(0, 128, layout=gl.SliceLayout(0, acc_layout))
    b = gl.load(bias + channels).to(gl.float32)
    q = gl.arange(0, 128, layout=gl.SliceLayout(1, rows_layout))[:, None]
    oc = gl.arange(0, 64, layout=gl.SliceLayout(0, rows_layout))[None, :]
    for j in range(tiles):
        slot = j % STAGES
        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
        acc = gl.zeros([64, 128], gl.float32, acc_layout)
        stage = _viewed(x_smem.index(slot * 3), gl.float16, [PITCH * 4, 16, 16], MATRIX)
        for ty in gl.static_range(4):
            for tx in gl.static_range(4):
                cells = _viewed(stage.index(PITCH * tx + ty), gl.float16, [128, 16], MATRIX)
                acc = warpgroup_mma(w_smem.index(ty * 4 + tx), cells.permute((1, 0)), acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index(slot))
        n, band, strip = _tile(j, pid, programs)
        column = strip * 14 - 1 + pixels % 16
        inside = (column >= 0) & (column < STEM_SIDE)
        y = gl.where(inside[None, :], gl.maximum(acc + b[:, None], 0.0), 0.0).to(gl.float16)
        # the carried row: the band above's last row, pooled across (zero above the image)
        carried = _rows(p_smem, 128, 16).load(rows_layout)
        _thread_barrier()
        _rows(p_smem, 0, 16).store(gl.where(band > 0, carried, 0.0))
        _rows(p_smem, 16, 128).permute((1, 0)).store(y)
        _thread_barrier()
        across = gl.maximum(
            gl.maximum(_rows(p_smem, 16, 128).load(rows_layout), _rows(p_smem, 17, 128).load(rows_layout)),
            _rows(p_smem, 18, 128).load(rows_layout),
        )
        _thread_barrier()
        _rows(p_smem, 16, 128).store(across)
        _thread_barrier()
        pooled = gl.maximum(
            gl.maximum(_rows(p_smem, 0, 128).load(rows_layout), _rows(p_smem, 16, 128).load(rows_layout)),
            _rows(p_smem, 32, 128).load(rows_layout),
        )
        # pixel q = 32 i + 2 c pools output row 4 band + i, column 7 strip + c
        kept_q = ((q // 16) % 2 == 0) & (q % 2 == 0) & ((q % 16) // 2 < 7)
        pool_row = band * 4 + q // 32
        pool_column = strip * 7 + (q % 16) // 2
        target = ((n * POOL_SIDE + pool_row) * POOL_SIDE + pool_column) * 64 + oc
        gl.store(out + target, pooled, mask=kept_q & (oc < 64))


@gluon.jit
def stem_pool(image, weight, bias, out, STRIPS_TOTAL, LOADER_REGS: gl.constexpr):
    """out (N x 56 x 56 x 64) = maxpool3x3/2(relu(conv7x7/2(image, weight) + bias)), image
    N x 3 x 224 x 224, weight 64 x 3 x 7 x 7."""
    tap: gl.constexpr = gl.BlockedLayout([1, 8], [16, 2], [4, 1], [1, 0])
    copies: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=3)
    plain: gl.constexpr = gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0])
    w_smem = gl.allocate_shared_memory(gl.float16, [16, 64, 16], MATRIX)
    x_smem = gl.allocate_shared_memory(gl.float16, [STAGES * 3, 16, 16, 16], copies)
    q_smem = gl.allocate_shared_memory(gl.float16, [REGION_ROWS * REGION + 8, 1, 16], plain)
    p_smem = gl.allocate_shared_memory(gl.float16, [160, 1, 64], plain)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    # tap (ty, tx)'s 64 x 16 weight matrix: channel (dy * 2 + dx) * 4 + k at kernel row
    # 2 ty + dy, column 2 tx + dx (zero past 7 and at the fourth channel)
    o = gl.arange(0, 64, layout=gl.SliceLayout(1, tap))[:, None]
    ch = gl.arange(0, 16, layout=gl.SliceLayout(0, tap))[None, :]
    for ty in gl.static_range(4):
        for tx in gl.static_range(4):
            ky = 2 * ty + ch // 8
            kx = 2 * tx + (ch // 4) % 2
            taken = (ch % 4 < 3) & (ky < 7) & (kx < 7)
            values = gl.load(weight + ((o * 3 + ch % 4) * 7 + ky) * 7 + kx, mask=taken, other=0.0)
            w_smem.index(ty * 4 + tx).store(values)
    fence_async_shared()
    _thread_barrier()
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    tiles = gl.cdiv(STRIPS_TOTAL - pid, programs) * BANDS
    bufs = (w_smem, x_smem, q_smem, p_smem)
    bars = (ready, empty)
    gl.warp_specialize(
        [(_product, (image, bufs, bars, pid, programs, tiles, bias, out)), (_loader, (image, bufs, bars, pid, programs, tiles))],
        [4],
        [LOADER_REGS],
    )


def pooled_by_bands(stem):
    """The kernel's pooling, step for step, in torch: ``stem`` N x 64 x 112 x 112 (ReLU's
    values) to N x 56 x 56 x 64, each strip's bands in turn through the same 160-pixel
    buffer (carried row, tile, slack) and the same shifted views. What the GPU kernel must
    match, checked on the CPU against ``max_pool2d``."""
    import torch

    n_images, channels = stem.shape[:2]
    side, pooled, bands = STEM_SIDE.value, POOL_SIDE.value, BANDS.value
    out = torch.zeros(n_images, pooled, pooled, channels, dtype=stem.dtype)
    q = torch.arange(128)
    kept_q = ((q // 16) % 2 == 0) & (q % 2 == 0) & ((q % 16) // 2 < 7)
    for n in range(n_images):
        for strip in range(STRIPS.value):
            buffer = torch.zeros(160, channels, dtype=stem.dtype)
            for band in range(bands):
                rows = torch.arange(BH.value) + band * BH.value
                columns = strip * 14 - 1 + torch.arange(16)
                inside = (columns >= 0) & (columns < side)
                tile = torch.zeros(BH.value, 16, channels, dtype=stem.dtype)
                tile[:, inside] = stem[n][:, rows][:, :, columns[inside]].permute(1, 2, 0)
                carried = buffer[128:144].clone() if band > 0 else torch.zeros(16, channels, dtype=stem.dtype)
                buffer[0:16] = carried
                buffer[16:144] = tile.reshape(128, channels)
                across = torch.maximum(torch.maximum(buffer[16:144], buffer[17:145]), buffer[18:146])
                buffer[16:144] = across
                window = torch.maximum(torch.maximum(buffer[0:128], buffer[16:144]), buffer[32:160])
                taken = q[kept_q]
                out[n, band * 4 + taken // 32, strip * 7 + (taken % 16) // 2] = window[taken]
    return out


OPTIONS = {"num_warps": 4, "maxnreg": 128}
"""8 warps a program, two programs an SM."""


def compile_only() -> dict[str, dict]:
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    signature = {
        "image": "*fp16",
        "weight": "*fp16",
        "bias": "*fp16",
        "out": "*fp16",
        "STRIPS_TOTAL": "i32",
        "LOADER_REGS": "constexpr",
    }
    constexprs = {(5,): LOADER_REGS}
    aligned = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
    try:
        compiled = triton.compile(
            GluonASTSource(stem_pool, signature, constexprs, aligned), target=GPUTarget("cuda", 90, 32), options=OPTIONS
        )
    except Exception as e:
        return {"stem_pool": {"built": False, "error": str(e)[-1500:]}}
    return {"stem_pool": built_summary(compiled)}


def probe(batch: int, sms: int) -> dict:
    import torch
    import torch.nn.functional as F

    from bench.gpu_timing import checked_kernel_us
    from dnnc.timing import device_time_ms

    torch.manual_seed(0)
    side, pooled, strips_an_image, bands = SIDE.value, POOL_SIDE.value, STRIPS.value, BANDS.value
    image = torch.randn(batch, 3, side, side, device="cuda", dtype=torch.float16)
    weight = (torch.randn(64, 3, 7, 7, device="cuda") / 147**0.5).to(torch.float16)
    bias = torch.randn(64, device="cuda", dtype=torch.float16)
    stem = F.conv2d(image.float(), weight.float(), bias.float(), stride=2, padding=3).relu()
    want = F.max_pool2d(stem, 3, 2, 1).permute(0, 2, 3, 1)
    out = torch.empty(batch, pooled, pooled, 64, device="cuda", dtype=torch.float16)
    strips = batch * strips_an_image
    programs = min(strips, sms * PROGRAMS_PER_SM)
    row: dict = {"batch": batch, "programs": programs, "tiles": strips * bands}

    def run() -> None:
        stem_pool[(programs,)](image, weight, bias, out, strips, LOADER_REGS, **OPTIONS)

    row["stem_pool_us"] = checked_kernel_us(run, out, want, 0.02)
    # the two steps it would replace, as torch runs them channels-last (the program's own
    # times are in the docstring)
    image4 = F.pad(image, (0, 0, 0, 0, 0, 1)).contiguous(memory_format=torch.channels_last)
    weight4 = F.pad(weight, (0, 0, 0, 0, 0, 1)).contiguous(memory_format=torch.channels_last)
    stem_cl = F.conv2d(image4, weight4, bias, stride=2, padding=3).relu_()
    row["torch_pool_channels_last_us"] = round(device_time_ms(lambda: F.max_pool2d(stem_cl, 3, 2, 1)) * 1e3, 2)
    print(batch, row, flush=True)
    return row


def main() -> None:
    args = probe_arguments(__doc__, BATCHES, "gluon-stem-pool.json").parse_args()
    if args.compile_only:
        printed_builds(compile_only)
        return
    sms, found = gpu_run()
    for batch in (int(b) for b in args.batches.split(",")):
        found[f"b{batch}"] = probe(batch, sms)
        kept(found, args.out)


if __name__ == "__main__":
    main()
