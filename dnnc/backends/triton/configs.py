"""A few launch configs per kernel kind, best guess first.

The first candidate is a heuristic for the group's sizes and is what runs when
autotuning is off and on the interpreter; otherwise on a GPU the candidates are
timed once and the fastest remembered (``launch.compile_group``): all of them, or for
a launch-bound group the first and the most parallel (``launch_bound_pair``). Block
sizes are powers of two (``tl.arange`` needs them); row kernels keep a whole row in
registers up to ``MAX_ROW_TILE`` elements and loop over longer rows.
"""

from __future__ import annotations

import math

from dnnc import knobs
from dnnc.backends.triton import boxes, pingpong, stem
from dnnc.backends.triton.layout import load_axis, tile_axes
from dnnc.backends.triton.ops import reads_channels_last_through_elementwise
from dnnc.backends.triton.rows import ROW_KINDS, row_axes
from dnnc.backends.triton.skeleton import GroupInfo, pow2, product_sizes
from dnnc.backends.triton.tma import TMA_CAPABILITY, operands
from dnnc.ir import tcp
from dnnc.ir.analysis import is_channelwise_conv
from dnnc.ir.types import element_name, element_of, numel, shape_of, torch_dtype

MAX_ROW_TILE = 8192
"""Longest row held in registers at once (elements, float32 in registers)."""

Config = dict[str, int]

CONFIG_KEYS = (
    "BLOCK",
    "BLOCK_M",
    "BLOCK_N",
    "BLOCK_K",
    "BLOCK_R",
    "TMA",
    "SPLIT_K",
    "PDL",
    "PINGPONG",
    "STEM",
    "BOXES",
    "BOX_H",
    "STRIP",
    "HALF",
    "num_warps",
    "num_stages",
)
OPTIONAL_KEYS = ("TMA", "SPLIT_K", "PDL", "PINGPONG", "STEM", "BOXES", "BOX_H", "STRIP", "HALF", "num_warps", "num_stages")
"""Keys a config may give that the kind's first heuristic config need not have: launch
options, ``TMA: 1`` (a product's operand tiles loaded through TMA, ``tma``),
``PINGPONG`` (a Gluon kernel of that many operand stages, ``pingpong``), ``STEM`` (a
stem convolution as a Gluon kernel on cells of the image with that many stages, ``stem``),
``BOXES`` and ``BOX_H`` (a 3x3 convolution as a Gluon kernel on TMA boxes of the image, that
many stages, ``BLOCK_M`` pixels in ``BOX_H`` rows a tile, ``boxes``),
``STRIP`` and ``HALF`` (a depthwise convolution of a channels-last input on strips of
that many output columns, a window row's products summed in float16 with ``HALF: 1``,
``kernels._channelwise_strips``), ``SPLIT_K`` (a product's K cut into that many slices,
each its own programs) and ``PDL: 1`` (launched with Programmatic Dependent Launch, ``with_launch``)."""
PDL_CAPABILITY = 90
"""Programmatic Dependent Launch (``griddepcontrol``) is Hopper's and later's."""
LAUNCH_EARLY_ATTR = "dnnc.launch_early"
"""On a Triton group whose kernel may be launched with PDL (``launch_order``): ``"any"``
right after a Triton kernel, ``"one_wave"`` right after a cuDNN matrix product, where a
config keeps PDL only if its grid fits one wave (``ONE_WAVE_FOLLOWER_PROGRAMS``)."""
AFTER_TRITON = "any"
AFTER_LIBRARY = "one_wave"
ONE_WAVE_FOLLOWER_PROGRAMS = 132
"""Programs of a kernel that may be launched with PDL behind a cuDNN matrix product: one
per SM of an H100 SXM or H200. Measured on an H200, each pair cold-compiled in one call:
behind every cuDNN product, the Whisper encoder b1 ran 0.245 -> 0.304 ms (its layer norms
of 188 programs behind the products of 1500 x 384), and within one wave 0.254; GPT-2
8 x 128, whose norms (512 programs) and GELUs (3072) gained behind its products, 0.767
behind every one and 0.794 within one wave (0.803 after Triton kernels only). So the
grid is not the whole cause, and no profile says what is. Within one wave keeps PDL on
most followers of BERT's and T5's batch-1 products (8 to 128 programs in their first
configs), with which those gained 10% and 11%; not measured again within one wave.
Which configs fit is known once a config's source is generated (``launch``)."""
MAX_SPLIT_K = 64
"""Most slices a product's K may be cut into."""
MAX_STRIP = 16
"""Most output columns a depthwise kernel's strip may hold (each its own accumulator tile)."""
MAX_BLOCK = 1 << 16
"""Largest block extent a config may give (``tl.arange`` over more does not compile
in reasonable time or registers)."""


