"""Triton source for one ``tcp.isolated_group`` and one config, per kernel kind.

Each kind is a small skeleton (which positions a program owns, which loops it
runs); everything else in the group is evaluated through ``KernelEmitter.value`` at the
positions the skeleton asks for, so prologues (ops before the anchor) and
epilogues (elementwise ops after it) fuse by construction:

* ``pointwise`` / ``pool``: a program owns ``BLOCK`` consecutive elements of the
  outputs (all outputs have one element count), so stores are coalesced, and so are
  loads of inputs laid out like the output (a pool between two transposes that make
  it NHWC -> NHWC runs over its NHWC output, reading along C); pooling is a loop over
  the window inside the element's expression.
* ``transpose`` (no anchor), and ``pool`` whose main input is contiguous along
  another axis than its output (``layout.tile_axes``): a program owns a ``BLOCK_M x
  BLOCK_N`` tile of the output, rows along the axis the input is contiguous along
  and columns along the output's innermost axis, and one program per position of
  the other axes. Loads are then contiguous along the rows and stores along the
  columns; Triton gives each its own coalesced layout and transposes the tile
  through shared memory in between.
* row kernels (``reduce``, ``softmax``, ``layer_norm``, ``rms_norm``, ``scan``,
  ``topk``): ``rows``.
* ``matmul`` (``matmul``/``batch_matmul``) and ``conv2d`` (implicit GEMM, any
  ``groups``): a program owns a ``BLOCK_M x BLOCK_N`` output tile and loops over K;
  operand tiles are evaluated through the emitter (so transposes, casts and
  elementwise prologues fuse into the loads) and the epilogue (bias, activation,
  residual) runs on the accumulator before the one store; transposes at the end of
  the epilogue permute the positions stored at (``skeleton.store_outputs``). With
  ``SPLIT_K`` a program owns a slice of K for its tile instead, and the tile's last
  program to finish adds the partials up and runs the epilogue (``_split_k_partial``).
  Two summed convolutions (``ops.summed_products``) run a K loop each over the tile,
  into one accumulator where only bias adds lie between them and their sum. With
  ``PINGPONG`` in its config a 1x1 convolution (summed or not) is a Gluon kernel instead:
  persistent programs whose warpgroups take tiles in turn (``pingpong``, ``_pingpong``).
  With ``STEM`` a stride-2 convolution of an NCHW image of at most 4 channels is a Gluon
  kernel on 2 x 2 cells of the image (``stem``, ``_stem``). With ``BOXES`` a stride-1
  3x3 convolution of a channels-last input is a Gluon kernel whose operand tiles are 4-D
  TMA boxes of the image (``boxes``, ``_boxes``).
* ``attention``: a program owns ``BLOCK_M`` query rows of one (batch, head) and
  loops over the keys ``BLOCK_N`` at a time with an online softmax (running row
  max and sum in float32, the accumulator rescaled as the max grows), so the scores
  never reach memory; a causal program stops at its last row's diagonal. Query, key,
  value and mask tiles are evaluated through the emitter (the head split's
  transposes and a broadcast mask are index arithmetic); the epilogue runs on the
  normalized output tile.

Shapes are static and written into the source as numbers; block sizes are
module-level constexprs, so the source reads as a plain Triton kernel.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable

from xdsl.ir import Operation, SSAValue

from dnnc.backends.triton import boxes, pingpong, stem, tma
from dnnc.backends.triton.emitter import TL_TYPES, CodegenError, Columns, Index, KernelEmitter
from dnnc.backends.triton.layout import tile_axes
from dnnc.backends.triton.ops import reads_channels_last
from dnnc.backends.triton.rows import ROW_KINDS, rows_kernel
from dnnc.backends.triton.skeleton import (
    INT32_LIMIT,
    SPLIT_ARRIVALS,
    SPLIT_PARTIALS,
    GroupInfo,
    KernelSource,
    TileDescriptor,
    TileStore,
    anchor_axes,
    assemble,
    described,
    index_type,
    largest_tensor,
    launch_options,
    one_accumulator,
    pointer_names,
    pow2,
    product_sizes,
    store_output,
    store_outputs,
)
from dnnc.ir import tcp
from dnnc.ir.analysis import is_channelwise_conv, is_one_by_one_conv, is_pixelwise_conv
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import describe, element_name, element_of, is_float, numel, shape_of

LOG2_E = 1.4426950408889634
"""Attention keeps its scores in base 2: ``exp(x) = exp2(x * log2(e))``."""

# Pointwise and pooling ------------------------------------------------------------------


def _pointwise(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    pointers, signature, outs = pointer_names(info)
    sizes = {numel(y) for y in info.outputs}
    if len(sizes) != 1:
        shown = ", ".join(describe(y.type) for y in info.outputs)
        raise CodegenError(f"a {info.kind} Triton group needs outputs of one element count, got {shown}")
    one_shape = len({shape_of(y) for y in info.outputs}) == 1
    if info.anchor is not None and not (one_shape and all(info.depends_on_anchor(y) for y in info.outputs)):
        shown = ", ".join(describe(y.type) for y in info.outputs)
        raise CodegenError(f"{info.anchor.name}: the outputs of its group must be computed from it, in one shape; got {shown}")
    axes = tile_axes(info.outputs, info.inside)
    if axes is not None:
        return _tiled(info, axes, config, interpret)
    (n,) = sizes
    em = KernelEmitter(pointers, interpret)
    em.tile = "(BLOCK,)"
    em.line(f"pid = tl.program_id(0){index_type(largest_tensor(info))}")
    em.line("offs = pid * BLOCK + tl.arange(0, BLOCK)")
    em.line(f"mask = offs < {n}")
    for y, out in zip(info.outputs, outs):
        v = em.value(y, Index(shape_of(y), flat="offs"), "mask")
        store_output(em, out, y, v, "offs", "mask")
    block = config["BLOCK"]
    name, text = assemble(info, em, signature, {"BLOCK": block}, config)
    return KernelSource(info.kind, name, text, signature, (math.ceil(n / block), 1, 1), launch_options(config))


def _tiled(info: GroupInfo, axes: tuple[int, int], config: dict[str, int], interpret: bool) -> KernelSource:
    """2-D tiles over the load axis (rows) and the store axis (columns) of the outputs."""
    load, store = axes
    pointers, signature, outs = pointer_names(info)
    shape = shape_of(info.outputs[0])
    block_m, block_n = config["BLOCK_M"], config["BLOCK_N"]
    tiles_m, tiles_n = math.ceil(shape[load] / block_m), math.ceil(shape[store] / block_n)
    outer_shape = tuple(d for i, d in enumerate(shape) if i not in axes)
    programs = tiles_m * tiles_n * math.prod(outer_shape)
    em = KernelEmitter(pointers, interpret)
    em.tile = "(BLOCK_M, BLOCK_N)"
    em.comment(f"rows: axis {load} (the input is contiguous along it), columns: axis {store} (the output is)")
    em.line(f"pid = tl.program_id(0){index_type(largest_tensor(info))}")
    # Programs in row-major order over (other axes, tile_m, tile_n).
    start_m = start_n = ""
    if tiles_n > 1:
        em.line(f"tile_n = pid % {tiles_n}")
        start_n = "tile_n * BLOCK_N + "
    if tiles_m > 1:
        em.line(f"tile_m = (pid // {tiles_n}) % {tiles_m}" if tiles_n > 1 else f"tile_m = pid % {tiles_m}")
        start_m = "tile_m * BLOCK_M + "
    if math.prod(outer_shape) == 1:
        outer = iter(["0"] * len(outer_shape))
    else:
        rest = "pid" if tiles_m * tiles_n == 1 else em.let(f"pid // {tiles_m * tiles_n}", "outer")
        outer = iter(em.dims(Index(outer_shape, flat=rest)))
    em.line(f"rm = {start_m}tl.arange(0, BLOCK_M)[:, None]")
    em.line(f"rn = {start_n}tl.arange(0, BLOCK_N)[None, :]")
    em.line(f"mask = (rm < {shape[load]}) & (rn < {shape[store]})")
    ix = Index(shape, dims=tuple("rm" if i == load else "rn" if i == store else next(outer) for i in range(len(shape))))
    offset = em.let(f"tl.broadcast_to({em.flat(ix)}, (BLOCK_M, BLOCK_N))", "offs")
    for y, out in zip(info.outputs, outs):
        v = em.value(y, ix, "mask")
        store_output(em, out, y, v, offset, "mask")
    name, text = assemble(info, em, signature, {"BLOCK_M": block_m, "BLOCK_N": block_n}, config)
    return KernelSource(info.kind, name, text, signature, (programs, 1, 1), launch_options(config))


# Products: matmul, batch_matmul, conv2d ---------------------------------------------------


def _product(info: GroupInfo, config: dict[str, int], interpret: bool, one_loop: bool = True) -> KernelSource:
    """``one_loop``: two summed products that share an accumulator run one loop over
    both K (``_summed_operand_tiles``) where their operand tiles are plain loads."""
    op = info.anchor
    assert op is not None
    if is_channelwise_conv(op):
        if config.get("STRIP"):
            return _channelwise_strips(info, config, interpret)
        return _channelwise_conv(info, config, interpret)
    split = config.get("SPLIT_K", 1)
    if split > 1 and config.get("TMA"):
        raise CodegenError(f"{op.name}: a split-K product loads its tiles through pointers, not TMA")
    if info.summed is not None and (split > 1 or config.get("TMA")):
        raise CodegenError(f"{op.name}: two summed convolutions load their tiles through pointers and loop over K whole")
    tma_operands = None
    if config.get("TMA"):
        tma_operands = tma.operands(op, info.group)
        if tma_operands is None:
            raise CodegenError(
                f"{op.name}: TMA tiles need float16/bfloat16 operands that are row-major matrices in memory, in a group that gathers nothing"
            )
    pointers, signature, outs = pointer_names(info)
    out_shape = shape_of(op.results[0])
    for y in info.outputs:
        anchor_axes(info, y)
    em = KernelEmitter(pointers, interpret)
    elem = element_name(element_of(op.results[0]))
    bm, bn, bk = config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"]
    m, n, k, batch = product_sizes(op)
    k_slice = math.ceil(math.ceil(k / split) / bk) * bk
    if tma_operands is None:
        grid = (math.ceil(m / bm), math.ceil(n / bn), batch * split)
        em.line("pid_m = tl.program_id(0)")
        em.line("pid_n = tl.program_id(1)")
        if split > 1:
            em.line(f"pid_b = tl.program_id(2) // {split}")
            em.line(f"pid_s = tl.program_id(2) % {split}")
        else:
            em.line("pid_b = tl.program_id(2)")
    else:
        grid = (_grouped_order(em, math.ceil(m / bm), math.ceil(n / bn)), 1, 1)
    em.line("rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    em.line("rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    if isinstance(op, tcp.Conv2dOp):
        out_dims = _conv_rows(op, em)
        a_at, b_at = _conv_operands(op, em)
    else:
        lhs, rhs = shape_of(op.lhs), shape_of(op.rhs)
        lead = ["pid_b"] if len(lhs) == 3 else []

        def a_at(ka: str) -> tuple[Index, str]:
            return Index(lhs, dims=(*lead, "rm", ka)), ""

        def b_at(kb: str) -> Index:
            return Index(rhs, dims=(*lead, kb, "rn"))

        out_dims = (*lead, "rm", "rn")
    em.line("acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)")
    # float32 operands are multiplied exactly (no TF32), matching the reference; bfloat16
    # operands go to the interpreter's dot as float32 (its bfloat16 dot is wrong in 3.9).
    precision = ', input_precision="ieee"' if elem == "f32" or (interpret and elem == "bf16") else ""
    upcast = interpret and elem == "bf16"
    descriptors: list[TileDescriptor] = []
    shared = info.summed is not None and one_accumulator(info)
    both = one_loop and shared
    k_first = math.ceil(k / bk) * bk
    loop_k = k_first + product_sizes(info.summed)[2] if both and info.summed is not None else k
    with em.block(f"for k0 in range(0, {loop_k}, BLOCK_K):" if split == 1 else f"for k_step in range(0, {k_slice}, BLOCK_K):"):
        if split > 1:
            em.line(f"k0 = pid_s * {k_slice} + k_step")
        if tma_operands is not None:
            a, b = _tma_operand_tiles(em, info, tma_operands, signature, descriptors, (bm, bn, bk))
        else:
            a, b = _pointer_operand_tiles(em, op, (m, n, k), elem, a_at, b_at, k_whole=split == 1 and k % bk == 0)
        if both:
            try:
                a, b = _summed_operand_tiles(em, info, (a, b), k_first, elem, bk)
            except _NotPlainLoads:
                return _product(info, config, interpret, one_loop=False)
        if upcast:
            a, b = em.let(f"{a}.to(tl.float32)", "a"), em.let(f"{b}.to(tl.float32)", "b")
        em.line(f"acc += tl.dot({a}, {b}{precision})")
    if info.summed is not None and not both:
        _summed_loop(em, info.summed, elem, precision, upcast, "acc" if shared else "acc_summed")
    scratch: tuple[tuple[str, str, int], ...] = ()
    with contextlib.ExitStack() as last_slice:
        if split > 1:
            scratch = _split_k_partial(em, signature, split, grid, bm * bn)
            last_slice.enter_context(em.block(f"if arrived == {split - 1}:"))
            _split_k_total(em, split, bm * bn)
        em.line(f"cmask = (rm < {m}) & (rn < {n})")
        out_ix = Index(out_shape, dims=tuple(out_dims))
        em.anchors[op.results[0]] = (out_ix, "acc")
        if info.summed is not None:  # in ``acc`` already where it shares it
            em.anchors[info.summed.results[0]] = (out_ix, "0.0" if shared else "acc_summed")
        em.tile = "(BLOCK_M, BLOCK_N)"
        em.columns = Columns(frozenset({"rn", "o_i", "pid_b", "pid_n"}), "cmask", f"rn < {n}")
        tile_store = None
        if tma_operands is not None:
            tile_store = _tma_epilogue(em, info, outs, signature, descriptors, (bm, bn))
        store_outputs(em, info, outs, out_ix, "cmask", tile_store)
    name, text = assemble(info, em, signature, {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, config)
    source = KernelSource(info.kind, name, text, signature, grid, launch_options(config), tuple(descriptors), scratch=scratch)
    if tma_operands is not None:
        source.fallback = _product(info, {key: v for key, v in config.items() if key != "TMA"}, interpret)
    return source


def _split_k_partial(
    em: KernelEmitter, signature: dict[str, str], split: int, grid: tuple[int, int, int], area: int
) -> tuple[tuple[str, str, int], ...]:
    """After a split-K program's loop over its slice of K: its partial tile goes to the
    kernel's scratch and is counted in ``arrived``; returns the scratch it needs.

    A product with few output tiles (a batch-1 convolution on a 7x7 map: 8 tiles for 132
    multiprocessors) runs ``split`` times as many programs this way, each looping over a
    ``split``-th of K, in one kernel. The program that stores a tile's last partial adds
    up all of them (``_split_k_total``) and runs the epilogue."""
    tiles = grid[0] * grid[1] * (grid[2] // split)
    signature[SPLIT_PARTIALS] = "*fp32"
    signature[SPLIT_ARRIVALS] = "*i32"
    em.line(f"tile = (pid_b * {grid[0]} + pid_m) * {grid[1]} + pid_n")
    em.line("slot = tl.arange(0, BLOCK_M)[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    em.line(f"tl.store({SPLIT_PARTIALS} + (tile * {split} + pid_s) * {area} + slot, acc)")
    em.line("tl.debug_barrier()  # the whole partial is stored before it is counted")
    em.line(f'arrived = tl.atomic_add({SPLIT_ARRIVALS} + tile, 1, sem="acq_rel")')
    return ((SPLIT_PARTIALS, "float32", tiles * split * area), (SPLIT_ARRIVALS, "int32", tiles))


def _split_k_total(em: KernelEmitter, split: int, area: int) -> None:
    """In the program that arrived last: ``acc`` is the sum of the tile's partials in
    slice order (the same whichever program arrives last), and the tile's count is reset,
    so the scratch is as it was for the next launch (launches of a kernel follow each
    other on a stream)."""
    em.line("acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)")
    with em.block(f"for part in range({split}):"):
        em.line(f'acc += tl.load({SPLIT_PARTIALS} + (tile * {split} + part) * {area} + slot, cache_modifier=".cg")')
    em.line(f"tl.store({SPLIT_ARRIVALS} + tile, 0)")


GROUP_M = 8
"""Row tiles a TMA product walks down before moving to the next column tile: the
programs running at once share their left operand's rows and their right operand's
columns in L2."""


def _grouped_order(em: KernelEmitter, tiles_m: int, tiles_n: int) -> int:
    """Program ids in groups of ``GROUP_M`` row tiles, column tiles within a group;
    returns the program count."""
    per_group = GROUP_M * tiles_n
    em.line("pid = tl.program_id(0)")
    em.line(f"first_m = (pid // {per_group}) * {GROUP_M}")
    em.line(f"rows_m = tl.minimum({tiles_m} - first_m, {GROUP_M})")
    em.line(f"pid_m = first_m + (pid % {per_group}) % rows_m")
    em.line(f"pid_n = (pid % {per_group}) // rows_m")
    em.line("pid_b = 0")
    return tiles_m * tiles_n


def _pointer_operand_tiles(
    em: KernelEmitter,
    op: Operation,
    sizes: tuple[int, int, int],
    elem: str,
    a_at: Callable,
    b_at: Callable,
    k_start: str = "k0",
    suffix: str = "",
    k_whole: bool = False,
) -> tuple[str, str]:
    """The K step's operand tiles evaluated through the emitter (prologues fuse into them),
    the step starting at ``k_start`` of this product's K; ``suffix`` names its positions
    and masks apart from another product's in the same step. ``k_whole``: every step the
    loop reads lies inside K (``BLOCK_K`` divides it), so the masks test rows and columns
    only, and Triton sees each row's K tile unmasked."""
    m, n, k = sizes
    ka, kb, amask, bmask = (f"{name}{suffix}" for name in ("ka", "kb", "amask", "bmask"))
    em.line(f"{ka} = {k_start} + tl.arange(0, BLOCK_K)[None, :]")
    em.line(f"{kb} = {k_start} + tl.arange(0, BLOCK_K)[:, None]")
    with em.tiled("(BLOCK_M, BLOCK_K)"):
        ia, inside = a_at(ka)
        em.line(f"{amask} = (rm < {m}){'' if k_whole else f' & ({ka} < {k})'}{inside}")
        a = _operand_tile(em, em.value(op.operands[0], ia, amask), amask, elem, "a")
    with em.tiled("(BLOCK_K, BLOCK_N)"):
        ib = b_at(kb)
        em.line(f"{bmask} = {'' if k_whole else f'({kb} < {k}) & '}(rn < {n})")
        b = _operand_tile(em, em.value(op.operands[1], ib, bmask), bmask, elem, "b")
    return a, b


