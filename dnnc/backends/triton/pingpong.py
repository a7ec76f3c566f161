"""Warp-specialized Gluon kernels for 1x1 convolutions whose epilogue moves as many bytes
as their product takes time (``PINGPONG`` configs, Hopper only).

A Triton product kernel runs one tile a program: the K loop, then the epilogue (a
residual read, the output stored), so on an SM the tensor cores wait while the epilogue
moves its bytes. ResNet-50's 1x1 expansions ran at about the sum of their tensor-core and
memory time that way. The kernel here is written in Gluon (Triton's explicit dialect,
built by the same compiler into the same cubins): a persistent program per SM with a
loader partition that fills a ring of operand stages (TMA; a summed strided 1x1
convolution's input rows by ``cp.async``) and each consumer's residual buffer, and two
consumer warpgroups that take tiles in turn, their K loops one after the other (a
``turn`` barrier: a stage's barrier is then never waited on more than one phase ahead),
so one warpgroup's epilogue runs while the other multiplies. A consumer's output leaves
through a buffer of its own, waited on before its next tile's epilogue; where K is short a
residual comes in another buffer, freed as soon as it is read (``RESIDUAL_STAGES``). On
an H200 that ran ResNet-50's stage 3-4 expansions at batch 128 15-18% faster than the
Triton TMA tile and the blocks' summed expansion + downsample 5-34% faster at batches 32
and 128 (``bench/gluon_gemm_probe.py``, ``bench/results/gluon-*-2026-11-29-h200.json``).

The epilogue is the one ``KernelEmitter`` writes for the group (``kernels._pingpong``),
its ``tl.`` calls taken to their ``gl.`` twins (``translate``); this module writes the
rest: the partitions, the ring and its barriers. Gluon has no interpreter: these kernels
are built for sm_90 only and checked numerically on the GPU.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

from dnnc.backends.triton import tma
from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.skeleton import (
    INT32_LIMIT,
    GroupInfo,
    TileDescriptor,
    gathers,
    one_accumulator,
    pointer_names,
    product_sizes,
)
from dnnc.ir import tcp
from dnnc.ir.analysis import TO_NCHW, is_one_by_one_conv
from dnnc.ir.attrs import ints, scalar
from dnnc.ir.types import element_name, element_of, shape_of

CAPABILITY = 90
"""wgmma, which the consumers issue, is Hopper's alone (Blackwell multiplies with tcgen05)."""
PROGRAMS = 132
"""Programs of a launch at most: one per SM of an H100 SXM / H200 (each program takes
~197 KB of shared memory, so one fits an SM)."""
MAXNREG = 168
"""Registers a thread over the whole program: 12 warps x 32 x 168 fills an SM's 64 K."""
CONSUMER_REGS = 224
"""Each consumer warpgroup's share after the hand-over: a 128 x 128 float32 accumulator
(128 a thread) and the residual tile beside it."""
LOADER_REGS = 56
"""The loader's: row addresses of a ``cp.async`` tile and scalar bookkeeping."""
TILES = ((128, 128, 64, 4),)
"""(BLOCK_M, BLOCK_N, BLOCK_K, operand stages) offered. Of the probe's four, four and five
stages of 128 x 128 x 64 were best on every ResNet-50 shape it won, within 1-3.5% of each
other and even over the network's groups; one config keeps the added compile time to one
kernel a group."""
GL_TYPES = {"f16": "float16", "bf16": "bfloat16"}
"""Gluon's names of the element types a ping-pong kernel takes."""
RESIDUAL_STAGES = 3
"""Operand stages of a kernel whose residual tiles have buffers of their own (one a
consumer warpgroup, 64 KB in all): three fit beside them (225 KB of an SM's 227; four
would take 256 KB). The loader then fetches a consumer's next residual while that
consumer's output still leaves through TMA. With more stages a consumer reads its
residual from the buffer its output leaves through, and waits for the store before the
loader may refill it."""
OWN_RESIDUAL_K = 128
"""The longest K for which a residual kernel takes ``RESIDUAL_STAGES`` and buffers of
their own: ResNet-50's expansions on an H200 (``bench/compile_profile.py --own-kernels``,
steps in place) ran 1-2 us faster at batch 32 and 6 us faster at batch 128 so at K = 64
and 128 (stages 1-2), and 3-5 us slower at K = 256 and 512 (stages 3-4), where the
longer K loop wants the fourth stage."""
MIN_TILES = 2 * PROGRAMS
"""Output tiles a product needs before a ping-pong kernel is offered: with fewer, a program
has at most one tile per consumer warpgroup and no epilogue runs beside a product (it
lost to the Triton tile at ResNet-50's stage 4 at batch 32: 208 tiles)."""