def config_problem(key: str, value: object) -> str | None:
    """What is wrong with one entry of a config from outside the compiler (a tuning
    spec, an artifact's record), or None."""
    if key not in CONFIG_KEYS:
        return f"unknown (expected {', '.join(CONFIG_KEYS)})"
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        return f"{value!r} is not a positive integer"
    if key.startswith("BLOCK") and value & (value - 1):
        return f"{value} is not a power of two (tl.arange needs one)"
    if key.startswith("BLOCK") and value > MAX_BLOCK:
        return f"{value} is over {MAX_BLOCK}"
    if key in ("TMA", "PDL", "HALF") and value != 1:
        return f"{value}: {key} is 1 where given"
    if key == "STRIP" and value > MAX_STRIP:
        return f"{value} columns: a strip has at most {MAX_STRIP}"
    if key == "SPLIT_K" and value > MAX_SPLIT_K:
        return f"{value} slices: at most {MAX_SPLIT_K}"
    if key == "num_warps" and value not in (1, 2, 4, 8, 16, 32):
        return f"{value} warps: expected 1, 2, 4, 8, 16 or 32"
    if key in ("num_stages", "PINGPONG") and value > 8:
        return f"{value} stages: at most 8"
    if key == "PINGPONG" and value < 2:
        return f"{value} stage: a ping-pong ring needs at least 2 (one read by a product in flight, one loading)"
    if key == "BOXES" and not 2 <= value <= 8:
        return f"{value} stages: a box kernel takes 2 to 8"
    if key == "BOX_H" and (value & (value - 1) or value > 128):
        return f"{value} rows: a box kernel's patch has a power of two up to 128"
    if key == "STEM" and not 2 <= value <= 4:
        return f"{value} stages: a stem kernel takes 2 to 4 (shared memory holds 4 copies of a tile each)"
    return None


def _unique(configs: list[Config]) -> list[Config]:
    out: list[Config] = []
    for c in configs:
        if c not in out:
            out.append(c)
    return out


def launch_bound_pair(configs: list[Config]) -> list[Config]:
    """The first config and the most parallel one: the smallest tile (most programs to
    spread over the SMs), then the longest ``BLOCK_K`` (fewest steps of a product's
    loop), then the fewest warps and the most stages, among the configs that cut no K
    (a product that has split-K configs lists its most-split one first, ``product``). A
    kernel whose time is mostly launch and tail gains from more programs and shorter
    loops, and little else."""

    def tile(c: Config) -> int:
        return math.prod(c.get(k, 1) for k in ("BLOCK", "BLOCK_M", "BLOCK_N", "BLOCK_R"))

    whole = [c for c in configs if "SPLIT_K" not in c] or configs
    parallel = min(whole, key=lambda c: (tile(c), -c.get("BLOCK_K", 0), c.get("num_warps", 4), -c.get("num_stages", 0)))
    return _unique([configs[0], parallel])


def pointwise(n: int, pool: bool = False, channels_last: bool = False) -> list[Config]:
    """``BLOCK`` consecutive outputs per program. A pooling window read along W (NCHW)
    is strided, so pools take few elements per thread; channels-last pools read
    along C and take 8 (16-byte accesses in float16)."""
    cap = pow2(n)
    if pool and channels_last:
        sizes = [(1024, 4), (512, 4), (256, 4), (2048, 8)]
    elif pool:
        sizes = [(256, 4), (128, 4), (512, 8)]
    else:
        sizes = [(1024, 4), (2048, 8), (4096, 8), (512, 4)]
    return _unique([{"BLOCK": max(16, min(b, cap)), "num_warps": w} for b, w in sizes])