class _NotPlainLoads(Exception):
    """An operand tile of a summed product is computed (a prologue), not loaded as it is."""


def _summed_operand_tiles(
    em: KernelEmitter, info: GroupInfo, first: tuple[str, str], k_first: int, elem: str, bk: int
) -> tuple[str, str]:
    """The step's tiles of a loop over both summed products' K, one after the other (the
    anchor's padded to ``BLOCK_K``, then the other's): the anchor's tiles are ``first``;
    the other product's are read at ``k0 - k_first``, and each operand becomes one load
    that reads one product's pointers or the other's (``either_load``): one loop, one
    pipeline, where two loops drain and refill it between them. On ResNet-50's blocks that
    change width it measured level with two loops (H200, ``bench/summed_probe.py``: better
    in stage 2, worse in stage 1)."""
    conv = info.summed
    assert conv is not None
    a_at, b_at = _conv_operands(conv, em)
    m, n, k, _ = product_sizes(conv)
    second = _pointer_operand_tiles(
        em, conv, (m, n, k), elem, a_at, b_at, k_start=f"k0 - {k_first}", suffix="_s", k_whole=k % bk == 0
    )
    if any(tile not in em.loads for tile in (*first, *second)):
        raise _NotPlainLoads
    em.line(f"first = k0 < {k_first}")
    return em.either_load("first", first[0], second[0]), em.either_load("first", first[1], second[1])