@functools.cache
def available() -> bool:
    """Whether this Triton has Gluon's Hopper language (3.6 and later do)."""
    try:
        from triton.experimental.gluon.language.nvidia import hopper  # noqa: F401
    except ImportError:
        return False
    return True


@functools.cache
def _gluon_names() -> frozenset[str]:
    from triton.experimental.gluon import language as gl

    return frozenset(dir(gl))


_TL_CALL = re.compile(r"\btl\.(\w+)")


_ASSIGNMENT = re.compile(r"^\s*(\w+) = (.*)$")
_NAME = re.compile(r"\b[A-Za-z_]\w*\b")
TILE_NAMES = frozenset({"acc", "residual", "rm"})
"""Names an epilogue reads that stand for its tile: the accumulator, a residual tile, the
tile's rows."""


def hoisted_loads(epilogue: list[str]) -> tuple[list[str], list[str]]:
    """The ``epilogue`` split in two: its loads of vectors along the tile's columns (a
    bias: loads that read neither the accumulator, a residual nor the tile's rows) with the
    lines they read, to run before the K loop, and the rest, after it. A consumer that
    issued such a load after its product waited its whole latency on every tile; issued
    first, it arrives while the tile multiplies. On an H200 (ResNet-50 b32 under ncu) 35% of
    the cycles between a stage-3 expansion's instructions had gone waiting on global loads,
    the bias its consumers' only one, and the stage-2 expansions ran 1.5-2.2 us faster with
    it first. Tile-shaped loads stay where they were: held across the K loop they would
    take the registers the accumulator needs. Every line of an epilogue assigns a new name;
    where one does not, nothing is hoisted."""
    parsed = [_ASSIGNMENT.match(line) for line in epilogue]
    assignments = [(m.group(1), m.group(2)) for m in parsed if m is not None]
    names = [name for name, _ in assignments]
    if len(assignments) != len(epilogue) or len(set(names)) != len(names):
        return [], epilogue
    reads = {name: set(_NAME.findall(expr)) for name, expr in assignments}
    tiled: set[str] = set()
    for name in names:
        if reads[name] & (TILE_NAMES | tiled):
            tiled.add(name)
    loads = {name for name, expr in assignments if "gl.load(" in expr} - tiled
    wanted: set[str] = set()
    for name in reversed(names):  # a line's reads come before it
        if name in loads or name in wanted:
            wanted.add(name)
            wanted |= reads[name] & set(names)
    head = [line for line, name in zip(epilogue, names) if name in wanted]
    rest = [line for line, name in zip(epilogue, names) if name not in wanted]
    return head, rest


def translate(lines: list[str]) -> list[str]:
    """Epilogue lines in Gluon: each ``tl.name`` to ``gl.name``. A name Gluon lacks
    (``tl.sigmoid``, ``tl.extra...``) or a new index range (``tl.arange`` needs a layout
    in Gluon) is a ``CodegenError``: the config is then not built, and tuning times the
    group's other configs."""
    known = _gluon_names()
    out = []
    for line in lines:
        for name in _TL_CALL.findall(line):
            if name not in known or name in ("arange", "broadcast_to", "extra", "math"):
                raise CodegenError(f"a ping-pong epilogue has no Gluon form of tl.{name}")
        out.append(_TL_CALL.sub(r"gl.\1", line))
    return out


