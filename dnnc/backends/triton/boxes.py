"""Stride-1 3x3 convolutions of a channels-last image as Gluon implicit GEMMs whose operand
tiles are 4-D TMA boxes of the image (``BOXES`` configs, Hopper only).

A tile is a patch of ``BOX_H x BOX_W`` output pixels of one image by ``BLOCK_N`` output
channels. Its K loop runs over the nine taps and the input channels 64 at a time; tap
``(ky, kx)``'s operand is the patch's input shifted by ``(ky - 1, kx - 1)``, one TMA box
``[1, BOX_H, BOX_W, 64]`` of the NHWC input at those coordinates. TMA fills what lies past
the image's edges (the padding, negative coordinates included) with zeros, so the loader
has no masks and no gathers, and the box lands in shared memory as ``BOX_H * BOX_W`` rows
of 128 bytes: the bytes and the swizzle of the ``[BLOCK_M, 64]`` matrix wgmma reads (one
buffer, viewed both ways). The weight is the ``O x 9C`` matrix of the OHWI parameter
``triton-conv-weights`` stores, and the output leaves through a 4-D box too (what lies past
the image's edges is not written). The rest is ``pingpong``'s structure: a loader
warpgroup fills a ring of operand stages, two consumer warpgroups take tiles in turn, so
one's epilogue runs beside the other's product.

Why: cuDNN's best plans ran ResNet-50's sixteen 3x3 convolutions at batch 32 at 316-440
TFLOP/s on an H200 (one or two waves of its output tiles; 297 of the program's 854 us).
The probe of this kernel (``bench/gluon_conv3x3_probe.py``,
``bench/results/gluon-conv3x3-2026-11-29-h200*.json``) ran the stride-1 ones on 56x56,
28x28 and 14x14 maps at batch 32 in 22.7 / 16.7 / 15.9 us against dnnc's tuned cuDNN plans'
23.8 / 17.5 / 17.4; at batch 128, and on 7x7 maps, it lost: a patch rounds the image's
side up (14 x 14 computed as 16 x 16 is 31% more work). So it is one more candidate the
partitioner times, offered where the patches waste little (``MAX_WASTE``).

In ResNet-50's program (H200, ``bench/compile_profile.py --own-kernels``,
``bench/results/compile-profile-2026-11-29-h200-resnet50-b32-b128-boxes-*.json``): at batch
32 the five 14x14 convolutions ran 15.4 us against cuDNN's 17.9, and the 28x28 ones went
to Triton's tiles reading NHWC (16.3 against 18.1), which autotuning took over this kernel.
The 64-channel products of the 56x56 map were bound by the boxes' copies from L2 (330
TFLOP/s); their resident form (``copies_module_text``: the weight in shared memory, three
boxes a tile) ran them in 17.7 us at batch 32 (22.6 before, cuDNN 24.5) and 61.8 at batch
128 (cuDNN 68.5): the program's kernels 0.817 -> 0.806 and 2.663 -> 2.610 ms.

The epilogue is the one ``KernelEmitter`` writes for the group (``kernels._boxes``), its
``tl.`` calls taken to their ``gl.`` twins (``pingpong.translate``). Gluon has no
interpreter: the kernel is built for sm_90 only and checked numerically on the GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from dnnc.backends.triton import pingpong, stem
from dnnc.backends.triton.skeleton import GroupInfo, TileDescriptor, gathers, pointer_names
from dnnc.backends.triton.tma import transposed_arg
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import element_name, element_of, shape_of

CAPABILITY = pingpong.CAPABILITY
BLOCK_K = 64
"""Input channels a K step: a box's row is 128 bytes, the 128-byte swizzle's width."""
PATCHES = ((8, 16), (4, 32), (2, 64))
"""(BOX_H, BOX_W) a tile of 128 pixels may take, the first preferred among equals."""
MAX_WASTE = 1.2
"""Most pixels a patch cover may compute for each of the output's: 56 x 56 in 8 x 16
patches computes 56 x 64 (1.14), 28 x 28 in 4 x 32 28 x 32 (1.14); 14 x 14 in 8 x 16
(1.31) still ran 9% faster than cuDNN at batch 32 on the probe and is offered
(``MAX_WASTE_FEW_TILES``), 7 x 7 (8 x 16: 2.6) is not."""
MAX_WASTE_FEW_TILES = 1.35
"""Where the output has at most ``pingpong.PROGRAMS`` tiles of 128 x 128 (one wave), the
patches' extra pixels cost nothing the wave does not already."""
MIN_TILES = pingpong.PROGRAMS // 2
"""Tiles an output needs before the kernel is offered: with fewer than half the SMs busy it
is not worth compiling (ResNet-50's 56x56 map at batch 1: 28 tiles)."""
STAGES_N64 = 7
"""Operand stages of a tile 64 channels wide: 24 KB each, 7 beside the two 16 KB output
buffers (200 KB). On the probe, 56x56 64 -> 64 at batch 32: 22.7 us with 7, 25.0 with 4."""
STAGES_N128 = 4
"""Operand stages of a tile 128 channels wide: 32 KB each, 4 beside the two 32 KB output
buffers (192 KB); with three, 7-11% slower on the probe."""
BOX_LAYOUT = "NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4)"
"""The shared layout of a box of the image or the output: rows of 128 bytes or more in the
128-byte swizzle, what the launch's descriptors take for these blocks
(``pingpong.descriptor``: Gluon's default)."""
COPIES_PATCH = (2, 32)
"""The patch of a tile of the resident form (``copies_module_text``): 64 pixels, its three
input boxes 4 x 32 rows (16 KB each); two stages and the weight take 170 KB."""
COPIES_PIXELS = COPIES_PATCH[0] * COPIES_PATCH[1]
COPIES_STAGES = 2
"""Operand stages of the resident form: one a consumer warpgroup (its text holds two)."""
CONSUMER_REGS = 224
LOADER_REGS = 56
MAXNREG = 168