def _operand_tile(em: KernelEmitter, value: str, mask: str, elem: str, hint: str, as_loaded: bool = True) -> str:
    """A product operand tile in the product's element type, zero where ``mask`` is not.
    A tile loaded as it is, of that type under that mask (zero there already), feeds
    ``tl.dot`` as loaded (unless ``as_loaded`` is false): through a float32 select
    Triton's pipeline stages the tile in registers, not straight from its loads into
    shared memory."""
    raw = em.raw.get(value)
    if as_loaded and raw is not None and raw[1:] == (elem, mask):
        em.drop_if_unused(value)
        return raw[0]
    return em.let(f"tl.where({mask}, {value}, 0.0).to({TL_TYPES[elem]})", hint)


def _descriptor(signature: dict[str, str], descriptors: list, param: str, v: SSAValue, tensor: int, shape, block) -> str:
    if param not in signature:
        signature[param] = tma.descriptor_type(v, block)
        descriptors.append(TileDescriptor(param, tensor, tuple(shape), tuple(block)))
    return param


def _tma_operand_tiles(
    em: KernelEmitter,
    info: GroupInfo,
    operands: tuple,
    signature: dict[str, str],
    descriptors: list,
    blocks: tuple[int, int, int],
) -> tuple[str, str]:
    """The K step's operand tiles loaded through TMA: ``BLOCK_M x BLOCK_K`` of the left
    operand, ``BLOCK_K x BLOCK_N`` of the right one, each read from its matrix as that
    matrix runs (K along columns or rows) and transposed in registers where it runs the
    other way."""
    bm, bn, bk = blocks
    args = list(info.group.body.block.args)
    tiles = []
    for operand, extent, corner, left in (
        (operands[0], bm, "pid_m * BLOCK_M", True),
        (operands[1], bn, "pid_n * BLOCK_N", False),
    ):
        i = args.index(operand.arg)
        block = (extent, bk) if operand.k_inner else (bk, extent)
        desc = _descriptor(signature, descriptors, f"in{i}_tile", operand.arg, i, operand.shape, block)
        where = f"[{corner}, k0]" if operand.k_inner else f"[k0, {corner}]"
        tile = em.let(f"{desc}.load({where})", "a" if left else "b")
        if operand.k_inner != left:  # a K x M left tile, an N x K right one
            tile = em.let(f"{tile}.T", "a" if left else "b")
        tiles.append(tile)
    return tiles[0], tiles[1]