@dataclass(frozen=True)
class Second:
    """A summed 1x1 convolution's operands: its input read at every ``stride``-th pixel of
    an ``n x h x w x c`` channels-last block argument (``tensor``), its weight an
    ``N x c`` matrix through TMA (block argument ``weight``)."""

    tensor: str
    weight: int
    h: int
    w: int
    c: int
    stride: int


@dataclass(frozen=True)
class Plan:
    """What the kernel text needs to know of the group."""

    m: int
    n: int
    k: int
    out_rows: tuple[int, int]
    """(HO, WO): the output image's rows and columns, which place each of the second input's rows."""
    a: tma.Operand
    """The convolution's input as an ``M x K`` matrix (block argument ``a.arg``)."""
    w: tma.Operand
    """Its weight as an ``N x K`` matrix."""
    a_index: int
    w_index: int
    """Their positions among the group's block arguments."""
    second: Second | None
    residual: int | None
    """The block argument (position) the epilogue may read as a residual tile: an
    output-shaped channels-last tensor TMA reads, other than the products' operands."""
    pointers: tuple[str, ...]
    """The group's pointer parameters in signature order (inputs, then outputs)."""
    elem: str
    """``f16`` / ``bf16``."""


def plan_of(info: GroupInfo) -> Plan | None:
    """What a ``pingpong`` kernel of ``info``'s group reads, or None where it cannot be
    one: a float16 / bfloat16 1x1 convolution whose input and weight TMA reads as matrices
    K along their rows, optionally with a second 1x1 convolution summed into its
    accumulator (``skeleton.one_accumulator``: only biases between them) whose input is a
    channels-last block argument, and one output of the convolution's shape that TMA can
    store (a residual of that shape, read at the tile's positions, comes through TMA too)."""
    op = info.anchor
    if not isinstance(op, tcp.Conv2dOp) or len(info.outputs) != 1 or gathers(info.group):
        return None
    elem = element_name(element_of(op.results[0]))
    operands = tma.operands(op, info.group)
    if elem not in ("f16", "bf16") or operands is None or not all(o.k_inner for o in operands):
        return None
    out_shape, _ = tma.output_tile(op)
    y = info.outputs[0]
    if shape_of(y) != out_shape or tma.tile_matrix(out_shape, y) is None or element_name(element_of(y)) != elem:
        return None
    args = list(info.group.body.block.args)
    second = None
    summed_args: tuple[int, ...] = ()
    if info.summed is not None:
        conv = info.summed
        source = conv.input.owner
        if (
            not is_one_by_one_conv(conv)
            or int(scalar(conv.groups)) != 1
            or not one_accumulator(info)
            or not isinstance(source, tcp.TransposeOp)
            or tuple(ints(source.permutation)) != TO_NCHW
            or source.input not in args
            or conv.weight not in args
            or len(set(ints(conv.stride))) != 1
            or element_name(element_of(conv.input)) != elem
        ):
            return None
        nb, h, w, c = shape_of(source.input)
        if tma.tile_matrix((shape_of(conv.weight)[0], c), conv.weight) is None or c % 8 or nb * h * w * c > INT32_LIMIT:
            return None  # rows of 16-byte copies, addressed in int32
        second = Second(f"in{args.index(source.input)}", args.index(conv.weight), h, w, c, ints(conv.stride)[0])
        summed_args = (args.index(source.input), args.index(conv.weight))
    m, n, k, _ = product_sizes(op)
    _, _, ho, wo = shape_of(op.results[0])
    _, signature, _ = pointer_names(info)
    a, w = operands
    operand_args = {args.index(a.arg), args.index(w.arg), *summed_args}
    residual = next(
        (
            i
            for i, v in enumerate(args)
            if i not in operand_args and shape_of(v) == out_shape and tma.tile_matrix(out_shape, v) is not None
        ),
        None,
    )
    return Plan(m, n, k, (ho, wo), a, w, args.index(a.arg), args.index(w.arg), second, residual, tuple(signature), elem)


