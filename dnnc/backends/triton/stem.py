"""A network's first convolution (stride 2 on at most 4 channels, 64 out, the image read
NCHW) as a Gluon kernel on 2 x 2 cells of the image (``STEM`` configs, Hopper only).

cuDNN runs such a stem (ResNet's 7x7/2 on 3 channels padded to 4) with a first-layer
kernel of ``mma.sync`` tiles, and Triton's implicit GEMM has K = 147 spread over taps 4
channels wide: both ran ResNet-50's stem at 3.4x its floor on an H200 (205 us at batch
128, where storing its output alone takes 49). A stride-2 convolution on ``C`` channels
is a stride-1 one on cells of 2 x 2 pixels (``4 C`` channels, a window of ``ceil(k / 2)``
cells): with ``C <= 4`` one tap of cells is one wgmma step of K = 16. The kernel keeps a
tile of BH output rows by 16 output columns in shared memory once per tap column ``tx``
(cell rows from the tile's first down, cell columns from ``x0 + tx``): tap ``(ty, tx)``'s
operand is then the copy's rows from ``16 ty``, a plain matrix. The product runs
transposed (64 output channels by the tile's pixels, wgmma's N), the weights (a 64 x 16
matrix per tap, gathered from the convolution's weight once per program) resident in
shared memory. A loader partition reads the tile's region of the image once, its cells
(BH + 3 rows of 19) with plain loads (a cell's channel sits 2 bytes apart from nothing
beside it in the image: nothing TMA or ``cp.async`` can copy) into shared memory, and
builds the four copies from there, each from the region's column ``tx``; so the group
reads the image as it is, with no step before it. Building each copy from the image (four
loads of most cells) ran the stem 46.8 / 158.9 us in ResNet-50's program at batch 32 /
128 on an H200, from the region 44.8 / 152.4 (``bench/compile_profile.py``); the probe's
kernel with no image loads at all ran 30.3 / 86.5 us against 44.7 / 151.0 with them
(``gluon_stem_probe.py --ablate``), so the copies' loads and stores still take most of
what loading costs.

On an H200 (``bench/gluon_stem_probe.py``, ``bench/results/gluon-stem-2026-11-29-h200.json``)
that ran ResNet-50's stem at batch 128 in 152 us, against cuDNN's 205 plus the 25 of the
channels-last step before it; 45 against 61 + 6 at batch 32, 6.3 against Triton's 8.2 at
batch 1.

In ResNet-50's program (H200, ``bench/compile_profile.py --own-kernels``) the group, its
bias and ReLU in the epilogue and its output stored channels-last for the max pool to read
NHWC -> NHWC (``fusion.reduction_prologue``), ran 44.8 us at batch 32 and 157.0 at batch
128, where cuDNN's stem and its channels-last step ran 61.1 + 6.6 and 206.8 + 22.7; the
program's kernels 0.866 -> 0.847 and 2.727 -> 2.658 ms.

The epilogue is the one ``KernelEmitter`` writes for the group (``kernels._stem``), its
``tl.`` calls taken to their ``gl.`` twins (``pingpong.translate``), run on the
accumulator in wgmma's layout; a channels-last tile then leaves through shared memory and
a TMA box of the output. Converting the float32 accumulator through shared memory before
the epilogue, as the kernel did, ran the stem 44.6 / 152.4 us in ResNet-50's program at
batch 32 / 128; now 39.7 / 132.2. Gluon has no
interpreter: the kernel is built for sm_90 only and checked numerically on the GPU.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from xdsl.ir import Operation

from dnnc.backends.triton import pingpong
from dnnc.backends.triton.skeleton import INT32_LIMIT, GroupInfo, TileDescriptor, anchor_axes, gathers, pointer_names
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NHWC
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import element_name, element_of, numel, shape_of

CAPABILITY = pingpong.CAPABILITY
"""wgmma: Hopper's."""
CHANNELS = 4
"""Image channels a cell takes: 2 x 2 pixels of 4 channels are one K = 16 wgmma step."""
OUT_CHANNELS = 64
"""The product's M: one warpgroup's wgmma rows (ResNet-family stems have 64)."""
MAX_TAPS = 4
"""Cell taps a side at most: windows up to 8 pixels (ResNet's 7)."""
BH = 8
"""Output rows a tile (by 16 columns: 128 pixels, wgmma's N)."""
PITCH = 12
"""Cell rows a copy of a tile takes in shared memory: the BH + 3 its taps read, and one
(Gluon's shapes are powers of two, so a copy is filled as 8 rows and 4). Four copies a
stage in 48 rows (not 4 x 16) keep two programs on an SM with either output layout."""
TILE_COLUMNS = 16
REGION = 32
"""Cells a row of a tile's region takes in shared memory: the TILE_COLUMNS + 3 its taps
read, padded so that a copy's rows start at a row of the region plus its tap column."""
REGION_ROWS = 12
"""Cell rows of the region: the BH + 3 its taps read, and one (filled as three blocks of 4)."""
STAGES = 2
"""Tiles in flight between the loader and the product (the ``STEM`` config's value): two,
so two programs share an SM (111 KB of shared memory each) and one's epilogue runs beside
the other's product. On the probe, two programs an SM ran 45 / 152 us at batch 32 / 128,
one with three or four stages 52 / 185."""
PROGRAMS_PER_SM = 2
MAXNREG = 128
"""Registers a thread: 8 warps a program, two programs an SM."""
LOADER_REGS = 96
SMS = pingpong.PROGRAMS
"""SMs of an H100 SXM / H200; the grid is two programs each, or one per tile."""