def _tma_epilogue(
    em: KernelEmitter, info: GroupInfo, outs: list[str], signature: dict[str, str], descriptors: list, blocks: tuple[int, int]
):
    """Makes the epilogue read output-shaped block arguments at the tile's own positions
    (a residual) and store outputs at them through TMA; returns the store for
    ``store_outputs``."""
    assert info.anchor is not None
    shape, dims = tma.output_tile(info.anchor)
    tile_ix = Index(shape, dims=dims)
    args = list(info.group.body.block.args)
    corner = "[pid_m * BLOCK_M, pid_n * BLOCK_N]"
    taken: list[str] = []

    def room() -> bool:
        return len(taken) < tma.EPILOGUE_TILES

    def read(v: SSAValue, ix: Index) -> str | None:
        matrix = tma.tile_matrix(shape, v)
        if ix != tile_ix or shape_of(v) != shape or matrix is None or v not in args or not room():
            return None
        i = args.index(v)
        taken.append(f"in{i}")
        desc = _descriptor(signature, descriptors, f"in{i}_tile", v, i, matrix, blocks)
        tile = f"{desc}.load({corner})"
        return em.let(f"{tile}.to(tl.float32)" if is_float(element_of(v)) else tile, "x")

    def store(i: int, y: SSAValue, ix: Index) -> bool:
        matrix = tma.tile_matrix(shape, y)
        if ix != tile_ix or shape_of(y) != shape or matrix is None or not room():
            return False
        value = em.value(y, ix, "cmask")
        taken.append(outs[i])
        desc = _descriptor(signature, descriptors, f"{outs[i]}_tile", y, len(args) + i, matrix, blocks)
        em.line(f"{desc}.store({corner}, {value}.to({TL_TYPES[element_name(element_of(y))]}))")
        return True

    em.tile_reads = read
    return store


def _conv_rows(op: tcp.Conv2dOp, em: KernelEmitter) -> tuple[str, ...]:
    """Implicit GEMM: rows are output pixels (n, ho, wo), columns output channels of
    one group (``pid_b``); returns the output's position names.

    The row's (n, ho, wo) are split from ``rm`` and (ho, wo) from ``p_i`` (its pixel in
    the image), so an offset where they meet in row-major order is ``rm`` or ``p_i``
    again (``KernelEmitter.splits``): Triton then sees rows contiguous in an NCHW tensor
    and in an NHWC one, and vectorizes those loads and stores."""
    nb, o, ho, wo = shape_of(op.results[0])
    em.line(f"n_i = rm // {ho * wo}")
    em.line(f"p_i = rm % {ho * wo}")
    em.line(f"ho_i = p_i // {wo}")
    em.line(f"wo_i = p_i % {wo}")
    em.line(f"o_i = pid_b * {o // scalar(op.groups)} + rn")
    em.split("rm", ("n_i", "ho_i", "wo_i"), (nb, ho, wo))
    em.split("p_i", ("ho_i", "wo_i"), (ho, wo))
    return ("n_i", "o_i", "ho_i", "wo_i")


def _conv_operands(op: tcp.Conv2dOp, em: KernelEmitter) -> tuple[Callable, Callable]:
    """Where an output tile's K step reads the input and the weight (``_conv_rows``' names):
    K runs over (input channel of the group, kh, kw). A pixelwise convolution
    (``analysis.is_pixelwise_conv``) reads its input at the output's pixel, with no bounds
    test: it is a GEMM over contiguous rows; a strided 1x1 one (a ResNet downsample) at
    the pixel its stride puts it on, with none either. K runs over (kh, kw, channel) instead
    where the input is channels-last (``ops.reads_channels_last``): a 3x3 convolution of
    ResNet-50 at batch 128 read its NHWC input across channels 9 apart and ran 1.27 ms
    against 0.37 reading NCHW (H200)."""
    nb, c, h, w = shape_of(op.input)
    o, cg, kh, kw = shape_of(op.weight)
    sh, sw = ints(op.stride)
    top, _, left, _ = ints(op.padding)
    dh, dw = ints(op.dilation)
    pixelwise = is_pixelwise_conv(op)
    subsampling = is_one_by_one_conv(op)

    channels_inner = reads_channels_last(op)

    def k_parts(kx: str) -> tuple[str, str, str]:
        """The (input channel in the group, kh, kw) of K position ``kx``: channels vary
        fastest where the input is channels-last, so a K tile reads contiguous channels."""
        if channels_inner:
            return f"{kx} % {cg}", f"{kx} // {cg * kw}", f"({kx} // {cg}) % {kw}"
        return f"{kx} // {kh * kw}", f"({kx} // {kw}) % {kh}", f"{kx} % {kw}"

    def a_at(ka: str) -> tuple[Index, str]:
        channel, row, col = k_parts(ka)
        ci = em.let(f"pid_b * {cg} + {channel}", "ci")
        if pixelwise:
            return Index((nb, c, h, w), dims=("n_i", ci, "ho_i", "wo_i")), ""
        if subsampling:  # a strided 1x1 window: every tap inside, none to compute
            return Index((nb, c, h, w), dims=("n_i", ci, f"ho_i * {sh}", f"wo_i * {sw}")), ""
        hi = em.let(f"ho_i * {sh} - {top} + ({row}) * {dh}", "hi")
        wi = em.let(f"wo_i * {sw} - {left} + ({col}) * {dw}", "wi")
        inside = em.let(f"({hi} >= 0) & ({hi} < {h}) & ({wi} >= 0) & ({wi} < {w})", "inb")
        return Index((nb, c, h, w), dims=("n_i", ci, hi, wi)), f" & {inside}"

    def b_at(kb: str) -> Index:
        channel, row, col = k_parts(kb)
        kc = em.let(channel, "kc")
        khi = em.let(row, "khi")
        kwi = em.let(col, "kwi")
        return Index((o, cg, kh, kw), dims=("o_i", kc, khi, kwi))

    return a_at, b_at


def _summed_loop(em: KernelEmitter, conv: tcp.Conv2dOp, elem: str, precision: str, upcast: bool, acc: str) -> None:
    """The second of two summed convolutions (``ops.summed_products``): its own K loop
    over the anchor's output tile, into ``acc`` (the anchor's, or ``acc_summed``, which
    the epilogue reads as its result)."""
    a_at, b_at = _conv_operands(conv, em)
    m, n, k, _ = product_sizes(conv)
    if acc != "acc":
        em.line(f"{acc} = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)")
    with em.block(f"for k0 in range(0, {k}, BLOCK_K):"):
        a, b = _pointer_operand_tiles(em, conv, (m, n, k), elem, a_at, b_at)
        if upcast:
            a, b = em.let(f"{a}.to(tl.float32)", "a"), em.let(f"{b}.to(tl.float32)", "b")
        em.line(f"{acc} += tl.dot({a}, {b}{precision})")


