"""ResNet's 7x7/2 stem (+ bias + ReLU, NHWC out) as Gluon implicit GEMMs on 2x2 cells of
the image, against what dnnc runs today.

Why: the stem is the widest gap between a ResNet-50 step and its floor on the H200 (205 us
at batch 128 against 61, 61 us at batch 32 against 15; ``compile_profile.py``). cuDNN's
first-layer kernel for it issues ``mma.sync`` on 16 x 64 x 64 tiles; the Triton row
kernel (``stem_pool_probe.py``) was 6-9% faster, the stem fed by TMA slower
(``stem_tma_probe.py``), the cells through cuDNN's implicit GEMM slower still
(``stem_probe.py``). A stride-2 7x7 convolution on 4 channels is a stride-1 4x4 one on 2x2
cells of the padded image (16 channels a cell, a tap's K = 16: one wgmma step). Both
kernels here keep a tile's cells in shared memory once per horizontal tap: a tile is BH
output rows by 16 output columns, and copy ``tx`` holds the BH + 3 cell rows by 16 cells
tap column ``tx`` reads, so tap ``(ty, tx)``'s operand is rows ``16 ty ..`` of copy ``tx``,
a plain matrix (4 copies a tile where a per-tap load would take 16). The product runs
transposed, output channels by pixels (64 x 16 BH: wgmma's N is the pixels), the weights
(16 taps of 64 x 16, 32 KB) resident in shared memory for the whole persistent program.

* ``stem_cells`` reads a cells tensor (N x 115 x 115 x 16, made by ``cells_of``) through
  TMA boxes; it needs a step before it that writes the cells.
* ``stem_image`` reads the NCHW image itself: a loader partition builds the copies with
  plain loads (a cell's channel is one pixel's, 2 bytes with nothing beside it that TMA or
  ``cp.async`` could copy), the default partition multiplies and stores.

A tap's operand starts at a row its length does not divide, which Gluon's subslice
refuses; the kernels take the view of that one row and reinterpret it as the rows from
there (``_viewed``), which Triton 3.6 builds and Triton 3.9 refuses (a reinterpret larger
than its view). A 5-D TMA view of the channels-last 4-channel image as cells (no cells
tensor at all) is refused too: its 16-byte inner box is narrower than the 32-byte swizzle.

Every kernel's result is checked against float32 first, then timed as a CUDA-graph replay
(``dnnc.timing.device_time_ms``). Run on the GPU: ``python bench/gluon_stem_probe.py``
(writes ``$OUT/gluon-stem.json``); ``--compile-only`` builds every config for sm_90 without
a GPU and prints what each kernel's PTX holds or why it failed.
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
from bench.gluon_common import tma_load as _tma_load
from bench.gluon_common import viewed as _viewed

CELLS = 115
"""Cells a side: the 224-pixel image padded by 3 on each side (230) in 2 x 2 cells."""
OUT_SIDE = 112
"""Output rows and columns of the 7x7/2 stem on a 224 x 224 image."""
COUT = 64
"""ResNet's stem channels: the product's M (one wgmma M of 64)."""
CELL_CHANNELS = 16
"""A cell's channels: 2 x 2 pixels of 4 channels (the image's 3 and a zero)."""
TAPS = 4
"""Cell taps a side: the 7x7 window at stride 2 spans 4 cells (its eighth row and column
weigh zero)."""

CONFIGS = [(8, 2, 2), (8, 3, 1), (8, 2, 1), (16, 2, 1)]
"""(BH output rows a tile, shared-memory stages, programs an SM)."""
BATCHES = (1, 32, 128)


@gluon.jit
def _load_tile(j, tiles, pid, programs, x_desc, t_desc, x_smem, ready, BH: gl.constexpr, STAGES: gl.constexpr):
    """Tile ``j`` of this program (if it exists): its four copies, one per tap column, each
    BH + 3 cell rows as two boxes (Gluon's shapes are powers of two): BH rows and 4."""
    BANDS: gl.constexpr = 112 // BH
    t = pid + j * programs
    n = t // (BANDS * 7)
    rest = t % (BANDS * 7)
    row = n * 115 + (rest // 7) * BH
    col = (rest % 7) * 16
    slot = j % STAGES
    exists = j < tiles
    mbarrier.expect(ready.index(slot), 4 * (x_desc.block_type.nbytes + t_desc.block_type.nbytes), pred=exists)
    for tx in gl.static_range(4):
        copy = x_smem.index(slot * 4 + tx)
        _tma_load(x_desc, [row, col + tx, 0], ready.index(slot), copy.slice(0, BH), exists)
        _tma_load(t_desc, [row + BH, col + tx, 0], ready.index(slot), copy.slice(BH, 4), exists)


@gluon.jit
def _tap_products(x_smem, w_smem, slot, BH: gl.constexpr, acc_layout: gl.constexpr):
    """The sixteen tap products of the tile in stage ``slot``: 64 channels by BH * 16 pixels.
    Tap ``(ty, tx)`` reads rows ``ty .. ty + BH - 1`` of copy ``tx``: the view of row ``ty``,
    reinterpreted as the BH * 16 cells from there (a subslice must start at a multiple of
    its length)."""
    BP: gl.constexpr = BH * 16
    ROWS: gl.constexpr = 2 * BH
    dtype: gl.constexpr = w_smem.dtype
    matrix: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=2)
    acc = gl.zeros([64, BP], gl.float32, acc_layout)
    for ty in gl.static_range(4):
        for tx in gl.static_range(4):
            rows = _viewed(x_smem.index(slot * 4 + tx), dtype, [ROWS, 16, 16], matrix)
            cells = _viewed(rows.index(ty), dtype, [BP, 16], matrix)
            acc = warpgroup_mma(w_smem.index(ty * 4 + tx), cells.permute((1, 0)), acc, is_async=True)
    return warpgroup_mma_wait(0, deps=(acc,))


@gluon.jit
def _store_tile(out, y, tile, BH: gl.constexpr, out_layout: gl.constexpr, QUARTER: gl.constexpr = False):
    """Tile ``tile``'s result ``y`` (64 channels by BH * 16 pixels) into the NHWC output;
    only the pixels of even rows and columns where ``QUARTER`` (``--ablate``)."""
    BP: gl.constexpr = BH * 16
    BANDS: gl.constexpr = 112 // BH
    out_c = gl.arange(0, 64, layout=gl.SliceLayout(1, out_layout))
    out_p = gl.arange(0, BP, layout=gl.SliceLayout(0, out_layout))
    n = tile // (BANDS * 7)
    rest = tile % (BANDS * 7)
    pixel = (n * 112 + (rest // 7) * BH + out_p // 16) * 112 + (rest % 7) * 16 + out_p % 16
    if QUARTER:
        taken = ((out_p // 16) % 2 == 0) & (out_p % 2 == 0)
        gl.store(out + pixel[None, :] * 64 + out_c[:, None], y, mask=taken[None, :] & (out_c >= 0)[:, None])
    else:
        gl.store(out + pixel[None, :] * 64 + out_c[:, None], y)


@gluon.jit
def stem_cells(
    x_desc,
    t_desc,
    w_desc,
    bias,
    out,
    TILES,
    BH: gl.constexpr,
    STAGES: gl.constexpr,
    num_warps: gl.constexpr,
):
    """out[n, y, x, :] = relu(sum over taps of W[tap] @ cells[n, y + ty, x + tx, :] + bias);
    ``x_desc`` / ``t_desc``: the cells as (N * 115) x 115 x 16, boxes of BH / 4 x 16 x 16;
    ``w_desc``: the weights as (16 taps * 64) x 16, boxes of 64 x 16; ``out``: N x 112 x 112 x 64."""
    BP: gl.constexpr = BH * 16
    ROWS: gl.constexpr = 2 * BH  # BH + 3 rows are read; a copy's shape is a power of two
    dtype: gl.constexpr = x_desc.dtype
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BP, 16])
    # a thread's eight channels of one pixel: 16-byte stores, a warp's four pixels side by side
    out_layout: gl.constexpr = gl.BlockedLayout([8, 1], [8, 4], [1, num_warps], [0, 1])

    w_smem = gl.allocate_shared_memory(dtype, [16, 64, 16], w_desc.layout)
    rows_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=3)
    x_smem = gl.allocate_shared_memory(dtype, [STAGES * 4, ROWS, 16, 16], rows_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    loaded = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    mbarrier.init(loaded, count=1)

    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    tiles = gl.cdiv(TILES - pid, programs)
    mbarrier.expect(loaded, 16 * w_desc.block_type.nbytes)
    for tap in gl.static_range(16):
        _tma_load(w_desc, [tap * 64, 0], loaded, w_smem.index(tap))
    for j in gl.static_range(STAGES):
        _load_tile(j, tiles, pid, programs, x_desc, t_desc, x_smem, ready, BH, STAGES)
    mbarrier.wait(loaded, 0)

    channels = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
    b = gl.load(bias + channels).to(gl.float32)
    for j in range(tiles):
        slot = j % STAGES
        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
        acc = _tap_products(x_smem, w_smem, slot, BH, acc_layout)
        # every tap of this slot is read: it takes tile j + STAGES
        _load_tile(j + STAGES, tiles, pid, programs, x_desc, t_desc, x_smem, ready, BH, STAGES)
        y = gl.convert_layout(gl.maximum(acc + b[:, None], 0.0).to(dtype), out_layout)
        _store_tile(out, y, pid + j * programs, BH, out_layout)


@gluon.jit
def _image_loader(image, w_desc, bufs, bars, pid, programs, tiles, BH: gl.constexpr, LOAD: gl.constexpr):
    """Four warps: each tile's four copies built from the NCHW image (3 channels, 224 x 224)
    with plain loads (a cell's channel is one pixel's: 2 bytes apart from nothing it sits
    beside in the image), masked where the padding or the fourth channel is. Without
    ``LOAD`` (an ablation, ``--ablate``) only the first tile of each stage is built: the
    products then read stale copies, and the time left is the kernel's without its loads."""
    _, x_smem = bufs
    ready, empty, _ = bars
    STAGES: gl.constexpr = x_smem.type.shape[0] // 4
    ROWS: gl.constexpr = 2 * BH
    BANDS: gl.constexpr = 112 // BH
    matrix: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=2)
    # a thread's 16 channels of one cell, a warp's 32 cells side by side
    cell_layout: gl.constexpr = gl.BlockedLayout([1, 16], [32, 1], [4, 1], [1, 0])
    cell = gl.arange(0, ROWS * 16, layout=gl.SliceLayout(1, cell_layout))
    ch = gl.arange(0, 16, layout=gl.SliceLayout(0, cell_layout))
    dy = ch // 8
    dx = (ch // 4) % 2
    k = ch % 4
    r = cell // 16
    c = cell % 16
    for j in range(tiles):
        slot = j % STAGES
        mbarrier.wait(empty.index(slot), ((j // STAGES) & 1) ^ 1)
        t = pid + j * programs
        n = t // (BANDS * 7)
        rest = t % (BANDS * 7)
        y = 2 * ((rest // 7) * BH + r)[:, None] + dy[None, :] - 3
        inside = (r < BH + 3)[:, None] & (k < 3)[None, :] & (y >= 0) & (y < 224)
        if LOAD or j < STAGES:
            for tx in gl.static_range(4):
                x = 2 * ((rest % 7) * 16 + c + tx)[:, None] + dx[None, :] - 3
                taken = inside & (x >= 0) & (x < 224)
                values = gl.load(image + ((n * 3 + k[None, :]) * 224 + y) * 224 + x, mask=taken, other=0.0)
                _viewed(x_smem.index(slot * 4 + tx), image.dtype.element_ty, [ROWS * 16, 16], matrix).store(values)
        fence_async_shared()  # the copies, written by these threads, are read by wgmma
        _thread_barrier()
        mbarrier.arrive(ready.index(slot))


@gluon.jit
def _image_consumer(
    image, w_desc, bufs, bars, pid, programs, tiles, BH: gl.constexpr, bias, out, stored_from, STORE: gl.constexpr
):
    """The default partition: the sixteen tap products of each tile, then its epilogue.
    Ablations (``--ablate``): tiles from ``stored_from`` on are not stored (a runtime value,
    so the products stay); ``STORE`` 4 stores a quarter of each tile (the pixels of even rows
    and columns: the bytes a 3x3/2 max pool's output would take), 0 none."""
    w_smem, x_smem = bufs
    ready, empty, loaded = bars
    STAGES: gl.constexpr = x_smem.type.shape[0] // 4
    BP: gl.constexpr = BH * 16
    dtype: gl.constexpr = w_desc.dtype
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BP, 16])
    out_layout: gl.constexpr = gl.BlockedLayout([8, 1], [8, 4], [1, 4], [0, 1])
    mbarrier.wait(loaded, 0)
    channels = gl.arange(0, 64, layout=gl.SliceLayout(1, acc_layout))
    b = gl.load(bias + channels).to(gl.float32)
    for j in range(tiles):
        slot = j % STAGES
        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)
        acc = _tap_products(x_smem, w_smem, slot, BH, acc_layout)
        mbarrier.arrive(empty.index(slot))
        y = gl.convert_layout(gl.maximum(acc + b[:, None], 0.0).to(dtype), out_layout)
        if STORE == 1:
            _store_tile(out, y, pid + j * programs, BH, out_layout)
        elif pid + j * programs < stored_from:
            _store_tile(out, y, pid + j * programs, BH, out_layout, STORE == 4)


@gluon.jit
def stem_image(
    image,
    w_desc,
    bias,
    out,
    TILES,
    stored_from,
    BH: gl.constexpr,
    STAGES: gl.constexpr,
    num_warps: gl.constexpr,
    LOADER_REGS: gl.constexpr,
    LOAD: gl.constexpr = True,
    STORE: gl.constexpr = 1,
):
    """The same stem in one launch from the NCHW image (N x 3 x 224 x 224): a loader
    partition builds the cells in shared memory, the default partition multiplies (no cells
    tensor in memory, no step before it)."""
    ROWS: gl.constexpr = 2 * BH
    dtype: gl.constexpr = w_desc.dtype
    rows_layout: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=3)
    w_smem = gl.allocate_shared_memory(dtype, [16, 64, 16], w_desc.layout)
    x_smem = gl.allocate_shared_memory(dtype, [STAGES * 4, ROWS, 16, 16], rows_layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    loaded = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    mbarrier.init(loaded, count=1)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    tiles = gl.cdiv(TILES - pid, programs)
    mbarrier.expect(loaded, 16 * w_desc.block_type.nbytes)
    for tap in gl.static_range(16):
        _tma_load(w_desc, [tap * 64, 0], loaded, w_smem.index(tap))
    bufs = (w_smem, x_smem)
    bars = (ready, empty, loaded)
    gl.warp_specialize(
        [
            (_image_consumer, (image, w_desc, bufs, bars, pid, programs, tiles, BH, bias, out, stored_from, STORE)),
            (_image_loader, (image, w_desc, bufs, bars, pid, programs, tiles, BH, LOAD)),
        ],
        [4],
        [LOADER_REGS],
    )


IMAGE_CONFIGS = [(8, 2, 2, 96), (8, 3, 1, 128), (8, 4, 1, 128)]
"""(BH, stages, programs an SM, loader registers) of ``stem_image``."""


def _layouts():
    x_layout = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=3)
    w_layout = gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=2)
    return x_layout, w_layout


def cells_of(image):
    """N x 3 x 224 x 224 -> N x 115 x 115 x 16: padded by 3 (and a fourth channel of zeros),
    each 2 x 2 cell's pixels side by side, channel (dy * 2 + dx) * 4 + c."""
    import torch.nn.functional as F

    n = image.shape[0]
    padded = F.pad(F.pad(image, (3, 3, 3, 3)), (0, 0, 0, 0, 0, 1))
    return padded.view(n, 4, CELLS, 2, CELLS, 2).permute(0, 2, 4, 3, 5, 1).reshape(n, CELLS, CELLS, 16).contiguous()


def weights_of(weight):
    """64 x 3 x 7 x 7 -> (16 taps * 64) x 16: tap (ty, tx), channel (dy * 2 + dx) * 4 + c of
    the kernel at row 2 ty + dy, column 2 tx + dx (zero past 7 and at the fourth channel)."""
    import torch.nn.functional as F

    padded = F.pad(weight, (0, 1, 0, 1, 0, 1))  # 64 x 4 x 8 x 8
    return padded.view(COUT, 4, TAPS, 2, TAPS, 2).permute(2, 4, 0, 3, 5, 1).reshape(16 * COUT, 16).contiguous()


def compile_only() -> dict[str, dict]:
    """Every config built for sm_90 without a GPU: shared memory and what the PTX holds, or
    the error."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    x_layout, w_layout = _layouts()
    out = {}
    for bh, stages, _per_sm in CONFIGS:
        boxes = (f"tensordesc<fp16[{bh}, 16, 16],{x_layout!r}>", f"tensordesc<fp16[4, 16, 16],{x_layout!r}>")
        signature = {
            "x_desc": boxes[0],
            "t_desc": boxes[1],
            "w_desc": f"tensordesc<fp16[64, 16],{w_layout!r}>",
            "bias": "*fp16",
            "out": "*fp16",
            "TILES": "i32",
            "BH": "constexpr",
            "STAGES": "constexpr",
            "num_warps": "constexpr",
        }
        values = {"BH": bh, "STAGES": stages, "num_warps": 4}
        constexprs = {(list(signature).index(k),): v for k, v in values.items()}
        aligned = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
        name = f"cells_bh{bh}_s{stages}"
        try:
            src = GluonASTSource(stem_cells, signature, constexprs, aligned)
            compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4})
        except Exception as e:
            out[name] = {"built": False, "error": str(e)[-900:]}
            continue
        out[name] = built_summary(compiled)
    for bh, stages, per_sm, regs in IMAGE_CONFIGS:
        signature = {
            "image": "*fp16",
            "w_desc": f"tensordesc<fp16[64, 16],{w_layout!r}>",
            "bias": "*fp16",
            "out": "*fp16",
            "TILES": "i32",
            "stored_from": "i32",
            "BH": "constexpr",
            "STAGES": "constexpr",
            "num_warps": "constexpr",
            "LOADER_REGS": "constexpr",
            "LOAD": "constexpr",
            "STORE": "constexpr",
        }
        values = {"BH": bh, "STAGES": stages, "num_warps": 4, "LOADER_REGS": regs, "LOAD": True, "STORE": 1}
        constexprs = {(list(signature).index(k),): v for k, v in values.items()}
        aligned = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
        name = f"image_bh{bh}_s{stages}_x{per_sm}"
        try:
            src = GluonASTSource(stem_image, signature, constexprs, aligned)
            compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=_image_options(per_sm))
        except Exception as e:
            out[name] = {"built": False, "error": str(e)[-900:]}
            continue
        out[name] = built_summary(compiled)
    return out


def _image_options(per_sm: int) -> dict:
    """8 warps a program: 128 registers a thread lets two programs share an SM."""
    return {"num_warps": 4, "maxnreg": 128 if per_sm == 2 else 168}


ABLATIONS = {
    "whole": (True, 1, None),
    "no_loads": (False, 1, None),
    "no_stores": (True, 0, 0),
    "quarter_stores": (True, 4, None),
    "products_only": (False, 0, 0),
}
"""``--ablate``: (LOAD, STORE, stored_from; None: every tile) of ``stem_image`` in its first
config, each timed (only "whole" computes the stem; the others read stale copies or store
less): where its time goes, the image's loads, the output's stores or the products, and
what a pooled output's quarter of the stores would leave."""


def ablations(image, w_desc, bias, out, batch: int, sms: int) -> dict[str, float]:
    from dnnc.timing import device_time_ms

    bh, stages, per_sm, regs = IMAGE_CONFIGS[0]
    tiles = batch * (OUT_SIDE // bh) * 7
    programs = min(tiles, sms * per_sm)
    found = {}
    for name, (load, store, stored_from) in ABLATIONS.items():
        launch = stem_image[(programs,)]

        def run(load=load, store=store, stored_from=tiles if stored_from is None else stored_from, launch=launch):
            launch(
                image,
                w_desc,
                bias,
                out,
                tiles,
                stored_from,
                bh,
                stages,
                LOADER_REGS=regs,
                num_warps=4,
                maxnreg=_image_options(per_sm)["maxnreg"],
                LOAD=load,
                STORE=store,
            )

        found[name] = round(device_time_ms(run) * 1e3, 2)
        print(batch, "ablation", name, found[name], flush=True)
    return found


def probe(batch: int, sms: int, ablate: bool = False) -> dict:
    import torch
    import torch.nn.functional as F
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from bench.gpu_timing import checked_kernel_us
    from dnnc.timing import device_time_ms

    torch.manual_seed(0)
    image = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.float16)
    weight = (torch.randn(COUT, 3, 7, 7, device="cuda") / 147**0.5).to(torch.float16)
    bias = torch.randn(COUT, device="cuda", dtype=torch.float16)
    want = F.conv2d(image.float(), weight.float(), bias.float(), stride=2, padding=3).relu().permute(0, 2, 3, 1)
    cells = cells_of(image)
    taps = weights_of(weight)
    out = torch.empty(batch, OUT_SIDE, OUT_SIDE, COUT, device="cuda", dtype=torch.float16)
    row: dict = {"batch": batch, "gflop_useful": 2 * batch * OUT_SIDE**2 * COUT * 147 / 1e9}
    row["out_mb"] = out.numel() * 2 / 1e6

    # torch's cuDNN on the 4-channel channels-last image dnnc's program feeds its stem
    image4 = F.pad(image, (0, 0, 0, 0, 0, 1)).contiguous(memory_format=torch.channels_last)
    weight4 = F.pad(weight, (0, 0, 0, 0, 0, 1)).contiguous(memory_format=torch.channels_last)
    row["torch_cudnn_us"] = round(device_time_ms(lambda: F.conv2d(image4, weight4, bias, stride=2, padding=3).relu_()) * 1e3, 2)
    row["cells_from_image_us"] = round(device_time_ms(lambda: cells_of(image)) * 1e3, 2)

    x_layout, w_layout = _layouts()
    w_desc = TensorDescriptor.from_tensor(taps, [64, 16], w_layout)
    kernels: dict[str, float | str] = {}

    def check_and_time(tag, run):
        kernels[tag] = checked_kernel_us(run, out, want, 0.02)
        print(batch, tag, kernels[tag], flush=True)

    for bh, stages, per_sm in CONFIGS:
        tiles = batch * (OUT_SIDE // bh) * 7
        view = ([batch * CELLS, CELLS, 16], [CELLS * 16, 16, 1])
        x_desc = TensorDescriptor(cells, *view, [bh, 16, 16], x_layout)
        t_desc = TensorDescriptor(cells, *view, [4, 16, 16], x_layout)
        programs = min(tiles, sms * per_sm)

        def run(x_desc=x_desc, t_desc=t_desc, programs=programs, tiles=tiles, bh=bh, stages=stages):
            stem_cells[(programs,)](x_desc, t_desc, w_desc, bias, out, tiles, bh, stages, num_warps=4)

        check_and_time(f"cells_bh{bh}_s{stages}_x{per_sm}", run)
    for bh, stages, per_sm, regs in IMAGE_CONFIGS:
        tiles = batch * (OUT_SIDE // bh) * 7
        programs = min(tiles, sms * per_sm)

        def run(programs=programs, tiles=tiles, bh=bh, stages=stages, per_sm=per_sm, regs=regs):
            options = _image_options(per_sm)
            stem_image[(programs,)](
                image, w_desc, bias, out, tiles, tiles, bh, stages, LOADER_REGS=regs, num_warps=4, maxnreg=options["maxnreg"]
            )

        check_and_time(f"image_bh{bh}_s{stages}_x{per_sm}", run)
    if ablate:
        row["ablations_us"] = ablations(image, w_desc, bias, out, batch, sms)
    row["kernels"] = kernels
    for kind in ("cells", "image"):
        timed = [(v, tag) for tag, v in kernels.items() if tag.startswith(kind) and isinstance(v, float)]
        row[f"best_{kind}"] = min(timed) if timed else None
    return row


def main() -> None:
    ap = probe_arguments(__doc__, BATCHES, "gluon-stem.json")
    ap.add_argument("--ablate", action="store_true", help="also time the image kernel without its loads, its stores or both")
    args = ap.parse_args()
    if args.compile_only:
        printed_builds(compile_only)
        return
    sms, found = gpu_run()
    for batch in (int(b) for b in args.batches.split(",")):
        found[f"b{batch}"] = row = probe(batch, sms, args.ablate)
        print(batch, {k: v for k, v in row.items() if k != "kernels"}, flush=True)
        kept(found, args.out)


if __name__ == "__main__":
    main()