def tiles(m: int, n: int, pool: bool = False) -> list[Config]:
    """``BLOCK_M x BLOCK_N`` tiles over the load axis (``m`` long) and the store axis
    (``n``); a short store axis gives its share of the tile to the load axis."""
    shapes = [(32, 32, 4), (64, 32, 4), (64, 64, 8)] if pool else [(64, 64, 4), (32, 32, 4), (128, 64, 8), (64, 128, 8)]
    configs = []
    for bm, bn, warps in shapes:
        block_n = min(bn, pow2(n))
        block_m = min(pow2(m), bm * bn // block_n)
        configs.append({"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": max(1, min(warps, block_m * block_n // 256))})
    return _unique(configs)


ACROSS_ROWS_TILES = ((8192, 2), (16384, 2), (2048, 2))
"""(elements of the tile, warps) offered first to a row kernel whose input is contiguous
along its rows, not its columns (``rows``: a mean over H and W of an NHWC tensor). Two
warps with 64-256 elements each came first on ResNet-50's global mean (2048 channels of
7 x 7) at batches 1, 32 and 128: 2.0 / 3.4 / 7.4 us against 2.0 / 5.0 / 14.0 for the
best of four warps and more (H200, ``bench/edge_steps_probe.py``): each thread has many
strided loads in flight, where more threads each had a few."""


def rows(n_rows: int, r: int, across_rows: bool = False) -> list[Config]:
    """``across_rows``: the input is contiguous along the rows (``ACROSS_ROWS_TILES``)."""
    configs = []
    if pow2(r) <= MAX_ROW_TILE:
        block_r = max(16, pow2(r))
        tiles = ((4096, 4), (8192, 8), (2048, 4), (16384, 16))
        for target, warps in (*ACROSS_ROWS_TILES, *tiles) if across_rows else tiles:
            block_m = max(1, min(pow2(n_rows), target // block_r))
            warps = min(warps, max(1, block_m * block_r // 256))
            configs.append({"BLOCK_M": block_m, "BLOCK_R": block_r, "num_warps": warps})
    else:
        for block_r, warps in ((4096, 8), (2048, 4), (8192, 16)):
            configs.append({"BLOCK_M": 1, "BLOCK_R": block_r, "num_warps": warps})
    return _unique(configs)


def channelwise(m: int, n: int) -> list[Config]:
    """``BLOCK_M`` output pixels by ``BLOCK_N`` channels of a depthwise convolution (no
    ``tl.dot``, so no 16-wide minimum): wide along the pixels, which are contiguous in a
    row-major NCHW tensor, then squarer and narrower tiles."""
    shapes = [(128, 32, 4), (64, 64, 4), (256, 16, 4), (64, 32, 4), (128, 64, 8)]
    configs = []
    for bm, bn, warps in shapes:
        block_m, block_n = min(bm, pow2(m)), min(bn, pow2(n))
        configs.append({"BLOCK_M": block_m, "BLOCK_N": block_n, "num_warps": max(1, min(warps, block_m * block_n // 256))})
    return _unique(configs)


STRIP_TILES = ((16, 64, 4, 1), (32, 32, 4, 1), (8, 64, 4, 0), (4, 32, 1, 1))
"""``BLOCK_M`` strips by ``BLOCK_N`` channels, warps, ``HALF`` of a depthwise kernel on
strips: the fastest of 44 configs on an H200 for convnext_tiny's four 7x7 convolutions at
batch 32 (``bench/depthwise_strip_probe.py``; float32 products won only at 768 x 7 x 7,
by 6%), and a small tile for a batch of one. Each is a kernel to compile while tuning (its
unrolled window rows take seconds): ``(8, 32, 2, 1)``, within 2-6% of the best on every
shape and first on none, is left out."""


def strip_width(width: int) -> int:
    """Output columns of a depthwise kernel's strip for an output ``width`` wide: 7 (the
    probe's best, dividing every width of a 224-pixel image's pyramid), else the first of
    8, 6, 5 and 4 that divides it, else 7 or the whole width, the last strip masked."""
    return next((s for s in (7, 8, 6, 5, 4) if width % s == 0), min(width, 7))


def channelwise_strips(op: tcp.Conv2dOp) -> list[Config]:
    """Configs of a depthwise convolution of a channels-last input on strips of output
    columns (``kernels._channelwise_strips``): ``HALF`` ones for float16 operands only."""
    nb, o, ho, wo = shape_of(op.results[0])
    strip = strip_width(wo)
    rows = nb * ho * math.ceil(wo / strip)
    half = all(element_name(element_of(v)) == "f16" for v in (op.input, op.weight))
    configs = []
    for bm, bn, warps, halved in STRIP_TILES:
        if halved and not half:
            continue
        block_m, block_n = min(bm, pow2(rows)), min(bn, pow2(o))
        config = {
            "BLOCK_M": block_m,
            "BLOCK_N": block_n,
            "STRIP": strip,
            "num_warps": max(1, min(warps, block_m * block_n // 128)),
        }
        configs.append({**config, "HALF": 1} if halved else config)
    return _unique(configs)


SMALL_M = 16
"""Products with at most this many rows (batch-1 GEMVs, 1x1 convolutions on 1x1 maps
of squeeze-excite blocks) fill one ``tl.dot`` row tile (its minimum is 16): they read
the weight once and are bound by that, so their tiles are narrow in N (more programs
to stream it) and long in K (fewer loop steps)."""


FEW_M = 64
"""Products with at most this many rows (a batch of 32 through a squeeze-excite block or
a classifier) have few row tiles, so square tiles left 2-4 programs looping over K on
an H200's 132 multiprocessors (32 x 960 -> 240: 12 us for 15 M multiply-adds): their
tiles are narrow in N and long in K too, as the small products' are."""


LARGE_PRODUCT_TILES = [
    (64, 128, 64, 4, 3),
    (128, 64, 64, 4, 3),
    (128, 128, 32, 8, 3),
    (128, 128, 64, 4, 3),
    (64, 128, 32, 4, 4),
    (64, 64, 32, 4, 3),
]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) of products with more rows: the first is
the config a candidate is priced with untuned. K steps of 64 came first on every 1x1
convolution of ResNet-50 at batch 128 (H200, NHWC): 64 x 128 x 64 on four of seven (the
64 -> 256 residual one: 0.138 ms against 0.191 for 64 x 64 x 32), 128 x 128 x 64 on two,
128 x 64 x 64 on 256 -> 64 (0.077 against 0.094)."""


TMA_PRODUCT_TILES = [(128, 128, 64, 4, 3), (64, 128, 64, 4, 3), (128, 64, 64, 4, 3)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) of TMA products (``tma``), offered before
the pointer tiles where the operands allow them on Hopper: 128 x 128 x 64 with four
warps came first on the 1x1 convolutions + residual of ResNet-50's stages 2-4 at batch
128, the narrower ones at batch 32 (H200, ``bench/results/gemm-tma-2026-11-27-h200.json``).
Stage 1 (K = 64, one step) ran faster with pointer tiles, which stay candidates."""


SUMMED_PRODUCT_TILES = [(128, 128, 64, 4, 3), (128, 256, 64, 8, 3), (128, 128, 64, 8, 3)]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) offered first to two summed products (one
loop over both K): the fastest on ResNet-50's four blocks that change width at batch 32
and 128 (H200, ``bench/summed_probe.py``): 128 x 128 x 64 with four warps in stage 1,
128 x 256 x 64 with eight from stage 2 on at batch 128."""


SPLIT_K_PROGRAMS = 128
"""Programs a split-K product of at most ``SMALL_M`` rows aims at: about one per
multiprocessor of an H100 or H200 (132)."""
SPLIT_K_ROW_PROGRAMS = 256
"""... and one of more rows, cut into 16-row tiles: about two per multiprocessor."""
FEW_TILES = 32
"""Products with at most this many 64 x 64 output tiles (batch included) get split-K configs."""
LONG_K = 1024
"""... and with at least this long a K; each slice keeps at least ``MIN_SLICE`` of it."""
MIN_SLICE = 128


def split_k(m: int, n: int, k: int, batch: int = 1) -> list[Config]:
    """Split-K configs of a product with few output tiles and a long K, most slices first:
    16 x 64 tiles, K cut into as many slices as bring the programs to about
    ``SPLIT_K_PROGRAMS`` (``SPLIT_K_ROW_PROGRAMS`` past ``SMALL_M`` rows) while each keeps
    ``MIN_SLICE``, and half as many. ResNet-50's stage-4 3x3 convolutions at batch 1
    (49 x 512 x 4608) are 8 such 64 x 64 tiles: without a split, 8 programs loop over K
    while the rest of the GPU waits. Cut into 16-row tiles and 8 slices (256 programs) that
    convolution ran 6.8 us alone, against 11.1 as 64-row tiles in 16 slices (128 programs)
    and cuDNN's 11.8; stage 3's (196 x 256 x 2304) 6.3 in 4 slices, against 7.2 and 8.2
    (H200, ``split-grid`` set of ``bench/split_k_probe.py``). The classifier (1 x 1000 x
    2048) ran fastest in 8 slices of 16 x 64 tiles (H100, ``split-k-probe-2026-11-27-h100.json``)."""
    if math.ceil(m / 64) * math.ceil(n / 64) * batch > FEW_TILES or k < LONG_K:
        return []
    tiles = math.ceil(m / 16) * math.ceil(n / 64) * batch
    aim = SPLIT_K_PROGRAMS if m <= SMALL_M else SPLIT_K_ROW_PROGRAMS
    most = 1 << int(math.log2(max(1, min(aim // tiles, k // MIN_SLICE, MAX_SPLIT_K))))
    return [{**_tile(16, 64, 64, 4, 3, (m, n, k)), "SPLIT_K": slices} for slices in (most, most // 2) if slices > 1]


def product(m: int, n: int, k: int, tma: bool = False, batch: int = 1) -> list[Config]:
    """Tiles of a product, best guess first; ``tma``: TMA tiles first (Hopper, operands
    that are row-major matrices in memory) for products with more rows than ``FEW_M``.
    A product with few tiles and a long K (``split_k``) puts its most-split config before
    all: the partitioner times a candidate with its first config, and unsplit such a
    product leaves most of the GPU idle (ResNet-50's stage-4 3x3 convolutions at batch 1:
    8 tiles, K = 4608)."""

    if m <= SMALL_M:
        shapes = [(16, 32, 128, 4, 3), (16, 16, 256, 4, 3), (16, 64, 64, 4, 4), (16, 128, 64, 4, 3)]
    elif m <= FEW_M:
        shapes = [(64, 32, 128, 4, 3), (64, 16, 256, 4, 3), (64, 64, 64, 4, 3), (64, 64, 32, 4, 3)]
    else:
        shapes = LARGE_PRODUCT_TILES
    tiled = (
        [{"TMA": 1, **_tile(bm, bn, bk, w, s, (m, n, k))} for bm, bn, bk, w, s in TMA_PRODUCT_TILES] if tma and m > FEW_M else []
    )
    splits = split_k(m, n, k, batch)
    return _unique([*splits[:1], *tiled, *(_tile(bm, bn, bk, w, s, (m, n, k)) for bm, bn, bk, w, s in shapes), *splits[1:]])


def _tile(bm: int, bn: int, bk: int, warps: int, stages: int, sizes: tuple[int, int, int]) -> Config:
    """A product config of blocks no larger than the power of two above each size, nor
    smaller than 16 (``tl.dot``'s least extent)."""

    def fit(b: int, size: int) -> int:
        return max(16, min(b, pow2(size)))

    m, n, k = sizes
    return {"BLOCK_M": fit(bm, m), "BLOCK_N": fit(bn, n), "BLOCK_K": fit(bk, k), "num_warps": warps, "num_stages": stages}


ATTENTION_SMEM_BUDGET = 160 * 1024
"""Shared memory an attention config may plan for (bytes): under the 227 KiB a block
may take on Hopper, with room for what Triton adds beyond the operand tiles."""


def attention_smem(bm: int, bn: int, d: int, dv: int, stages: int, itemsize: int) -> int:
    """Bytes of the tiles an attention program stages: the query tile, ``stages``
    buffers of the key and value tiles, and the probabilities fed to the second dot."""
    return itemsize * (bm * pow2(d) + stages * bn * (pow2(d) + pow2(dv)) + bm * bn)


def attention(sq: int, sk: int, d: int, dv: int | None = None, itemsize: int = 2) -> list[Config]:
    """``BLOCK_M`` query rows per program, keys ``BLOCK_N`` at a time: 128 x 64 with 8
    warps is the usual shape for head dims up to 128 on Hopper; short sequences take
    smaller tiles (a program per 16 rows keeps more of the GPU busy), and large head
    dims smaller key blocks (the tiles live in registers). A shape whose tiles outgrow
    the shared-memory budget (float32, head dim 128) pipelines fewer stages, or is
    left out; the smallest shape always stays."""
    dv = d if dv is None else dv
    shapes = [(128, 64, 8, 3), (64, 64, 4, 3), (128, 32, 8, 2), (64, 32, 4, 2)]
    if max(d, dv) > 128:
        shapes = [(64, 32, 4, 2), (32, 32, 4, 2)]
    configs = []
    for bm, bn, w, stages in shapes:
        bm, bn = max(16, min(bm, pow2(sq))), max(16, min(bn, pow2(sk)))
        while stages > 1 and attention_smem(bm, bn, d, dv, stages, itemsize) > ATTENTION_SMEM_BUDGET:
            stages -= 1
        if attention_smem(bm, bn, d, dv, stages, itemsize) <= ATTENTION_SMEM_BUDGET:
            configs.append({"BLOCK_M": bm, "BLOCK_N": bn, "num_warps": w, "num_stages": stages})
    if not configs:
        configs.append({"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 4, "num_stages": 1})
    return _unique(configs)


def candidates(info: GroupInfo, capability: int | None = None) -> list[Config]:
    """The configs of ``info``'s kernel, best guess first; ``capability``: the GPU's
    (``sm_<capability>``) where it is known, which adds TMA tiles on Hopper."""
    op = info.anchor
    if info.kind in ("pointwise", "transpose", "pool"):
        axes = tile_axes(info.outputs, info.inside)
        if axes is not None:
            shape = shape_of(info.outputs[0])
            return tiles(shape[axes[0]], shape[axes[1]], pool=info.kind == "pool")
        if op is None:
            return pointwise(numel(info.outputs[0]))
        return pointwise(numel(info.outputs[0]), pool=True, channels_last=load_axis(op.operands[0], info.inside) == 1)
    assert op is not None
    if info.kind in ROW_KINDS:
        shape = shape_of(op.operands[0])
        axes = row_axes(op)
        r = math.prod(shape[a] for a in axes)
        return rows(math.prod(shape) // max(1, r), r, load_axis(op.operands[0], info.inside) not in (None, *axes))
    if isinstance(op, tcp.AttentionOp):
        _, _, sq, d = shape_of(op.query)
        itemsize = torch_dtype(element_of(op.query)).itemsize
        return attention(sq, shape_of(op.key)[2], d, shape_of(op.value)[3], itemsize)
    if is_channelwise_conv(op):
        assert isinstance(op, tcp.Conv2dOp)
        if reads_channels_last_through_elementwise(op):
            return channelwise_strips(op)
        nb, o, ho, wo = shape_of(op.results[0])
        return channelwise(nb * ho * wo, o)
    m, n, k, batch = product_sizes(op)
    if info.summed is not None:  # pointer tiles, K whole: blocks that fit the shorter K
        k = min(k, product_sizes(info.summed)[2])
        summed_tiles = [_tile(bm, bn, bk, w, s, (m, n, k)) for bm, bn, bk, w, s in SUMMED_PRODUCT_TILES]
        pointer_tiles = (c for c in product(m, n, k, False, batch) if "SPLIT_K" not in c)
        return _unique([*summed_tiles, *pointer_tiles, *pingpong_configs(info, capability)])
    with_tma = capability is not None and capability >= TMA_CAPABILITY and operands(op, info.group) is not None
    return [
        *stem_configs(info, capability),
        *box_configs(info, capability),
        *product(m, n, k, with_tma, batch),
        *pingpong_configs(info, capability),
    ]


def stem_configs(info: GroupInfo, capability: int | None) -> list[Config]:
    """The ``stem`` kernel of a network's first convolution on Hopper where its group can be
    one, first: it prices the group (the Triton tiles run such a stem 1.3-4x slower; the
    probe's numbers are in ``stem``)."""
    if capability != stem.CAPABILITY or not stem.available() or stem.plan_of(info) is None:
        return []
    return [
        {"BLOCK_M": stem.BH * stem.TILE_COLUMNS, "BLOCK_N": stem.OUT_CHANNELS, "BLOCK_K": 16, "num_warps": 4, "STEM": stem.STAGES}
    ]


def pingpong_configs(info: GroupInfo, capability: int | None) -> list[Config]:
    """The ``pingpong`` kernels of a product on Hopper where its group can be one and has
    ``pingpong.MIN_TILES`` 128 x 128 tiles, after the Triton tiles (the first config
    prices the group; tuning times them all)."""
    if capability != pingpong.CAPABILITY or not pingpong.available():
        return []
    plan = pingpong.plan_of(info)
    if plan is None or pingpong.tile_count(plan.m, plan.n, pingpong.TILES[0]) < pingpong.MIN_TILES:
        return []
    return [
        {"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "num_warps": 4, "PINGPONG": pingpong.stages_for(plan, s)}
        for m, n, k, s in pingpong.TILES
    ]


def box_configs(info: GroupInfo, capability: int | None) -> list[Config]:
    """The ``boxes`` kernel of a stride-1 3x3 convolution on Hopper where its group can be
    one and a patch of 128 pixels wastes little (``boxes.patch_for``), first: the
    partitioner times a Triton group with its first config (``partition.pricing``), and
    Triton's windowed tiles ran ResNet's 3x3 convolutions far slower than cuDNN, so with
    them first the group was never chosen to be tuned (ResNet-50 at batch 32 on an H200:
    no box kernel in the program when it came after them). A 64 -> 64 convolution is
    offered the resident form first (``boxes.copies_module_text``) where this Triton
    builds it."""
    if capability != boxes.CAPABILITY or not pingpong.available():
        return []
    plan = boxes.plan_of(info)
    patch = None if plan is None else boxes.patch_for(plan)
    if plan is None or patch is None:
        return []
    bh, bw = boxes.COPIES_PATCH
    box = {"BLOCK_M": 128, "BLOCK_N": plan.block_n, "BLOCK_K": boxes.BLOCK_K, "num_warps": 4}
    found = [{**box, "BOXES": boxes.stages_for(plan), "BOX_H": patch[0]}]
    if boxes.resident(plan, (bh, bw)) and plan.waste((bh, bw)) <= boxes.MAX_WASTE and boxes.resident_available():
        found.insert(0, {**box, "BLOCK_M": bh * bw, "BOXES": boxes.COPIES_STAGES, "BOX_H": bh})
    return found


def with_launch(config: Config, capability: int | None, launch_early: bool = True) -> Config:
    """``config`` with ``PDL: 1`` where the kernel may launch early (``launch_early``:
    it follows a Triton kernel or a cuDNN matrix product, ``launch_order``), runs on
    ``sm_<capability>`` of Hopper or later and ``knobs.pdl`` is on; without it elsewhere
    (a record built for sm_90 rebuilt on sm_80, the interpreter).

    A kernel launched so may start while the kernel before it in the stream still runs;
    every program waits at its first line (``skeleton.assemble``) until that kernel has
    finished and its memory is visible. The wait comes before any load, the weights'
    too: a kernel that read only weights before waiting could finish before its
    predecessor, and the kernel after it, waiting only on it, would read what the one
    before had not yet written. Kernels of other sources (cuDNN, torch, a user's) launch
    plainly and wait for everything before them."""
    rest = {k: v for k, v in config.items() if k != "PDL"}
    pdl = launch_early and capability is not None and capability >= PDL_CAPABILITY and knobs.get().pdl
    return {**rest, "PDL": 1} if pdl else rest


def merge_base(info: GroupInfo) -> Config:
    """What a config from outside the compiler (a tuning spec's record, an artifact's) is
    merged over: the first heuristic config that cuts no K, for any GPU (no TMA). A product
    with few tiles has a split-K config first (``product``); merged over it, a record that
    names no ``SPLIT_K`` would run split, not the kernel it was measured or built as."""
    return next(c for c in candidates(info) if "SPLIT_K" not in c)