def _depthwise_sizes(info: GroupInfo) -> tuple[int, ...]:
    """A depthwise convolution's sizes as its kernels read them: input (N, C, H, W), output
    channels and window (O, KH, KW), output size (HO, WO), channel multiplier, strides,
    top and left padding, dilations; every output of the group checked to be its result
    through elementwise ops and transposes (``anchor_axes``)."""
    op = info.anchor
    assert isinstance(op, tcp.Conv2dOp)
    for y in info.outputs:
        anchor_axes(info, y)
    nb, c, h, w = shape_of(op.input)
    o, _, kh, kw = shape_of(op.weight)
    _, _, ho, wo = shape_of(op.results[0])
    top, _, left, _ = ints(op.padding)
    return (nb, c, h, w, o, kh, kw, ho, wo, o // scalar(op.groups), *ints(op.stride), top, left, *ints(op.dilation))


def _channelwise_conv(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    """A depthwise convolution, directly: a program owns ``BLOCK_N`` output channels by
    ``BLOCK_M`` output pixels (n, ho, wo) and adds up the window's taps one at a time,
    each an elementwise product of an input tile and a column of weights. As an
    implicit GEMM, each group's output is a single column, so a ``tl.dot`` tile of at
    least 16 columns did one useful column in 16. The pixels are the tile's last axis:
    the output (row-major NCHW) is contiguous along them, and so is an input that no
    transpose prologue reorders, and Triton lays a tile's last axis across neighbouring
    threads where it cannot tell (the pixel index is a quotient and a remainder).
    Prologues fuse into the input tile's evaluation and epilogues run on the
    accumulator, as in the GEMM."""
    op = info.anchor
    assert isinstance(op, tcp.Conv2dOp)
    pointers, signature, outs = pointer_names(info)
    nb, c, h, w, o, kh, kw, ho, wo, multiplier, sh, sw, top, left, dh, dw = _depthwise_sizes(info)
    m = nb * ho * wo
    em = KernelEmitter(pointers, interpret)
    em.tile = "(BLOCK_N, BLOCK_M)"
    em.line("pid_m = tl.program_id(0)")
    em.line("pid_n = tl.program_id(1)")
    em.line("rp = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[None, :]")
    em.line("rc = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[:, None]")
    em.line(f"n_i = rp // {ho * wo}")
    em.line(f"ho_i = (rp // {wo}) % {ho}")
    em.line(f"wo_i = rp % {wo}")
    em.line(f"c_i = rc // {multiplier}" if multiplier > 1 else "c_i = rc")
    em.line(f"cmask = (rc < {o}) & (rp < {m})")
    em.line("acc = tl.zeros((BLOCK_N, BLOCK_M), tl.float32)")
    with em.block(f"for t in range({kh * kw}):"):
        em.line(f"hi = ho_i * {sh} - {top} + (t // {kw}) * {dh}")
        em.line(f"wi = wo_i * {sw} - {left} + (t % {kw}) * {dw}")
        em.line(f"xmask = cmask & (hi >= 0) & (hi < {h}) & (wi >= 0) & (wi < {w})")
        x = em.value(op.input, Index((nb, c, h, w), dims=("n_i", "c_i", "hi", "wi")), "xmask")
        x = em.let(f"tl.where(xmask, {x}, 0.0).to(tl.float32)", "x")
        em.line(f"kh_i = t // {kw}")
        em.line(f"kw_i = t % {kw}")
        with em.tiled("(BLOCK_N, 1)"):
            em.line(f"wmask = rc < {o}")
            wt = em.value(op.weight, Index((o, 1, kh, kw), dims=("rc", "0", "kh_i", "kw_i")), "wmask")
            wt = em.let(f"tl.where(wmask, {wt}, 0.0).to(tl.float32)", "wt")
        em.line(f"acc += {x} * {wt}")
    out_ix = Index((nb, o, ho, wo), dims=("n_i", "rc", "ho_i", "wo_i"))
    em.anchors[op.results[0]] = (out_ix, "acc")
    em.columns = Columns(frozenset({"rc", "c_i", "pid_n"}), "cmask", f"rc < {o}")  # the channels: one per row of the tile
    store_outputs(em, info, outs, out_ix, "cmask")
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    name, text = assemble(info, em, signature, {"BLOCK_M": bm, "BLOCK_N": bn}, config)
    return KernelSource(info.kind, name, text, signature, (math.ceil(m / bm), math.ceil(o / bn), 1), launch_options(config))


def _channelwise_strips(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    """A depthwise convolution of a channels-last input (``configs.channelwise_strips``):
    a program owns ``BLOCK_M`` strips of ``STRIP`` neighbouring output columns (one output
    row each) by ``BLOCK_N`` channels, the channels the tile's contiguous axis. For each
    row of the window it loads every input column the strip reads once, each a tile of
    contiguous channels, and adds it into each output column that reads it: a 7x7 window
    costs 13 loads an output at a strip of 7 where tap by tap it costs 49, each from L1 at
    best. With ``HALF`` (float16 operands only) a window row's products are summed in
    float16 (two to an instruction, no conversions) before they join the float32
    accumulator, as cuDNN's channels-last kernel's error suggests it does too: on an H200,
    convnext_tiny's stage-1 convolution at batch 32 (96 x 56 x 56, 7x7) ran 30 us so,
    39 us with float32 products, 89 tap by tap and 91 in cuDNN's kernel
    (``bench/depthwise_strip_probe.py``). Each column of the strip runs the epilogue
    and stores on its own (``skeleton.store_outputs`` at its positions); a result handed
    channels-last stores contiguous channels."""
    op = info.anchor
    assert isinstance(op, tcp.Conv2dOp)
    pointers, signature, outs = pointer_names(info)
    nb, c, h, w, o, kh, kw, ho, wo, multiplier, sh, sw, top, left, dh, dw = _depthwise_sizes(info)
    strip, half = config["STRIP"], bool(config.get("HALF"))
    if half and any(element_name(element_of(v)) != "f16" for v in (op.input, op.weight)):
        raise CodegenError(f"{op.name}: HALF sums a window row's products in float16, for float16 operands only")
    strips = math.ceil(wo / strip)
    rows = nb * ho * strips
    em = KernelEmitter(pointers, interpret)
    em.tile = "(BLOCK_M, BLOCK_N)"
    em.line("rr = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    em.line("rc = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    em.line(f"n_i = rr // {ho * strips}")
    em.line(f"ho_i = (rr // {strips}) % {ho}")
    em.line(f"w0 = (rr % {strips}) * {strip}")
    em.line(f"c_i = rc // {multiplier}" if multiplier > 1 else "c_i = rc")
    em.line(f"cmask = (rr < {rows}) & (rc < {o})")
    for col in range(strip):
        em.line(f"acc{col} = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)")
    # the columns of one window row: input column offset -> the (output column, tap) pairs reading it
    readers: dict[int, list[tuple[int, int]]] = {}
    for col in range(strip):
        for tap in range(kw):
            readers.setdefault(col * sw + tap * dw, []).append((col, tap))
    with em.block(f"for kh_i in range({kh}):"):
        em.line(f"hi = ho_i * {sh} - {top} + kh_i * {dh}")
        em.line(f"hmask = cmask & (hi >= 0) & (hi < {h})")
        taps = []
        with em.tiled("(1, BLOCK_N)"):
            em.line(f"wmask = rc < {o}")
            for tap in range(kw):
                wt = em.value(op.weight, Index((o, 1, kh, kw), dims=("rc", "0", "kh_i", str(tap))), "wmask")
                taps.append(_operand(em, wt, "wmask", half))
        sums: dict[int, str] = {}
        for j, pairs in sorted(readers.items()):
            em.line(f"wi{j} = w0 * {sw} + {j - left}")
            em.line(f"xmask{j} = hmask & (wi{j} >= 0) & (wi{j} < {w})")
            x = em.value(op.input, Index((nb, c, h, w), dims=("n_i", "c_i", "hi", f"wi{j}")), f"xmask{j}")
            x = _operand(em, x, f"xmask{j}", half)
            for col, tap in pairs:
                if not half:
                    em.line(f"acc{col} += {x} * {taps[tap]}")
                elif col in sums:
                    em.line(f"{sums[col]} += {x} * {taps[tap]}")
                else:
                    sums[col] = em.let(f"{x} * {taps[tap]}", f"row{col}_")
        for col, total in sums.items():
            em.line(f"acc{col} += {total}.to(tl.float32)")
    em.columns = Columns(frozenset({"rc", "c_i"}), "cmask", f"rc < {o}")  # the channels: one per column of the tile
    for col in range(strip):
        em.line(f"wo{col} = w0 + {col}")
        mask = "cmask"
        if wo % strip:
            mask = em.let(f"cmask & (wo{col} < {wo})", "omask")
            em.columns = Columns(frozenset({"rc", "c_i"}), mask, f"rc < {o}")
        out_ix = Index((nb, o, ho, wo), dims=("n_i", "rc", "ho_i", f"wo{col}"))
        em.anchors[op.results[0]] = (out_ix, f"acc{col}")
        store_outputs(em, info, outs, out_ix, mask)
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    name, text = assemble(info, em, signature, {"BLOCK_M": bm, "BLOCK_N": bn}, config)
    return KernelSource(info.kind, name, text, signature, (math.ceil(rows / bm), math.ceil(o / bn), 1), launch_options(config))


def _operand(em: KernelEmitter, value: str, mask: str, half: bool) -> str:
    """A value read for a product's operand: zero where ``mask`` is off (a padded tap
    whose prologue would compute something else from the zero loaded there), in float16
    for ``HALF`` (a plain float16 load as loaded), else float32."""
    raw = em.raw.get(value)
    if raw is not None and raw[1] == "f16" and raw[2] == mask and half:
        em.drop_if_unused(value)
        return raw[0]
    if raw is None:
        value = em.let(f"tl.where({mask}, {value}, 0.0)", "x")
    return em.let(f"{value}.to(tl.float16)", "h") if half else value


# Attention ------------------------------------------------------------------------------


def _attention(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    op = info.anchor
    assert isinstance(op, tcp.AttentionOp)
    pointers, signature, outs = pointer_names(info)
    out_shape = shape_of(op.result)
    for y in info.outputs:
        if anchor_axes(info, y) != tuple(range(len(out_shape))):
            raise CodegenError(f"{op.name}: group outputs must be its result or elementwise ops of it, got {describe(y.type)}")
    b, h, sq, d = shape_of(op.query)
    _, hk, sk, _ = shape_of(op.key)
    dv = shape_of(op.value)[3]
    elem = element_name(element_of(op.result))
    bm, bn = config["BLOCK_M"], config["BLOCK_N"]
    block_d, block_dv = max(16, pow2(d)), max(16, pow2(dv))
    causal = bool(scalar(op.causal))
    # float32 scores and products exactly (no TF32), as the reference; bfloat16 through
    # the interpreter as float32 (its bfloat16 dot is wrong in 3.9), as the product kernels.
    upcast = interpret and elem == "bf16"
    precision = ', input_precision="ieee"' if elem == "f32" or upcast else ""
    dot_elem = "f32" if upcast else elem
    dot_type = TL_TYPES[dot_elem]
    # Tiles as loaded only where the head dims fill their blocks: with a head dim of 40
    # in a block of 64 (and 24 in 32) the float16 kernel fed so gave wrong results on an
    # H200 (Triton 3.6), where the interpreter and bfloat16 did not.
    whole_d, whole_dv = d == block_d, dv == block_dv
    em = KernelEmitter(pointers, interpret)
    em.line("pid_m = tl.program_id(0)")
    em.line("pid_bh = tl.program_id(1)")
    em.line(f"bi = pid_bh // {h}")
    em.line(f"hi = pid_bh % {h}")
    em.line(f"hk = hi // {h // hk}" if h != hk else "hk = hi")
    em.line("rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]")
    em.line("rd = tl.arange(0, BLOCK_D)[None, :]")
    em.line("rdv = tl.arange(0, BLOCK_DV)[None, :]")
    with em.tiled("(BLOCK_M, BLOCK_D)"):
        em.line(f"qmask = (rm < {sq}) & (rd < {d})")
        q = em.value(op.query, Index((b, h, sq, d), dims=("bi", "hi", "rm", "rd")), "qmask")
        q = _operand_tile(em, q, "qmask", dot_elem, "q", whole_d)
    em.line('m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)')
    em.line("l_i = tl.zeros((BLOCK_M,), tl.float32)")
    em.line("acc = tl.zeros((BLOCK_M, BLOCK_DV), tl.float32)")
    # A causal program's last row is at most pid_m * BLOCK_M + BLOCK_M - 1: keys past it are excluded.
    stop = f"tl.minimum({sk}, (pid_m + 1) * BLOCK_M)" if causal else str(sk)
    with em.block(f"for n0 in range(0, {stop}, BLOCK_N):"):
        em.line("rn = n0 + tl.arange(0, BLOCK_N)[None, :]")
        em.line("rk = n0 + tl.arange(0, BLOCK_N)[:, None]")
        with em.tiled("(BLOCK_D, BLOCK_N)"):
            em.line("rdk = tl.arange(0, BLOCK_D)[:, None]")
            em.line(f"kmask = (rdk < {d}) & (rn < {sk})")
            kt = em.value(op.key, Index((b, hk, sk, d), dims=("bi", "hk", "rn", "rdk")), "kmask")
            kt = _operand_tile(em, kt, "kmask", dot_elem, "kt", whole_d)
        # Scores in base 2 (scaled by log2(e)): exp2 is one instruction, exp a multiply more.
        em.line(f"s = tl.dot({q}, {kt}{precision}) * {scalar(op.scale) * LOG2_E!r}")
        # Query rows past the end read zeros (finite scores, never stored): only keys past
        # the end, the causal triangle and a mask exclude anything.
        keep = [] if sk % bn == 0 else [f"(rn < {sk})"]
        if causal:
            keep.append("(rn <= rm)")
        if op.has_mask:
            with em.tiled("(BLOCK_M, BLOCK_N)"):
                em.line(f"smask = (rm < {sq}) & (rn < {sk})")
                m = em.value(op.mask[0], Index((b, h, sq, sk), dims=("bi", "hi", "rm", "rn")), "smask")
            if element_name(element_of(op.mask[0])) == "i1":
                keep.append(f"({m} != 0)")
            else:
                em.line(f"s = s + {m} * {LOG2_E!r}")
        if keep:
            em.line(f's = tl.where({" & ".join(keep)}, s, float("-inf"))')
        em.line("m_new = tl.maximum(m_i, tl.max(s, 1))")
        # rows with no key kept so far have a max of -inf: shift by 0 there, not by -inf
        em.line('shift = tl.where(m_new == float("-inf"), 0.0, m_new)')
        em.line("p = tl.exp2(s - shift[:, None])")
        em.line("alpha = tl.exp2(m_i - shift)")
        em.line("l_i = l_i * alpha + tl.sum(p, 1)")
        with em.tiled("(BLOCK_N, BLOCK_DV)"):
            em.line(f"vmask = (rk < {sk}) & (rdv < {dv})")
            v = em.value(op.value, Index((b, hk, sk, dv), dims=("bi", "hk", "rk", "rdv")), "vmask")
            v = _operand_tile(em, v, "vmask", dot_elem, "v", whole_dv)
        em.line(f"acc = acc * alpha[:, None] + tl.dot(p.to({dot_type}), {v}{precision})")
        em.line("m_i = m_new")
    # a row with every key excluded has l_i = 0 and gives zeros
    em.line("o = tl.where(l_i[:, None] > 0, acc / tl.where(l_i[:, None] > 0, l_i[:, None], 1.0), 0.0)")
    em.line(f"omask = (rm < {sq}) & (rdv < {dv})")
    out_ix = Index(out_shape, dims=("bi", "hi", "rm", "rdv"))
    em.anchors[op.result] = (out_ix, "o")
    em.tile = "(BLOCK_M, BLOCK_DV)"
    offset = em.let(f"tl.broadcast_to({em.flat(out_ix)}, (BLOCK_M, BLOCK_DV))", "offs")
    for y, out in zip(info.outputs, outs):
        val = em.value(y, out_ix, "omask")
        store_output(em, out, y, val, offset, "omask")
    constants = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_D": block_d, "BLOCK_DV": block_dv}
    name, text = assemble(info, em, signature, constants, config)
    return KernelSource(info.kind, name, text, signature, (math.ceil(sq / bm), b * h, 1), launch_options(config))


# Gluon kernels' epilogues ------------------------------------------------------------------


def _patch_positions(em: KernelEmitter, op: tcp.Conv2dOp, row: str) -> Index:
    """The output positions of a tile that is a patch of one output image (``stem``,
    ``boxes``): ``tile_n``, ``tile_y``, ``tile_x`` its image, first row and column, ``pix``
    each pixel's place in it, ``row`` pixels a patch row, ``rn`` the channels (after
    ``pid_b``, the group's, and the caller's own positions). Taken from
    the patch's origin, not split from a flat row index as ``_conv_rows`` does: Triton then
    sees a patch row's pixels contiguous, and an NCHW store goes 16 bytes at a time (split
    from ``rm`` by a modulo, the stem's went 2 bytes at a time, 4.7x slower at ResNet-50 b32
    on an H200). Returns the convolution result's index."""
    nb, _, ho, wo = shape_of(op.results[0])
    em.line("n_i = tile_n")
    em.line(f"ho_i = tile_y + pix // {row}")
    em.line(f"wo_i = tile_x + pix % {row}")
    em.line(f"p_i = ho_i * {wo} + wo_i")
    em.line(f"rm = n_i * {ho * wo} + p_i")
    em.line("o_i = rn")
    em.split("rm", ("n_i", "ho_i", "wo_i"), (nb, ho, wo))
    em.split("p_i", ("ho_i", "wo_i"), (ho, wo))
    return Index(shape_of(op.results[0]), dims=("n_i", "o_i", "ho_i", "wo_i"))


def _whole_tile_store(em: KernelEmitter, op: Operation, elem: str, stored: list[int]) -> TileStore:
    """``store_outputs``' way out for a Gluon kernel that stores its output tile through TMA
    (``pingpong``, ``boxes``): the first output of the tile's shape and element type is left
    in ``result`` (its number appended to ``stored``); any other is not a whole tile."""
    shape, dims = tma.output_tile(op)
    tile_ix = Index(shape, dims=dims)

    def store(i: int, y: SSAValue, ix: Index) -> bool:
        if stored or ix != tile_ix or element_name(element_of(y)) != elem:
            return False
        em.line(f"result = {em.value(y, ix, 'cmask')}.to(gl.{pingpong.GL_TYPES[elem]})")
        stored.append(i)
        return True

    return store


# Products as Gluon ping-pong kernels (``pingpong``) ----------------------------------------


def _pingpong(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    """``info``'s group as a ``pingpong`` kernel: the partitions ``pingpong`` writes around
    the epilogue the emitter writes for the group, with the residual (if any) read from the
    buffer the loader fills and the output stored from it through TMA."""
    op = info.anchor
    assert op is not None
    plan = pingpong.plan_of(info)
    if interpret or plan is None or not pingpong.available():
        raise CodegenError(
            f"{op.name}: a ping-pong kernel needs sm_90, Gluon and a 1x1 float16/bfloat16 convolution read through TMA"
        )
    tile = (config["BLOCK_M"], config["BLOCK_N"], config["BLOCK_K"], config["PINGPONG"])
    pointers, signature, outs = pointer_names(info)
    em = KernelEmitter(pointers, False)
    em.line("pid_b = 0")
    em.line("rm = off_m + gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, ACC))[:, None]")
    em.line("rn = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ACC))[None, :]")
    out_dims = _conv_rows(op, em)
    m, n = plan.m, plan.n
    em.line(f"cmask = (rm < {m}) & (rn < {n})")
    out_ix = Index(shape_of(op.results[0]), dims=tuple(out_dims))
    em.anchors[op.results[0]] = (out_ix, "acc")
    if info.summed is not None:
        em.anchors[info.summed.results[0]] = (out_ix, "0.0")
    em.tile = "(BLOCK_M, BLOCK_N)"
    em.columns = Columns(frozenset({"rn", "o_i", "pid_b", "pid_n"}), "cmask", f"rn < {n}")
    shape, dims = tma.output_tile(op)
    tile_ix = Index(shape, dims=dims)
    args = list(info.group.body.block.args)
    residual: list[int] = []

    def read(v: SSAValue, ix: Index) -> str | None:
        if residual or ix != tile_ix or v not in args or args.index(v) != plan.residual:
            return None
        residual.append(args.index(v))
        return em.let("residual.to(gl.float32)", "x")

    stored: list[int] = []
    em.tile_reads = read
    store_outputs(em, info, outs, out_ix, "cmask", _whole_tile_store(em, op, plan.elem, stored))
    if not stored:
        raise CodegenError(f"{op.name}: a ping-pong kernel stores its output as whole tiles")
    epilogue = pingpong.translate(em.lines)
    descriptors = pingpong.descriptors(plan, tile, residual[0] if residual else None)
    for d in descriptors:
        signature[d.param] = pingpong.descriptor_type(plan.elem, d.block)
    name = f"dnnc_{info.kind}_pingpong"
    text = pingpong.module_text(described(info), name, plan, tile, epilogue, bool(residual))
    text, options = pingpong.with_pdl(text, name, {"num_warps": 4, "maxnreg": pingpong.MAXNREG}, config)
    source = KernelSource(info.kind, name, text, signature, pingpong.grid(m, n, tile), options, descriptors)
    plain = {key: v for key, v in config.items() if key not in ("PINGPONG", "PDL")}
    source.fallback = _product(info, {**plain, "num_warps": 4, "num_stages": 3}, interpret)
    return source


# 3x3 convolutions on 4-D TMA boxes of the image (``boxes``) -----------------------------


def _boxes(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    """``info``'s group as a ``boxes`` kernel: the partitions ``boxes`` writes around the
    epilogue the emitter writes for the group, its output stored through TMA a patch at a
    time."""
    op = info.anchor
    assert op is not None
    plan = boxes.plan_of(info)
    if interpret or plan is None or not pingpong.available():
        raise CodegenError(
            f"{op.name}: a box kernel needs sm_90, Gluon and a stride-1 3x3 float16/bfloat16 convolution "
            "of a channels-last input of channels a multiple of 64 into a multiple of 64"
        )
    bh, bw = boxes.patch_of(config)
    bn = config["BLOCK_N"]
    resident = boxes.resident(plan, (bh, bw))
    if resident and not boxes.resident_available():
        raise CodegenError(f"{op.name}: a box kernel whose weight stays in shared memory needs Triton 3.6's reinterpret")
    if resident and config["BOXES"] != boxes.COPIES_STAGES:
        raise CodegenError(f"{op.name}: a box kernel whose weight stays in shared memory has {boxes.COPIES_STAGES} stages")
    if not (bh * bw == 128 or resident) or bn not in (64, 128) or config["BLOCK_K"] != boxes.BLOCK_K:
        raise CodegenError(
            f"{op.name}: a box kernel's tile is 128 pixels (64 for a 64 -> 64 convolution) by 64 or 128 channels, K 64 a step"
        )
    pointers, signature, outs = pointer_names(info)
    em = KernelEmitter(pointers, False)
    _, o, ho, wo = shape_of(op.results[0])
    em.line("pid_b = 0")
    em.line("pix = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, ACC))[:, None]")
    em.line("rn = off_n + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, ACC))[None, :]")
    out_ix = _patch_positions(em, op, "BOX_W")
    em.line(f"cmask = (ho_i < {ho}) & (wo_i < {wo}) & (rn < {o})")
    em.anchors[op.results[0]] = (out_ix, "acc")
    em.tile = "(BLOCK_M, BLOCK_N)"
    em.columns = Columns(frozenset({"rn", "o_i", "pid_b", "pid_n"}), "cmask", f"rn < {o}")
    stored: list[int] = []
    store_outputs(em, info, outs, out_ix, "cmask", _whole_tile_store(em, op, plan.elem, stored))
    if not stored:
        raise CodegenError(f"{op.name}: a box kernel stores its output channels-last as whole tiles")
    epilogue = pingpong.translate(em.lines)
    descriptors = boxes.descriptors(plan, (bh, bw), bn)
    for d in descriptors:
        signature[d.param] = pingpong.descriptor_type(plan.elem, d.block)
    name = f"dnnc_{info.kind}_boxes"
    if resident:
        text = boxes.copies_module_text(described(info), name, plan, (bh, bw), epilogue)
    else:
        text = boxes.module_text(described(info), name, plan, (bh, bw, bn, config["BOXES"]), epilogue)
    text, options = pingpong.with_pdl(text, name, {"num_warps": 4, "maxnreg": boxes.MAXNREG}, config)
    source = KernelSource(info.kind, name, text, signature, boxes.grid(plan, (bh, bw), bn), options, descriptors)
    plain = {key: v for key, v in config.items() if key not in ("BOXES", "BOX_H", "PDL")}
    source.fallback = _product(info, {**plain, "num_warps": 4, "num_stages": 3}, interpret)
    return source


# A network's first convolution on cells of the image (``stem``) ----------------------------


def _stem(info: GroupInfo, config: dict[str, int], interpret: bool) -> KernelSource:
    """``info``'s group as a ``stem`` kernel: the partitions ``stem`` writes around the
    epilogue the emitter writes for the group, computed on the product's tile as wgmma
    leaves it. A channels-last output leaves through shared memory and a TMA box of the
    output (``stem.module_text``); an NCHW one is converted to the layout of its stores
    after its cast, a tile's pixel rows a channel at a time."""
    op = info.anchor
    assert isinstance(op, tcp.Conv2dOp)
    plan = stem.plan_of(info)
    if interpret or plan is None or not stem.available():
        raise CodegenError(
            f"{op.name}: a cell stem kernel needs sm_90, Triton 3.6's Gluon and a stride-2 float16/bfloat16 "
            f"convolution of an NCHW image of at most {stem.CHANNELS} channels into {stem.OUT_CHANNELS}"
        )
    pointers, signature, outs = pointer_names(info)
    em = KernelEmitter(pointers, False)
    o = shape_of(op.results[0])[1]
    em.line("pid_b = 0")
    out_ix = _patch_positions(em, op, "16")
    em.line(f"cmask = (rn < {o}) & (pix < BP)")  # every position of a tile is in the output (``stem.plan_of``)
    positions = list(em.lines)
    em.anchors[op.results[0]] = (out_ix, "acc")
    em.tile = "(BLOCK_M, BLOCK_N)"
    em.columns = Columns(frozenset({"rn", "o_i", "pid_b", "pid_n"}), "cmask", f"rn < {o}")
    elem = pingpong.GL_TYPES[plan.elem]
    stores: list[str] = []
    descriptors: tuple[TileDescriptor, ...] = ()
    if plan.channels_last:
        stored: list[int] = []
        store_outputs(em, info, outs, out_ix, "cmask", _whole_tile_store(em, op, plan.elem, stored))
        if not stored:
            raise CodegenError(f"{op.name}: a stem kernel stores its channels-last output as whole tiles")
        descriptors = (stem.output_descriptor(plan),)
        for d in descriptors:
            signature[d.param] = pingpong.descriptor_type(plan.elem, d.block)
    else:

        def store(i: int, y: SSAValue, ix: Index) -> bool:
            em.line(f"s{i} = gl.convert_layout({em.value(y, ix, 'cmask')}.to(gl.{elem}), STORE)")
            stores.append(f"    gl.store({outs[i]} + {em.flat(ix)}, s{i}, mask=cmask)")
            return True

        store_outputs(em, info, outs, out_ix, "cmask", store)
    epilogue = pingpong.translate(em.lines)
    way_out = pingpong.translate(positions + stores) if stores else []
    name = f"dnnc_{info.kind}_stem"
    text = stem.module_text(described(info), name, plan, config["STEM"], epilogue, way_out)
    text, options = pingpong.with_pdl(text, name, dict(stem.OPTIONS), config)
    source = KernelSource(info.kind, name, text, signature, stem.grid(plan), options, descriptors)
    if descriptors:  # an output TMA cannot take (unaligned) goes through the pointer kernel
        plain = {key: v for key, v in config.items() if key not in ("STEM", "PDL")}
        source.fallback = _product(info, {**plain, "num_warps": 4, "num_stages": 3}, interpret)
    return source


def generate(
    group: tcp.IsolatedGroupOp, config: dict[str, int], interpret: bool = False, info: GroupInfo | None = None
) -> KernelSource:
    """The Triton source of ``group`` for ``config`` (from ``configs.candidates``).
    ``info``: the group's ``GroupInfo`` where the caller generates several configs of
    it (made here otherwise); the group must not change in between."""
    info = info if info is not None else GroupInfo.of(group)
    if info.kind in ("pointwise", "transpose", "pool"):
        return _pointwise(info, config, interpret)
    if info.kind in ROW_KINDS:
        return rows_kernel(info, config, interpret)
    if info.kind == "attention":
        return _attention(info, config, interpret)
    if config.get("STEM"):
        return _stem(info, config, interpret)
    if config.get("PINGPONG"):
        return _pingpong(info, config, interpret)
    if config.get("BOXES"):
        return _boxes(info, config, interpret)
    return _product(info, config, interpret)


__all__ = ["INT32_LIMIT", "GroupInfo", "KernelSource", "generate", "pow2"]