def stages_for(plan: Plan, stages: int) -> int:
    """The operand stages a kernel of ``plan`` takes for a tile of ``stages``:
    ``RESIDUAL_STAGES`` where it may read a residual tile and K is short
    (``OWN_RESIDUAL_K``)."""
    return RESIDUAL_STAGES if plan.residual is not None and plan.k <= OWN_RESIDUAL_K else stages


def module_text(
    header: list[str], name: str, plan: Plan, tile: tuple[int, int, int, int], epilogue: list[str], residual: bool
) -> str:
    """The kernel module: ``header`` (the group's IR as comments), the partitions, and the
    kernel ``name`` whose parameters are the group's pointers then its TMA descriptors
    (``a_tile``, ``w_tile``, ``v_tile`` with a second product, ``r_tile`` where the
    ``epilogue`` reads a residual tile, ``o_tile``)."""
    bm, bn, bk, stages = tile
    head, rest = hoisted_loads(epilogue)
    own_residual = residual and stages <= RESIDUAL_STAGES
    second = plan.second
    ks1 = -(-plan.k // bk)
    ks2 = -(-second.c // bk) if second else 0
    descs = ["a_tile", "w_tile", *(["v_tile"] if second else []), *(["r_tile"] if residual else []), "o_tile"]
    pointers = ", ".join(plan.pointers)
    constants = {
        "BLOCK_M": bm,
        "BLOCK_N": bn,
        "BLOCK_K": bk,
        "STAGES": stages,
        "M": plan.m,
        "N": plan.n,
        "KS1": ks1,
        "KS": ks1 + ks2,
        "GROUP": 8,
    }
    if second:
        constants |= {"HO": plan.out_rows[0], "WO": plan.out_rows[1], "H": second.h, "W": second.w, "C2": second.c}
        constants["STRIDE"] = second.stride
    lines = [
        *header,
        "",
        "import triton",
        "from triton.experimental import gluon",
        "from triton.experimental.gluon import language as gl",
    ]
    lines += [
        "from triton.experimental.gluon.language.nvidia.ampere import async_copy",
        "from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma, warpgroup_mma_wait",
        "",
        "# Triton 3.6 names these async_copy_* and thread_barrier; later versions async_load / async_store, barrier.",
        'tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared',
        'tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global',
        'copy_rows = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared',
        'thread_barrier = getattr(gl, "thread_barrier", None) or gl.barrier',
        "",
        *(f"{k} = gl.constexpr({v})" for k, v in constants.items()),
        "ACC = gl.constexpr(gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BLOCK_N, 16]))",
        "ROWS = gl.constexpr(gl.BlockedLayout([1, 8], [32 // (BLOCK_K // 8), BLOCK_K // 8], [4, 1], [1, 0]))",
        "",
        "",
        "@gluon.jit",
        "def tile_origin(t):",
        "    tn = gl.cdiv(N, BLOCK_N)",
        "    per = GROUP * tn",
        "    first = (t // per) * GROUP",
        "    size = gl.minimum(gl.cdiv(M, BLOCK_M) - first, GROUP)",
        "    return (first + (t % per) % size) * BLOCK_M, ((t % per) // size) * BLOCK_N",
        "",
        "",
        "@gluon.jit",
        "def loader(ptrs, descs, bufs, bars, pid, programs, tiles):",
        f"    {pointers}, = ptrs",
        f"    {', '.join(descs)}, = descs",
        "    a_bufs, w_bufs, c_bufs, r_bufs = bufs",
        "    ready, empty, r_ready, r_empty, turn = bars",
    ]
    if second:
        lines += [
            "    rows = gl.arange(0, BLOCK_M, layout=gl.SliceLayout(1, ROWS))",
            "    cols = gl.arange(0, BLOCK_K, layout=gl.SliceLayout(0, ROWS))",
        ]
    lines += ["    for j in range(tiles):", "        row, col = tile_origin(pid + j * programs)"]
    if second:
        lines += [
            "        m = row + rows",
            "        pixel = m % (HO * WO)",
            "        base = (((m // (HO * WO)) * H + (pixel // WO) * STRIDE) * W + (pixel % WO) * STRIDE) * C2",
            "        inside = (m < M)[:, None]",
        ]
    lines += [
        "        for k in range(KS):",
        "            s = j * KS + k",
        "            slot = s % STAGES",
        "            mbarrier.wait(empty.index(slot), ((s // STAGES) & 1) ^ 1)",
    ]
    first_loads = [
        "mbarrier.expect(ready.index(slot), a_tile.block_type.nbytes + w_tile.block_type.nbytes)",
        "tma_load(a_tile, [row, k * BLOCK_K], ready.index(slot), a_bufs.index(slot))",
        "tma_load(w_tile, [col, k * BLOCK_K], ready.index(slot), w_bufs.index(slot))",
    ]
    if second:
        source = second.tensor
        lines += ["            if k < KS1:", *(f"                {x}" for x in first_loads), "            else:"]
        lines += [
            "                kk = (k - KS1) * BLOCK_K",
            "                taken = inside & ((kk + cols) < C2)[None, :]  # zeros past the input's channels",
            f"                copy_rows(a_bufs.index(slot), {source} + base[:, None] + (kk + cols)[None, :], taken)",
            "                # every thread's copies count on the barrier before the one arrival below",
            "                async_copy.mbarrier_arrive(ready.index(slot))",
            "                thread_barrier()",
            "                mbarrier.expect(ready.index(slot), v_tile.block_type.nbytes)",
            "                tma_load(v_tile, [col, kk], ready.index(slot), w_bufs.index(slot))",
        ]
    else:
        lines += [f"            {x}" for x in first_loads]
    if residual:
        lines += [
            "        mbarrier.wait(r_empty.index(j % 2), ((j // 2) & 1) ^ 1)",
            "        mbarrier.expect(r_ready.index(j % 2), r_tile.block_type.nbytes)",
            "        tma_load(r_tile, [row, col], r_ready.index(j % 2), r_bufs.index(j % 2))",
        ]
    lines += [
        "",
        "",
        "@gluon.jit",
        "def consume(ptrs, descs, bufs, bars, pid, programs, tiles, ME: gl.constexpr):",
        f"    {pointers}, = ptrs",
        f"    {', '.join(descs)}, = descs",
        "    a_bufs, w_bufs, c_bufs, r_bufs = bufs",
        "    ready, empty, r_ready, r_empty, turn = bars",
        "    buf = c_bufs.index(ME)",
        "    for j in range(ME, tiles, 2):",
        "        off_m, off_n = tile_origin(pid + j * programs)",
        *(f"    {line}" for line in head),
        *k_loop(bool(second)),
    ]
    if own_residual:
        lines += [
            "        mbarrier.wait(r_ready.index(ME), (j // 2) & 1)",
            "        residual = r_bufs.index(ME).load(ACC)",
            "        thread_barrier()  # every warp holds the tile before the loader refills its buffer",
            "        mbarrier.arrive(r_empty.index(ME))",
        ]
    elif residual:  # in the buffer the output leaves through
        lines += ["        mbarrier.wait(r_ready.index(ME), (j // 2) & 1)", "        residual = buf.load(ACC)"]
    if not residual or own_residual:
        lines += ["        tma.store_wait(0)  # this consumer's last tile has left its buffer"]
    lines += [f"    {line}" for line in rest]
    lines += ["        buf.store(result)", "        fence_async_shared()", "        tma_store(o_tile, [off_m, off_n], buf)"]
    if residual and not own_residual:
        lines += ["        tma.store_wait(0)", "        mbarrier.arrive(r_empty.index(ME))"]
    lines += ["    tma.store_wait(0)"]
    lines += consumers()
    lines += [
        "",
        "",
        "@gluon.jit",
        f"def {name}({pointers}, {', '.join(descs)}):",
        f"    a_bufs = gl.allocate_shared_memory(gl.{GL_TYPES[plan.elem]}, [STAGES, BLOCK_M, BLOCK_K], a_tile.layout)",
        f"    w_bufs = gl.allocate_shared_memory(gl.{GL_TYPES[plan.elem]}, [STAGES, BLOCK_N, BLOCK_K], w_tile.layout)",
        f"    c_bufs = gl.allocate_shared_memory(gl.{GL_TYPES[plan.elem]}, [2, BLOCK_M, BLOCK_N], o_tile.layout)",
        *(
            [f"    r_bufs = gl.allocate_shared_memory(gl.{GL_TYPES[plan.elem]}, [2, BLOCK_M, BLOCK_N], r_tile.layout)"]
            if own_residual
            else ["    r_bufs = c_bufs  # residual tiles, if any, come in the output's buffers"]
        ),
        "    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
        "    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())",
        "    r_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())",
        "    r_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())",
        "    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())",
        "    for i in gl.static_range(STAGES):",
        "        mbarrier.init(ready.index(i), count=1)",
        "        mbarrier.init(empty.index(i), count=1)",
        "    for i in gl.static_range(2):",
        "        mbarrier.init(r_ready.index(i), count=1)",
        "        mbarrier.init(r_empty.index(i), count=1)",
        "        mbarrier.init(turn.index(i), count=1)",
        *warp_specialized(
            "gl.cdiv(M, BLOCK_M) * gl.cdiv(N, BLOCK_N)",
            f"({pointers},), ({', '.join(descs)},), (a_bufs, w_bufs, c_bufs, r_bufs), (ready, empty, r_ready, r_empty, turn)",
            (CONSUMER_REGS, LOADER_REGS),
        ),
    ]
    return "\n".join(lines)


def warp_specialized(tiles: str, args: str, regs: tuple[int, int]) -> list[str]:
    """A persistent kernel's last lines: this program's share of the ``tiles`` output tiles
    (every ``programs``-th from its own), and its two consumer warpgroups and its loader
    started on ``args`` (pointers, descriptors, buffers, barriers) with ``regs`` registers
    a thread (consumers, loader)."""
    return [
        "    pid = gl.program_id(0)",
        "    programs = gl.num_programs(0)",
        f"    tiles = gl.cdiv({tiles} - pid, programs)",
        f"    args = ({args}, pid, programs, tiles)",
        f"    gl.warp_specialize([(consumer0, args), (consumer1, args), (loader, args)], [4, 4], [{regs[0]}, {regs[1]}])",
        "",
    ]


PDL_WAIT = 'gl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=gl.int32, is_pure=False, pack=1)'
"""Gluon's form of ``tl.extra.cuda.gdc_wait``: the kernel waits here for the one before it."""


def with_pdl(text: str, name: str, options: dict[str, int], config: dict[str, int]) -> tuple[str, dict[str, int]]:
    """A Gluon kernel's module text and compile options for ``config``: where it is launched
    with Programmatic Dependent Launch (``PDL``, ``configs.with_launch``), every program
    waits for the kernel before it at the first line of kernel ``name``, before any load
    (``skeleton.assemble`` does the same for Triton's kernels), and the launcher sets the
    attribute. Its programs then become resident, and set up their barriers and shared
    memory, while that kernel's last ones drain."""
    if not config.get("PDL"):
        return text, options
    lines = text.split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith(f"def {name}("))
    lines.insert(at + 1, f"    {PDL_WAIT}  # the kernel before this one has finished and its memory is visible")
    return "\n".join(lines), {**options, "launch_pdl": True}


def k_loop(copied_rows: bool = False) -> list[str]:
    """A consumer's product of its tile ``j`` (in ``consume``, its loop over every other
    tile): its turn at the ring, the K loop over the stages (each released once the next
    product is issued), the turn handed on, and the last stage released. ``copied_rows``:
    some stages are filled by ``cp.async`` (a summed second input), which wgmma reads only
    after a fence."""
    fence = ["            fence_async_shared()  # rows copied by cp.async, read by wgmma"] if copied_rows else []
    return [
        "        acc = gl.zeros((BLOCK_M, BLOCK_N), gl.float32, ACC)",
        "        mbarrier.wait(turn.index(ME), ((j // 2) & 1) ^ (1 - ME))",
        "        for k in range(KS):",
        "            s = j * KS + k",
        "            slot = s % STAGES",
        "            mbarrier.wait(ready.index(slot), (s // STAGES) & 1)",
        *fence,
        "            acc = warpgroup_mma(a_bufs.index(slot), w_bufs.index(slot).permute((1, 0)), acc, use_acc=k > 0, is_async=True)",
        "            acc = warpgroup_mma_wait(1, deps=(acc,))",
        "            mbarrier.arrive(empty.index((s + STAGES - 1) % STAGES), pred=k > 0)",
        "        mbarrier.arrive(turn.index(1 - ME))",
        "        acc = warpgroup_mma_wait(0, deps=(acc,))",
        "        mbarrier.arrive(empty.index((j * KS + KS - 1) % STAGES))",
    ]


def consumers() -> list[str]:
    """The two consumer partitions: ``consume`` as warpgroup 0 and 1 (``ME``, a constexpr)."""
    lines: list[str] = []
    for me in (0, 1):
        lines += [
            "",
            "",
            "@gluon.jit",
            f"def consumer{me}(ptrs, descs, bufs, bars, pid, programs, tiles):",
            f"    consume(ptrs, descs, bufs, bars, pid, programs, tiles, {me})",
        ]
    return lines


def descriptors(plan: Plan, tile: tuple[int, int, int, int], residual: int | None) -> tuple[TileDescriptor, ...]:
    """The kernel's TMA parameters in ``module_text``'s order and the tensors they cover
    (``residual``: the block argument the epilogue reads as a tile, if any)."""
    bm, bn, bk, _ = tile
    found = [
        TileDescriptor("a_tile", plan.a_index, plan.a.shape, (bm, bk), gluon=True),
        TileDescriptor("w_tile", plan.w_index, plan.w.shape, (bn, bk), gluon=True),
    ]
    if plan.second is not None:
        found.append(TileDescriptor("v_tile", plan.second.weight, (plan.n, plan.second.c), (bn, bk), gluon=True))
    if residual is not None:
        found.append(TileDescriptor("r_tile", residual, (plan.m, plan.n), (bm, bn), gluon=True))
    found.append(TileDescriptor("o_tile", plan.pointers.index("out0"), (plan.m, plan.n), (bm, bn), gluon=True))
    return tuple(found)


def descriptor_type(elem: str, block: tuple[int, ...]) -> str:
    """The signature type of a Gluon descriptor over ``elem`` (``f16`` / ``bf16``) tiles of
    ``block``, its shared layout the swizzle TMA and wgmma share."""
    dims = ", ".join(map(str, block))
    return f"tensordesc<{tma.DESCRIPTOR_TYPES[elem]}[{dims}],{_shared_layout(GL_TYPES[elem], block)!r}>"


def descriptor(tensor, shape: tuple[int, ...], block: tuple[int, ...]):
    """The launch's Gluon descriptor over ``tensor`` as a row-major ``shape`` array."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = _shared_layout(str(tensor.dtype).removeprefix("torch."), block)
    strides = [math.prod(shape[i + 1 :]) for i in range(len(shape))]
    return TensorDescriptor(tensor, list(shape), strides, list(block), layout)


def _shared_layout(dtype: str, block: tuple[int, ...]):
    """Gluon's default swizzled layout for ``block`` tiles of ``dtype`` (``float16`` / ``bfloat16``)."""
    from triton.experimental.gluon import language as gl

    return gl.NVMMASharedLayout.get_default_for(list(block), getattr(gl, dtype))


def tile_count(m: int, n: int, tile: tuple[int, ...]) -> int:
    """Output tiles of ``tile``'s ``BLOCK_M x BLOCK_N`` an ``m x n`` product has."""
    return -(-m // tile[0]) * -(-n // tile[1])


def grid(m: int, n: int, tile: tuple[int, int, int, int]) -> tuple[int, int, int]:
    """One program per SM, or per tile where there are fewer."""
    return (min(PROGRAMS, tile_count(m, n, tile)), 1, 1)