@functools.cache
def available() -> bool:
    """Whether this Triton builds the kernel: Gluon's Hopper language, and a reinterpret
    of shared memory that reaches past its view (Triton 3.6's ``_reinterpret``). A tap's
    operand starts at a row its length does not divide, which a subslice refuses, so it
    is the row's view taken as the rows from there; Triton 3.9 checks a reinterpret's
    footprint against its view and refuses that too."""
    if not pingpong.available():
        return False
    from triton.experimental.gluon import language as gl

    return hasattr(gl.shared_memory_descriptor, "_reinterpret")


@dataclass(frozen=True)
class Plan:
    """What the kernel text needs to know of the group."""

    n: int
    c: int
    h: int
    w: int
    kh: int
    kw: int
    pad: tuple[int, int]
    """(top, left)."""
    out: tuple[int, int]
    """(HO, WO)."""
    image: str
    weight: str
    """The image's and the weight's parameter names."""
    pointers: tuple[str, ...]
    elem: str
    channels_last: bool
    """Whether the group stores its output channels-last (the stores then go a pixel's
    channels at a time, else a channel's pixels)."""

    @property
    def taps(self) -> tuple[int, int]:
        return math.ceil(self.kh / 2), math.ceil(self.kw / 2)

    @property
    def tiles(self) -> int:
        return self.n * (self.out[0] // BH) * (self.out[1] // TILE_COLUMNS)


def fits(op: Operation) -> bool:
    """Whether a ``stem`` kernel computes ``op``: a float16 / bfloat16 stride-2 convolution
    (no dilation, one group) of at most 4 input channels into 64, with a window of at most
    8 x 8 and output rows and columns that are multiples of 8 and 16 (whole tiles)."""
    if not isinstance(op, tcp.Conv2dOp):
        return False
    elem = element_name(element_of(op.results[0]))
    _, c, _, _ = shape_of(op.input)
    o, _, kh, kw = shape_of(op.weight)
    _, _, ho, wo = shape_of(op.results[0])
    return (
        elem in pingpong.GL_TYPES
        and element_name(element_of(op.input)) == elem
        and int(scalar(op.groups)) == 1
        and tuple(ints(op.stride)) == (2, 2)
        and tuple(ints(op.dilation)) == (1, 1)
        and c <= CHANNELS
        and o == OUT_CHANNELS
        and max(kh, kw) <= 2 * MAX_TAPS
        and ho % BH == 0
        and wo % TILE_COLUMNS == 0
    )


def plan_of(info: GroupInfo) -> Plan | None:
    """What a ``stem`` kernel of ``info``'s group reads, or None where it cannot be one: a
    convolution it ``fits`` of an NCHW block argument (the image) by a block argument,
    with one output (its elementwise epilogue and transposes are the emitter's), every
    tensor addressed in int32."""
    op = info.anchor
    if not fits(op) or info.summed is not None or len(info.outputs) != 1 or gathers(info.group):
        return None
    assert isinstance(op, tcp.Conv2dOp)
    args = list(info.group.body.block.args)
    if op.input not in args or op.weight not in args:
        return None
    if max(numel(v) for v in (*args, *info.outputs)) > INT32_LIMIT:
        return None
    n, c, h, w = shape_of(op.input)
    _, _, kh, kw = shape_of(op.weight)
    _, _, ho, wo = shape_of(op.results[0])
    pad = tuple(ints(op.padding))
    _, signature, _ = pointer_names(info)
    last = anchor_axes(info, info.outputs[0]) == TO_NHWC
    elem = element_name(element_of(op.results[0]))
    image, weight = f"in{args.index(op.input)}", f"in{args.index(op.weight)}"
    return Plan(n, c, h, w, kh, kw, (pad[0], pad[2]), (ho, wo), image, weight, tuple(signature), elem, last)


def module_text(header: list[str], name: str, plan: Plan, stages: int, epilogue: list[str], way_out: list[str]) -> str:
    """The kernel module: ``header`` (the group's IR as comments), the loader and product
    partitions, and the kernel ``name`` whose parameters are the group's pointers (then
    ``o_tile``, the output's TMA descriptor, where the output is channels-last). The
    ``epilogue`` runs on ``acc``, the 64 x BH * 16 tile (output channels by pixels) in the
    layout wgmma leaves it, with ``rn`` (each row's channel), ``pix`` (each column's place
    in the tile, 16 a row) and the tile's image, first row and column (``tile_n``,
    ``tile_y``, ``tile_x``). A channels-last output's epilogue leaves the tile in
    ``result``, which goes out through shared memory and a TMA box of the output; an NCHW
    one's leaves its values converted to the stores' layout, and ``way_out`` (run with
    ``rn`` and ``pix`` in that layout) stores them. Converting the float32 accumulator
    before the epilogue, as the kernel did, moved twice the bytes through shared memory."""
    taps_h, taps_w = plan.taps
    constants = {
        "BH": BH,
        "BP": BH * TILE_COLUMNS,
        "PITCH": PITCH,
        "STAGES": stages,
        "BLOCK_M": BH * TILE_COLUMNS,
        "BLOCK_N": OUT_CHANNELS,
        "C": plan.c,
        "H": plan.h,
        "W": plan.w,
        "KH": plan.kh,
        "KW": plan.kw,
        "PH": plan.pad[0],
        "PW": plan.pad[1],
        "HO": plan.out[0],
        "WO": plan.out[1],
        "TAPS_H": taps_h,
        "TAPS_W": taps_w,
        "REGION": REGION,
        "REGION_ROWS": REGION_ROWS,
        "BANDS": plan.out[0] // BH,
        "COLUMNS": plan.out[1] // TILE_COLUMNS,
        "TILES": plan.tiles,
    }
    pointers = ", ".join(plan.pointers)
    out = "o_tile, o_smem, " if plan.channels_last else ""
    dtype = f"gl.{pingpong.GL_TYPES[plan.elem]}"
    # on the 64 x BP tile: a thread's 8 channels of one pixel (channels-last stores) or 8
    # pixels of one channel
    store = "[8, 1], [8, 4], [1, 4], [0, 1]" if plan.channels_last else "[1, 8], [16, 2], [4, 1], [1, 0]"
    lines = [
        *header,
        "",
        "from triton.experimental import gluon",
        "from triton.experimental.gluon import language as gl",
        "from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait",
        "",
        "# Triton 3.6 names these thread_barrier and async_copy_shared_to_global; later versions barrier, async_store.",
        'thread_barrier = getattr(gl, "thread_barrier", None) or gl.barrier',
        'tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global',
        "",
        *(f"{k} = gl.constexpr({v})" for k, v in constants.items()),
        "MATRIX = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=2))",
        "COPIES = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=32, element_bitwidth=16, rank=3))",
        "ACC = gl.constexpr(gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BP, 16]))",
        f"STORE = gl.constexpr(gl.BlockedLayout({store}))",
        "OUT = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2))",
        "O_VIEW = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4))",
        "CELLS = gl.constexpr(gl.BlockedLayout([1, 16], [32, 1], [4, 1], [1, 0]))",
        "TAP = gl.constexpr(gl.BlockedLayout([1, 8], [16, 2], [4, 1], [1, 0]))",
        "# the region's rows of cells, and a copy's 8 and 4 rows read from them: a thread's 16",
        "# channels of one cell, as CELLS and TAP hold them once the rows are flattened",
        "PLAIN = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, order=[1, 0]))",
        "PLAIN3 = gl.constexpr(gl.SwizzledSharedLayout(1, 1, 1, order=[2, 1, 0]))",
        "CELLS3 = gl.constexpr(gl.BlockedLayout([1, 1, 16], [2, 16, 1], [4, 1, 1], [2, 1, 0]))",
        "TAP3 = gl.constexpr(gl.BlockedLayout([1, 1, 8], [1, 16, 2], [4, 1, 1], [2, 1, 0]))",
        "",
        "",
        "@gluon.jit",
        "def viewed(view, shape: gl.constexpr):",
        '    """The memory of ``view`` as ``shape`` (Triton 3.6; a view past its subslice, which',
        '    later versions refuse: the operand of a tap starts at a row its length does not divide)."""',
        f"    return view._reinterpret({dtype}, shape, MATRIX)",
        "",
        "",
        "@gluon.jit",
        "def origin(t):",
        '    """Tile ``t``\'s image and first output row and column."""',
        "    rest = t % (BANDS * COLUMNS)",
        "    return t // (BANDS * COLUMNS), (rest // COLUMNS) * BH, (rest % COLUMNS) * 16",
        "",
        "",
        "@gluon.jit",
        "def fill(image, q_smem, first: gl.constexpr, n, y0, x0):",
        '    """The region\'s cell rows ``first .. first + 3`` from the image: cell ``(r, cc)`` holds',
        "    the 2 x 2 pixels of every channel at output row ``y0 + r`` and column ``x0 + cc``'s",
        '    window corner, REGION cells a row (those past the taps\' reach zero)."""',
        "    COUNT: gl.constexpr = 4 * REGION",
        f"    region = q_smem.index(first * REGION)._reinterpret({dtype}, [COUNT, 16], PLAIN)",
        "    cell = gl.arange(0, COUNT, layout=gl.SliceLayout(1, CELLS))[:, None]",
        "    ch = gl.arange(0, 16, layout=gl.SliceLayout(0, CELLS))[None, :]",
        "    k = ch % 4",
        "    r = first + cell // REGION",
        "    cc = cell % REGION",
        "    y = 2 * (y0 + r) + ch // 8 - PH",
        "    x = 2 * (x0 + cc) + (ch // 4) % 2 - PW",
        "    taken = (r < BH + TAPS_H - 1) & (cc < 16 + TAPS_W - 1) & (k < C) & (y >= 0) & (y < H) & (x >= 0) & (x < W)",
        "    region.store(gl.load(image + ((n * C + k) * H + y) * W + x, mask=taken, other=0.0))",
        "",
        "",
        "@gluon.jit",
        "def copy(q_smem, rows, first: gl.constexpr, tx: gl.constexpr, LAYOUT: gl.constexpr):",
        '    """Cell rows ``first ..`` of copy ``tx`` (as many as ``rows`` holds): the region\'s, from',
        '    its column ``tx`` (a view from that cell, which a subslice could not start at)."""',
        "    R: gl.constexpr = rows.type.shape[0] // 16",
        f"    region = q_smem.index(first * REGION + tx)._reinterpret({dtype}, [R, REGION, 16], PLAIN3)",
        "    values = region.slice(0, 16, dim=1).load(LAYOUT)",
        "    rows.store(gl.reshape(values, [R * 16, 16]))",
        "",
        "",
        "@gluon.jit",
        "def loader(ptrs, x_smem, q_smem, ready, empty, pid, programs, tiles):",
        f"    {pointers}, = ptrs",
        "    for j in range(tiles):",
        "        slot = j % STAGES",
        "        n, y0, x0 = origin(pid + j * programs)",
        "        # the region, each cell gathered from the image once; the last tile's copies are",
        "        # built (the barrier before its arrival), so its region may be overwritten",
        "        for first in gl.static_range(0, REGION_ROWS, 4):",
        f"            fill({plan.image}, q_smem, first, n, y0, x0)",
        "        thread_barrier()  # the region, stored by these threads, is read by them below",
        "        mbarrier.wait(empty.index(slot), ((j // STAGES) & 1) ^ 1)",
        "        stage = viewed(x_smem.index(slot * 3), [PITCH * 4, 16, 16])",
        "        for tx in gl.static_range(TAPS_W):",
        "            copy(q_smem, viewed(stage.index(PITCH * tx), [128, 16]), 0, tx, CELLS3)",
        "            copy(q_smem, viewed(stage.index(PITCH * tx + 8), [64, 16]), 8, tx, TAP3)",
        "        fence_async_shared()  # the copies, stored by these threads, are read by wgmma",
        "        thread_barrier()",
        "        mbarrier.arrive(ready.index(slot))",
        "",
        "",
        "@gluon.jit",
        f"def product(ptrs, {out}w_smem, x_smem, ready, empty, pid, programs, tiles):",
        f"    {pointers}, = ptrs",
        "    for j in range(tiles):",
        "        slot = j % STAGES",
        "        mbarrier.wait(ready.index(slot), (j // STAGES) & 1)",
        "        acc_t = gl.zeros([64, BP], gl.float32, ACC)",
        "        for ty in gl.static_range(TAPS_H):",
        "            for tx in gl.static_range(TAPS_W):",
        "                stage = viewed(x_smem.index(slot * 3), [PITCH * 4, 16, 16])",
        "                cells = viewed(stage.index(PITCH * tx + ty), [BP, 16])",
        "                acc_t = warpgroup_mma(w_smem.index(ty * TAPS_W + tx), cells.permute((1, 0)), acc_t, is_async=True)",
        "        acc_t = warpgroup_mma_wait(0, deps=(acc_t,))",
        "        mbarrier.arrive(empty.index(slot))",
        "        # the epilogue's tile is the product's, channels by pixels: its row and column",
        "        # positions broadcast the other way round from a product kernel's",
        "        acc = acc_t",
        "        tile_n, tile_y, tile_x = origin(pid + j * programs)",
        "        pix = gl.arange(0, BP, layout=gl.SliceLayout(0, ACC))[None, :]",
        "        rn = gl.arange(0, 64, layout=gl.SliceLayout(1, ACC))[:, None]",
        *(f"    {line}" for line in epilogue),
        *(_tma_way_out(dtype) if plan.channels_last else _stored_way_out(way_out)),
        "",
        "",
        "@gluon.jit",
        f"def {name}({pointers}{', o_tile' if plan.channels_last else ''}):",
        f"    w_smem = gl.allocate_shared_memory({dtype}, [TAPS_H * TAPS_W, 64, 16], MATRIX)",
        "    # a stage: 4 copies of PITCH cell rows (BH + 3 read), as 3 blocks of 16 rows",
        f"    x_smem = gl.allocate_shared_memory({dtype}, [STAGES * 3, 16, 16, 16], COPIES)",
        "    # the loader's region of the tile: REGION_ROWS rows of REGION cells, and the cells",
        "    # a copy's last view reads past it",
        f"    q_smem = gl.allocate_shared_memory({dtype}, [REGION_ROWS * REGION + 8, 1, 16], PLAIN)",
        *(
            [
                "    # the output tile on its way out through TMA",
                f"    o_smem = gl.allocate_shared_memory({dtype}, [BP, 64], OUT)",
            ]
            if plan.channels_last
            else []
        ),
        "    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
        "    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
        "    for i in gl.static_range(STAGES):",
        "        mbarrier.init(ready.index(i), count=1)",
        "        mbarrier.init(empty.index(i), count=1)",
        "    # each tap's 64 x 16 weight matrix: channel (dy * 2 + dx) * 4 + k at kernel row",
        "    # 2 ty + dy, column 2 tx + dx (zero past the window and the image's channels)",
        "    o = gl.arange(0, 64, layout=gl.SliceLayout(1, TAP))[:, None]",
        "    ch = gl.arange(0, 16, layout=gl.SliceLayout(0, TAP))[None, :]",
        "    for ty in gl.static_range(TAPS_H):",
        "        for tx in gl.static_range(TAPS_W):",
        "            ky = 2 * ty + ch // 8",
        "            kx = 2 * tx + (ch // 4) % 2",
        "            taken = (ch % 4 < C) & (ky < KH) & (kx < KW)",
        f"            values = gl.load({plan.weight} + ((o * C + ch % 4) * KH + ky) * KW + kx, mask=taken, other=0.0)",
        "            w_smem.index(ty * TAPS_W + tx).store(values)",
        "    fence_async_shared()",
        "    thread_barrier()",
        "    pid = gl.program_id(0)",
        "    programs = gl.num_programs(0)",
        "    tiles = gl.cdiv(TILES - pid, programs)",
        f"    ptrs = ({pointers},)",
        "    gl.warp_specialize(",
        f"        [(product, (ptrs, {out}w_smem, x_smem, ready, empty, pid, programs, tiles)),",
        "         (loader, (ptrs, x_smem, q_smem, ready, empty, pid, programs, tiles))],",
        f"        [4], [{LOADER_REGS}])",
        "",
    ]
    return "\n".join(lines)


def _tma_way_out(dtype: str) -> list[str]:
    """A channels-last tile's way out: its pixels' rows of 64 channels stored into
    ``o_smem`` (the tile transposed, once the previous tile has left it), then a TMA box
    ``[1, BH, 16, 64]`` of the NHWC output."""
    return [
        "        tma.store_wait(0)  # the last tile has left o_smem",
        "        o_smem.permute((1, 0)).store(result)",
        "        fence_async_shared()",
        f"        tma_store(o_tile, [tile_n, tile_y, tile_x, 0], o_smem._reinterpret({dtype}, [1, BH, 16, 64], O_VIEW))",
        "    tma.store_wait(0)",
    ]


def _stored_way_out(way_out: list[str]) -> list[str]:
    """An NCHW tile's way out: ``way_out`` with ``rn`` and ``pix`` in the stores' layout."""
    return [
        "        pix = gl.arange(0, BP, layout=gl.SliceLayout(0, STORE))[None, :]",
        "        rn = gl.arange(0, 64, layout=gl.SliceLayout(1, STORE))[:, None]",
        *(f"    {line}" for line in way_out),
    ]


def output_descriptor(plan: Plan) -> TileDescriptor:
    """The TMA descriptor a channels-last output leaves through: a tile's BH x 16 pixels of
    64 channels, a box of the NHWC output."""
    return TileDescriptor(
        "o_tile",
        plan.pointers.index("out0"),
        (plan.n, plan.out[0], plan.out[1], OUT_CHANNELS),
        (1, BH, TILE_COLUMNS, OUT_CHANNELS),
        gluon=True,
    )


def grid(plan: Plan) -> tuple[int, int, int]:
    """Two programs an SM, or one a tile where there are fewer."""
    return (min(PROGRAMS_PER_SM * SMS, plan.tiles), 1, 1)


OPTIONS = {"num_warps": 4, "maxnreg": MAXNREG}