def fits(op: tcp.Conv2dOp) -> bool:
    """Whether a ``boxes`` kernel computes ``op``: a float16 / bfloat16 3x3 convolution of
    stride 1, padding 1 on every side, no dilation, one group, whose input and output
    channels are multiples of 64."""
    o, c, kh, kw = shape_of(op.weight)
    elem = element_name(element_of(op.results[0]))
    return (
        elem in pingpong.GL_TYPES
        and element_name(element_of(op.input)) == elem
        and (kh, kw) == (3, 3)
        and tuple(ints(op.stride)) == (1, 1)
        and tuple(ints(op.padding)) == (1, 1, 1, 1)
        and tuple(ints(op.dilation)) == (1, 1)
        and int(scalar(op.groups)) == 1
        and c % BLOCK_K == 0
        and o % 64 == 0
    )


@dataclass(frozen=True)
class Plan:
    """What the kernel text needs to know of the group."""

    n: int
    h: int
    w: int
    c: int
    o: int
    image: int
    weight: int
    """The NHWC input's and the OHWI weight's positions among the group's block arguments."""
    pointers: tuple[str, ...]
    elem: str

    @property
    def block_n(self) -> int:
        return 64 if self.o == 64 else 128

    def tiles(self, patch: tuple[int, int], block_n: int) -> int:
        bh, bw = patch
        return self.n * -(-self.h // bh) * -(-self.w // bw) * -(-self.o // block_n)

    def waste(self, patch: tuple[int, int]) -> float:
        """Pixels computed per output pixel under ``patch``."""
        bh, bw = patch
        return (-(-self.h // bh) * bh * -(-self.w // bw) * bw) / (self.h * self.w)


def plan_of(info: GroupInfo) -> Plan | None:
    """What a ``boxes`` kernel of ``info``'s group reads, or None where it cannot be one: a
    convolution it ``fits`` of a channels-last block argument (brought to NCHW in the
    group) by an OHWI block argument (likewise), with one output, nothing summed and
    nothing gathered. The output's layout is checked where the epilogue stores it as
    whole tiles (``kernels._boxes``)."""
    op = info.anchor
    if not isinstance(op, tcp.Conv2dOp) or not fits(op) or info.summed is not None:
        return None
    if len(info.outputs) != 1 or gathers(info.group):
        return None
    image = transposed_arg(op.input, TO_NCHW, info.group)
    weight = transposed_arg(op.weight, TO_NCHW, info.group)  # OHWI -> OIHW: the same permutation
    if image is None or weight is None:
        return None
    args = list(info.group.body.block.args)
    n, c, h, w = shape_of(op.input)
    o = shape_of(op.weight)[0]
    _, signature, _ = pointer_names(info)
    elem = element_name(element_of(op.results[0]))
    return Plan(n, h, w, c, o, args.index(image), args.index(weight), tuple(signature), elem)


def patch_for(plan: Plan) -> tuple[int, int] | None:
    """The patch of the fewest computed pixels (``PATCHES``' order among equals), or None
    where even that computes too many (``MAX_WASTE``) or makes too few tiles
    (``MIN_TILES``)."""
    patch = min(PATCHES, key=plan.waste)
    one_wave = -(-plan.n * plan.h * plan.w // 128) * -(-plan.o // 128) <= pingpong.PROGRAMS
    limit = MAX_WASTE_FEW_TILES if one_wave else MAX_WASTE
    if plan.waste(patch) > limit or plan.tiles(patch, plan.block_n) < MIN_TILES:
        return None
    return patch


def offered(op: object) -> bool:
    """Whether a ``boxes`` kernel is offered for convolution ``op`` on Hopper (``fits`` and
    a patch for its output, ``patch_for``): ``triton-channels-last`` then hands it
    channels-last, as the kernel reads and stores."""
    if not isinstance(op, tcp.Conv2dOp) or not fits(op):
        return False
    n, c, h, w = shape_of(op.input)
    o = shape_of(op.weight)[0]
    return patch_for(Plan(n, h, w, c, o, 0, 0, (), element_name(element_of(op.results[0])))) is not None


def stages_for(plan: Plan) -> int:
    return STAGES_N64 if plan.block_n == 64 else STAGES_N128


def resident(plan: Plan, patch: tuple[int, int]) -> bool:
    """Whether a kernel of ``patch`` is the ``copies_module_text`` form: a 64-pixel patch of a
    64 -> 64 convolution (its whole weight fits in shared memory)."""
    return patch[0] * patch[1] == COPIES_PIXELS and plan.c == plan.o == 64


def resident_available() -> bool:
    """Whether this Triton builds the resident form: a tap's operand starts inside its copy
    at a row its length does not divide, which only Triton 3.6's reinterpret reaches
    (``stem.available``, the same condition)."""
    return stem.available()


def descriptors(plan: Plan, patch: tuple[int, int], block_n: int) -> tuple[TileDescriptor, ...]:
    """The kernel's TMA parameters in ``module_text``'s order and the tensors they cover
    (the resident form's input boxes take the two rows around the patch too)."""
    bh, bw = patch
    rows = bh + 2 if resident(plan, patch) else bh
    return (
        TileDescriptor("x_tile", plan.image, (plan.n, plan.h, plan.w, plan.c), (1, rows, bw, BLOCK_K), gluon=True),
        TileDescriptor("w_tile", plan.weight, (plan.o, 9 * plan.c), (block_n, BLOCK_K), gluon=True),
        TileDescriptor("o_tile", plan.pointers.index("out0"), (plan.n, plan.h, plan.w, plan.o), (1, bh, bw, block_n), gluon=True),
    )


def _preamble(header: list[str], constants: dict[str, int]) -> list[str]:
    """Both forms' module start: ``header``, the imports, Triton's version-dependent names,
    the constants, and the accumulator's and a box's layouts."""
    return [
        *header,
        "",
        "from triton.experimental import gluon",
        "from triton.experimental.gluon import language as gl",
        "from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait",
        "",
        "# Triton 3.6 names the TMA copies async_copy_*; later versions async_load / async_store.",
        'tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared',
        'tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global',
        "",
        *(f"{k} = gl.constexpr({v})" for k, v in constants.items()),
        "ACC = gl.constexpr(gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]))",
        f"BOX = gl.constexpr(gl.{BOX_LAYOUT})",
    ]


def _consumer_epilogue(epilogue: list[str]) -> tuple[list[str], list[str]]:
    """A consumer's lines around its product: before it, the ``epilogue``'s loads of vectors
    along the tile's columns (a bias, ``pingpong.hoisted_loads``), so that they arrive
    while it multiplies; after it, the rest of the epilogue on its tile (leaving ``result``)
    and the result's way out: once the consumer's last tile has left its buffer, through it
    and a TMA box of the output (what lies past the image's edges is not written)."""
    head, rest = pingpong.hoisted_loads(epilogue)
    stored = [
        "        tma.store_wait(0)  # this consumer's last tile has left its buffer",
        *(f"    {line}" for line in rest),
        "        buf.store(result)",
        "        fence_async_shared()",
        "        tma_store(o_tile, [tile_n, tile_y, tile_x, off_n], viewed(buf, [1, BOX_H, BOX_W, BLOCK_N]))",
        "    tma.store_wait(0)",
    ]
    return [f"    {line}" for line in head], stored


def module_text(header: list[str], name: str, plan: Plan, tile: tuple[int, int, int, int], epilogue: list[str]) -> str:
    """The kernel module: ``header`` (the group's IR as comments), the partitions, and the
    kernel ``name`` whose parameters are the group's pointers then ``x_tile``, ``w_tile``
    and ``o_tile``. ``tile``: (BOX_H, BOX_W, BLOCK_N, operand stages). The ``epilogue``
    runs on ``acc`` (pixels by channels) with ``tile_n``, ``tile_y``, ``tile_x`` (the
    patch's image, first row and column) and ``off_n`` (its first channel), and leaves the
    output tile in ``result``."""
    bh, bw, bn, stages = tile
    first, stored = _consumer_epilogue(epilogue)
    constants = {
        "BOX_H": bh,
        "BOX_W": bw,
        "BLOCK_M": bh * bw,
        "BLOCK_N": bn,
        "BLOCK_K": BLOCK_K,
        "STAGES": stages,
        "C": plan.c,
        "CB": plan.c // BLOCK_K,
        "KS": 9 * (plan.c // BLOCK_K),
        "PY": -(-plan.h // bh),
        "PX": -(-plan.w // bw),
        "PN": -(-plan.o // bn),
        "TILES": plan.tiles((bh, bw), bn),
    }
    pointers = ", ".join(plan.pointers)
    dtype = f"gl.{pingpong.GL_TYPES[plan.elem]}"
    descs = "x_tile, w_tile, o_tile"
    lines = [
        *_preamble(header, constants),
        "",
        "",
        "# a box and the matrix wgmma reads are one buffer: its memory viewed as the other shape",
        'if hasattr(gl.shared_memory_descriptor, "reinterpret"):',
        "",
        "    @gluon.jit",
        "    def viewed(view, shape: gl.constexpr):",
        f"        return view.reinterpret({dtype}, shape, BOX)",
        "",
        "else:  # Triton 3.6",
        "",
        "    @gluon.jit",
        "    def viewed(view, shape: gl.constexpr):",
        f"        return view._reinterpret({dtype}, shape, BOX)",
        "",
        "",
        "@gluon.jit",
        "def tile_origin(t):",
        '    """Tile ``t``\'s image, first row, first column and first channel; the channel tiles of',
        '    one patch are neighbours (they read the same boxes)."""',
        "    rest = t // PN",
        "    return rest // (PX * PY), ((rest // PX) % PY) * BOX_H, (rest % PX) * BOX_W, (t % PN) * BLOCK_N",
        "",
        "",
        "@gluon.jit",
        "def loader(ptrs, descs, bufs, bars, pid, programs, tiles):",
        f"    {descs}, = descs",
        "    a_bufs, w_bufs, c_bufs = bufs",
        "    ready, empty, turn = bars",
        "    for j in range(tiles):",
        "        n, y0, x0, col = tile_origin(pid + j * programs)",
        "        for k in range(KS):",
        "            s = j * KS + k",
        "            slot = s % STAGES",
        "            mbarrier.wait(empty.index(slot), ((s // STAGES) & 1) ^ 1)",
        "            tap = k // CB",
        "            c0 = (k % CB) * BLOCK_K",
        "            mbarrier.expect(ready.index(slot), x_tile.block_type.nbytes + w_tile.block_type.nbytes)",
        "            box = viewed(a_bufs.index(slot), [1, BOX_H, BOX_W, BLOCK_K])",
        "            tma_load(x_tile, [n, y0 + tap // 3 - 1, x0 + tap % 3 - 1, c0], ready.index(slot), box)",
        "            tma_load(w_tile, [col, tap * C + c0], ready.index(slot), w_bufs.index(slot))",
        "",
        "",
        "@gluon.jit",
        "def consume(ptrs, descs, bufs, bars, pid, programs, tiles, ME: gl.constexpr):",
        f"    {pointers}, = ptrs",
        f"    {descs}, = descs",
        "    a_bufs, w_bufs, c_bufs = bufs",
        "    ready, empty, turn = bars",
        "    buf = c_bufs.index(ME)",
        "    for j in range(ME, tiles, 2):",
        "        tile_n, tile_y, tile_x, off_n = tile_origin(pid + j * programs)",
        *first,
        *pingpong.k_loop(),
        *stored,
    ]
    lines += pingpong.consumers()
    lines += [
        "",
        "",
        "@gluon.jit",
        f"def {name}({pointers}, {descs}):",
        "    matrix: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_K], w_tile.dtype)",
        "    out: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], w_tile.dtype)",
        f"    a_bufs = gl.allocate_shared_memory({dtype}, [STAGES, BLOCK_M, BLOCK_K], matrix)",
        f"    w_bufs = gl.allocate_shared_memory({dtype}, [STAGES, BLOCK_N, BLOCK_K], w_tile.layout)",
        f"    c_bufs = gl.allocate_shared_memory({dtype}, [2, BLOCK_M, BLOCK_N], out)",
        "    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
        "    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
        "    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())",
        "    for i in gl.static_range(STAGES):",
        "        mbarrier.init(ready.index(i), count=1)",
        "        mbarrier.init(empty.index(i), count=1)",
        "    for i in gl.static_range(2):",
        "        mbarrier.init(turn.index(i), count=1)",
        *pingpong.warp_specialized(
            "TILES", f"({pointers},), ({descs},), (a_bufs, w_bufs, c_bufs), (ready, empty, turn)", (CONSUMER_REGS, LOADER_REGS)
        ),
    ]
    return "\n".join(lines)


def copies_module_text(header: list[str], name: str, plan: Plan, patch: tuple[int, int], epilogue: list[str]) -> str:
    """The resident form of ``module_text`` for a 64 -> 64 convolution (``resident``): the
    whole weight (nine 64 x 64 taps, 72 KB) is loaded once a program and stays in shared
    memory, and a tile of ``BOX_H x BOX_W = 64`` pixels takes three boxes of the input, one
    per tap column ``kx``, each ``BOX_H + 2`` rows from the patch's row above: tap
    ``(ky, kx)``'s operand is then rows ``ky * BOX_W ..`` of copy ``kx`` (a whole number of
    the swizzle's 8-row atoms). A tile moves 3 x 16 KB from L2 where ``module_text``'s moves
    nine 24 KB boxes and weights for 128 pixels; the 64-channel products there ran at
    330 TFLOP/s at batch 32 (H200), bound by those copies. Each consumer warpgroup owns one
    of the two stages (its tiles are every other one), so its next tile's boxes load while
    it runs its epilogue."""
    bh, bw = patch
    constants = {
        "BOX_H": bh,
        "BOX_W": bw,
        "BLOCK_M": bh * bw,
        "BLOCK_N": 64,
        "BLOCK_K": BLOCK_K,
        "C": plan.c,
        "PY": -(-plan.h // bh),
        "PX": -(-plan.w // bw),
        "PN": 1,
        "TILES": plan.tiles(patch, 64),
    }
    pointers = ", ".join(plan.pointers)
    dtype = f"gl.{pingpong.GL_TYPES[plan.elem]}"
    descs = "x_tile, w_tile, o_tile"
    first, stored = _consumer_epilogue(epilogue)
    lines = [
        *_preamble(header, constants),
        "MATRIX = gl.constexpr(gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2))",
        "",
        "",
        "@gluon.jit",
        "def viewed(view, shape: gl.constexpr):",
        '    """A box and the matrix wgmma reads are one buffer: its memory viewed as the other shape."""',
        f"    return view._reinterpret({dtype}, shape, BOX)",
        "",
        "",
        "@gluon.jit",
        "def tap_rows(copy, ky: gl.constexpr):",
        '    """Rows ``ky * BOX_W ..`` of a copy as an operand: its 8-row atom there, viewed as the',
        "    BLOCK_M rows from it (a subslice starts at a multiple of its length; this reinterpret",
        '    reaches past its view, which only Triton 3.6 allows: ``resident_available``)."""',
        f"    atoms = copy._reinterpret({dtype}, [(BOX_H + 2) * BOX_W // 8, 8, BLOCK_K], MATRIX)",
        f"    return atoms.index(ky * BOX_W // 8)._reinterpret({dtype}, [BLOCK_M, BLOCK_K], MATRIX)",
        "",
        "",
        "@gluon.jit",
        "def tile_origin(t):",
        "    return t // (PX * PY), ((t // PX) % PY) * BOX_H, (t % PX) * BOX_W, 0",
        "",
        "",
        "@gluon.jit",
        "def loader(ptrs, descs, bufs, bars, pid, programs, tiles):",
        f"    {descs}, = descs",
        "    a_bufs, w_bufs, c_bufs = bufs",
        "    ready, empty, w_ready = bars",
        "    mbarrier.expect(w_ready, 9 * w_tile.block_type.nbytes)",
        "    for tap in gl.static_range(9):",
        "        tma_load(w_tile, [0, tap * C], w_ready, w_bufs.index(tap))",
        "    for j in range(tiles):",
        "        n, y0, x0, col = tile_origin(pid + j * programs)",
        "        slot = j % 2",
        "        mbarrier.wait(empty.index(slot), ((j // 2) & 1) ^ 1)",
        "        mbarrier.expect(ready.index(slot), 3 * x_tile.block_type.nbytes)",
        "        for kx in gl.static_range(3):",
        "            box = viewed(a_bufs.index(slot * 3 + kx), [1, BOX_H + 2, BOX_W, BLOCK_K])",
        "            tma_load(x_tile, [n, y0 - 1, x0 + kx - 1, 0], ready.index(slot), box)",
        "",
        "",
        "@gluon.jit",
        "def consume(ptrs, descs, bufs, bars, pid, programs, tiles, ME: gl.constexpr):",
        f"    {pointers}, = ptrs",
        f"    {descs}, = descs",
        "    a_bufs, w_bufs, c_bufs = bufs",
        "    ready, empty, w_ready = bars",
        "    buf = c_bufs.index(ME)",
        "    mbarrier.wait(w_ready, 0)",
        "    for j in range(ME, tiles, 2):",
        "        tile_n, tile_y, tile_x, off_n = tile_origin(pid + j * programs)",
        *first,
        "        acc = gl.zeros((BLOCK_M, BLOCK_N), gl.float32, ACC)",
        "        mbarrier.wait(ready.index(ME), (j // 2) & 1)",
        "        for tap in gl.static_range(9):",
        "            rows = tap_rows(a_bufs.index(ME * 3 + tap % 3), tap // 3)",
        "            acc = warpgroup_mma(rows, w_bufs.index(tap).permute((1, 0)), acc, use_acc=tap > 0, is_async=True)",
        "        acc = warpgroup_mma_wait(0, deps=(acc,))",
        "        mbarrier.arrive(empty.index(ME))",
        *stored,
    ]
    lines += pingpong.consumers()
    lines += [
        "",
        "",
        "@gluon.jit",
        f"def {name}({pointers}, {descs}):",
        "    matrix: gl.constexpr = gl.NVMMASharedLayout.get_default_for([(BOX_H + 2) * BOX_W, BLOCK_K], w_tile.dtype)",
        "    out: gl.constexpr = gl.NVMMASharedLayout.get_default_for([BLOCK_M, BLOCK_N], w_tile.dtype)",
        f"    a_bufs = gl.allocate_shared_memory({dtype}, [6, (BOX_H + 2) * BOX_W, BLOCK_K], matrix)",
        f"    w_bufs = gl.allocate_shared_memory({dtype}, [9, BLOCK_N, BLOCK_K], w_tile.layout)",
        f"    c_bufs = gl.allocate_shared_memory({dtype}, [2, BLOCK_M, BLOCK_N], out)",
        "    ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())",
        "    empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())",
        "    w_ready = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())",
        "    for i in gl.static_range(2):",
        "        mbarrier.init(ready.index(i), count=1)",
        "        mbarrier.init(empty.index(i), count=1)",
        "    mbarrier.init(w_ready, count=1)",
        *pingpong.warp_specialized(
            "TILES", f"({pointers},), ({descs},), (a_bufs, w_bufs, c_bufs), (ready, empty, w_ready)", (CONSUMER_REGS, LOADER_REGS)
        ),
    ]
    return "\n".join(lines)


def grid(plan: Plan, patch: tuple[int, int], block_n: int) -> tuple[int, int, int]:
    """One program an SM, or one a tile where there are fewer."""
    return (min(pingpong.PROGRAMS, plan.tiles(patch, block_n)), 1, 1)


def patch_of(config: dict[str, int]) -> tuple[int, int]:
    """A config's (BOX_H, BOX_W): ``BLOCK_M`` pixels in ``BOX_H`` rows."""
    bh = config["BOX_H"]
    return bh, config["BLOCK_M"] // bh
