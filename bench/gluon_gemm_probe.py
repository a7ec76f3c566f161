"""The 1x1 expansion + bias + residual + ReLU as Gluon kernels whose epilogue runs beside
other work, against the Triton TMA tile dnnc generates today.

Why: the fused Triton kernel runs ResNet-50's expansions at about 1.7x cuDNN's convolution
without the epilogue (stage 3, b128: 45 us in the program against a floor of 28): its
program reads the residual after its K loop and stores after that, one tile a program, so
on an SM the tensor cores wait while the epilogue moves 64 KB. Triton's own persistent and
warp-specialized forms did not change that (``bench/gemm_tile_probe.py``). Gluon (Triton's
explicit dialect, in Triton 3.6 and 3.9 alike) lets the schedule be written out. Two forms:

* ``expansion_persistent``: one partition; a program walks its tiles and its K steps run
  as one stream across tile boundaries (the next tile's first operand loads are in flight
  while this tile's epilogue runs), the next tile's residual is fetched by TMA into the
  buffer the tile before last was stored from, and the result leaves by an asynchronous
  TMA store. ``RESIDUAL=False`` times the product and its store alone.
* ``expansion_pingpong``: warp-specialized; a loader warp fills a ring of operand stages
  and each tile's residual buffer, and two consumer warpgroups take tiles in turn, their
  K loops one after the other (a ``turn`` barrier), so one warpgroup's epilogue runs while
  the other multiplies.

Every kernel's result is checked against float32 first, then timed as a CUDA-graph replay
(``dnnc.timing.device_time_ms``). Run on the GPU: ``python bench/gluon_gemm_probe.py``;
writes ``$OUT/gluon-gemm.json`` (default /tmp). ``--compile-only`` compiles every config
for sm_90 without a GPU (``triton.compile`` with an explicit target) and prints what each
kernel's PTX holds or why it failed.
"""

from __future__ import annotations

import argparse
import re

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from bench.gluon_common import copy_rows as _copy_rows
from bench.gluon_common import gpu_run, kept, printed_builds
from bench.gluon_common import thread_barrier as _thread_barrier
from bench.gluon_common import tma_load as _tma_load
from bench.gluon_common import tma_store as _tma_store

SHAPES = {
    "s1": (128 * 56 * 56, 256, 64),
    "s2": (128 * 28 * 28, 512, 128),
    "s3": (128 * 14 * 14, 1024, 256),
    "s4": (128 * 7 * 7, 2048, 512),
    "s1b32": (32 * 56 * 56, 256, 64),
    "s2b32": (32 * 28 * 28, 512, 128),
    "s3b32": (32 * 14 * 14, 1024, 256),
    "s4b32": (32 * 7 * 7, 2048, 512),
}
"""(M pixels, N output channels, K input channels): ResNet-50's residual 1x1 expansions, batch
128 unless named."""

CONFIGS = [
    (128, 128, 64, 4, 4),
    (128, 128, 64, 8, 4),
    (128, 64, 64, 4, 4),
    (64, 128, 64, 4, 4),
    (128, 128, 32, 4, 6),
    (128, 256, 64, 8, 2),
    (64, 256, 64, 4, 3),
]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, operand stages) of the Gluon kernel."""

PINGPONG_CONFIGS = [
    (128, 128, 64, 4, 4),
    (128, 128, 64, 4, 5),
    (128, 128, 32, 4, 8),
    (64, 256, 64, 4, 3),
]
"""The same for the warp-specialized kernel (warps: each consumer's; 12 warps in all)."""
PINGPONG_MAXNREG = 168
"""Registers a thread over the whole program (12 warps: 168 x 384 fills the SM's 64 K)."""

TRITON_TILES = [
    (128, 128, 64, 4, 3),
    (128, 128, 64, 8, 3),
    (128, 64, 64, 4, 3),
    (64, 128, 64, 4, 3),
    (128, 128, 32, 4, 3),
]
"""(BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) of the Triton TMA tile (dnnc's kernel form)."""


@gluon.constexpr_function
def accumulator_layout(BM, BN, num_warps):
    """Warps stacked along M, 16 rows each (a warpgroup covers 64); what is left along N."""
    wm = min(num_warps, BM // 16)
    wn = num_warps // wm
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[wm, wn], instr_shape=[16, BN // wn, 16])


@gluon.jit
def _tile_origin(t, tm, tn, GROUP: gl.constexpr, BM: gl.constexpr, BN: gl.constexpr):
    """Tile ``t``'s first row and column, row tiles in groups of ``GROUP`` (L2 reuse of W)."""
    per = GROUP * tn
    first = (t // per) * GROUP
    size = gl.minimum(tm - first, GROUP)
    return (first + (t % per) % size) * BM, ((t % per) // size) * BN


@gluon.jit
def _load_step(
    s, steps, ks, pid, programs, tm, tn, a_desc, w_desc, a_bufs, w_bufs, ready, GROUP: gl.constexpr, STAGES: gl.constexpr
):
    """Operand loads of K step ``s`` of this program's stream (tile ``s // ks``), if it exists."""
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    row, col = _tile_origin(pid + (s // ks) * programs, tm, tn, GROUP, BM, BN)
    slot = s % STAGES
    exists = s < steps
    mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + w_desc.block_type.nbytes, pred=exists)
    _tma_load(a_desc, [row, (s % ks) * BK], ready.index(slot), a_bufs.index(slot), exists)
    _tma_load(w_desc, [col, (s % ks) * BK], ready.index(slot), w_bufs.index(slot), exists)


@gluon.jit
def expansion_persistent(
    a_desc,
    w_desc,
    r_desc,
    o_desc,
    bias,
    N,
    GROUP: gl.constexpr,
    STAGES: gl.constexpr,
    num_warps: gl.constexpr,
    RESIDUAL: gl.constexpr = True,
):
    """out = relu(A @ W^T + bias + R), A: M x K, W: N x K, R and out: M x N, all row-major.
    ``RESIDUAL=False``: out = A @ W^T (what the product and its store cost alone)."""
    BM: gl.constexpr = o_desc.block_type.shape[0]
    BN: gl.constexpr = o_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    layout: gl.constexpr = accumulator_layout(BM, BN, num_warps)
    M = a_desc.shape[0]
    K = a_desc.shape[1]

    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], a_desc.layout)
    w_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, BK], w_desc.layout)
    c_bufs = gl.allocate_shared_memory(dtype, [2, BM, BN], o_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    fetched = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(fetched.index(i), count=1)

    tm = gl.cdiv(M, BM)
    tn = gl.cdiv(N, BN)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    tiles = gl.cdiv(tm * tn - pid, programs)
    ks = gl.cdiv(K, BK)
    steps = tiles * ks

    row, col = _tile_origin(pid, tm, tn, GROUP, BM, BN)
    mbarrier.expect(fetched.index(0), r_desc.block_type.nbytes, pred=RESIDUAL)
    _tma_load(r_desc, [row, col], fetched.index(0), c_bufs.index(0), RESIDUAL)
    for s in gl.static_range(STAGES - 1):
        _load_step(s, steps, ks, pid, programs, tm, tn, a_desc, w_desc, a_bufs, w_bufs, ready, GROUP, STAGES)

    columns = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    acc = gl.zeros((BM, BN), gl.float32, layout)
    for c in range(steps):
        slot = c % STAGES
        k = c % ks
        mbarrier.wait(ready.index(slot), (c // STAGES) & 1)
        acc = warpgroup_mma(a_bufs.index(slot), w_bufs.index(slot).permute((1, 0)), acc, use_acc=k > 0, is_async=True)
        acc = warpgroup_mma_wait(1, deps=(acc,))
        # step c - 1's product is done: its slot takes step c + STAGES - 1
        _load_step(c + STAGES - 1, steps, ks, pid, programs, tm, tn, a_desc, w_desc, a_bufs, w_bufs, ready, GROUP, STAGES)
        if k == ks - 1:
            acc = warpgroup_mma_wait(0, deps=(acc,))
            j = c // ks
            row, col = _tile_origin(pid + j * programs, tm, tn, GROUP, BM, BN)
            # the next tile's residual goes where the tile before this one was stored from
            tma.store_wait(0)
            after = j + 1
            has_next = (after < tiles) & RESIDUAL
            next_row, next_col = _tile_origin(pid + after * programs, tm, tn, GROUP, BM, BN)
            mbarrier.expect(fetched.index(after % 2), r_desc.block_type.nbytes, pred=has_next)
            _tma_load(r_desc, [next_row, next_col], fetched.index(after % 2), c_bufs.index(after % 2), has_next)
            buf = c_bufs.index(j % 2)
            if RESIDUAL:
                mbarrier.wait(fetched.index(j % 2), (j // 2) & 1)
                residual = buf.load(layout)
                n = col + columns
                b = gl.load(bias + n, mask=n < N, other=0.0)
                y = gl.maximum(acc + b.to(gl.float32)[None, :] + residual.to(gl.float32), 0.0)
                buf.store(y.to(dtype))
            else:
                buf.store(acc.to(dtype))
            fence_async_shared()
            _tma_store(o_desc, [row, col], buf)
    tma.store_wait(0)


@gluon.jit
def _pp_loader(descs, bufs, bars, bias, N, geometry, GROUP: gl.constexpr):
    """One warp: every K step's operands into the ring, each tile's residual into the
    buffer of the consumer that takes the tile (tile j: consumer j % 2)."""
    a_desc, w_desc, r_desc, _ = descs
    a_bufs, w_bufs, c_bufs = bufs
    ready, empty, r_ready, r_empty, _ = bars
    pid, programs, tm, tn, tiles, ks = geometry
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    for j in range(tiles):
        row, col = _tile_origin(pid + j * programs, tm, tn, GROUP, BM, BN)
        for k in range(ks):
            s = j * ks + k
            slot = s % STAGES
            mbarrier.wait(empty.index(slot), ((s // STAGES) & 1) ^ 1)
            mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + w_desc.block_type.nbytes)
            _tma_load(a_desc, [row, k * BK], ready.index(slot), a_bufs.index(slot))
            _tma_load(w_desc, [col, k * BK], ready.index(slot), w_bufs.index(slot))
        mbarrier.wait(r_empty.index(j % 2), ((j // 2) & 1) ^ 1)
        mbarrier.expect(r_ready.index(j % 2), r_desc.block_type.nbytes)
        _tma_load(r_desc, [row, col], r_ready.index(j % 2), c_bufs.index(j % 2))


@gluon.jit
def _pp_consume(descs, bufs, bars, bias, N, geometry, GROUP: gl.constexpr, ME: gl.constexpr):
    """One warpgroup: tiles ME, ME + 2, ...; its epilogue runs while the other warpgroup
    multiplies."""
    o_desc = descs[3]
    a_bufs, w_bufs, c_bufs = bufs
    ready, empty, r_ready, r_empty, turn = bars
    pid, programs, tm, tn, tiles, ks = geometry
    BM: gl.constexpr = o_desc.block_type.shape[0]
    BN: gl.constexpr = o_desc.block_type.shape[1]
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    layout: gl.constexpr = accumulator_layout(BM, BN, 4)
    columns = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    buf = c_bufs.index(ME)
    for j in range(ME, tiles, 2):
        row, col = _tile_origin(pid + j * programs, tm, tn, GROUP, BM, BN)
        acc = gl.zeros((BM, BN), gl.float32, layout)
        # the two warpgroups' K loops take turns in tile order: a ring slot's barrier is then
        # never waited on for a use more than one phase ahead of it
        mbarrier.wait(turn.index(ME), ((j // 2) & 1) ^ (1 - ME))
        for k in range(ks):
            s = j * ks + k
            slot = s % STAGES
            mbarrier.wait(ready.index(slot), (s // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(slot), w_bufs.index(slot).permute((1, 0)), acc, use_acc=k > 0, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            mbarrier.arrive(empty.index((s + STAGES - 1) % STAGES), pred=k > 0)
        mbarrier.arrive(turn.index(1 - ME))
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((j * ks + ks - 1) % STAGES))
        mbarrier.wait(r_ready.index(ME), (j // 2) & 1)
        residual = buf.load(layout)
        n = col + columns
        b = gl.load(bias + n, mask=n < N, other=0.0)
        y = gl.maximum(acc + b.to(gl.float32)[None, :] + residual.to(gl.float32), 0.0)
        buf.store(y.to(o_desc.dtype))
        fence_async_shared()
        _tma_store(o_desc, [row, col], buf)
        tma.store_wait(0)
        mbarrier.arrive(r_empty.index(ME))


@gluon.jit
def _pp_consumer0(descs, bufs, bars, bias, N, geometry, GROUP: gl.constexpr):
    _pp_consume(descs, bufs, bars, bias, N, geometry, GROUP, 0)


@gluon.jit
def _pp_consumer1(descs, bufs, bars, bias, N, geometry, GROUP: gl.constexpr):
    _pp_consume(descs, bufs, bars, bias, N, geometry, GROUP, 1)


@gluon.jit
def expansion_pingpong(
    a_desc,
    w_desc,
    r_desc,
    o_desc,
    bias,
    N,
    GROUP: gl.constexpr,
    STAGES: gl.constexpr,
    num_warps: gl.constexpr,
    CONSUMER_REGS: gl.constexpr = 224,
    LOADER_REGS: gl.constexpr = 40,
):
    """The same product, warp-specialized: a loader warp and two consumer warpgroups that
    take tiles in turn (``num_warps`` must be 4: the default partition is consumer 0)."""
    BM: gl.constexpr = o_desc.block_type.shape[0]
    BN: gl.constexpr = o_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], a_desc.layout)
    w_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, BK], w_desc.layout)
    c_bufs = gl.allocate_shared_memory(dtype, [2, BM, BN], o_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    r_ready = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    r_empty = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(r_ready.index(i), count=1)
        mbarrier.init(r_empty.index(i), count=1)
        mbarrier.init(turn.index(i), count=1)
    M = a_desc.shape[0]
    tm = gl.cdiv(M, BM)
    tn = gl.cdiv(N, BN)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    geometry = (pid, programs, tm, tn, gl.cdiv(tm * tn - pid, programs), gl.cdiv(a_desc.shape[1], BK))
    args = (
        (a_desc, w_desc, r_desc, o_desc),
        (a_bufs, w_bufs, c_bufs),
        (ready, empty, r_ready, r_empty, turn),
        bias,
        N,
        geometry,
        GROUP,
    )
    gl.warp_specialize([(_pp_consumer0, args), (_pp_consumer1, args), (_pp_loader, args)], [4, 1], [CONSUMER_REGS, LOADER_REGS])


SUMMED_SHAPES = {
    "ds1": (128, 56, 64, 256, 1),
    "ds2": (128, 56, 256, 512, 2),
    "ds3": (128, 28, 512, 1024, 2),
    "ds4": (128, 14, 1024, 2048, 2),
    "ds1b32": (32, 56, 64, 256, 1),
    "ds2b32": (32, 56, 256, 512, 2),
    "ds3b32": (32, 28, 512, 1024, 2),
    "ds4b32": (32, 14, 1024, 2048, 2),
}
"""(batch, block input size, its channels, output channels, stride): ResNet-50's first block
of each stage, whose 1x1 expansion of the block's middle (``out / 4`` channels) and 1x1
downsample of its input (strided) are summed: ``bench/split_k_probe.summed``'s group."""


@gluon.jit
def _sum_loader(
    descs,
    bufs,
    bars,
    x,
    bias,
    M,
    geometry,
    GROUP: gl.constexpr,
    HO: gl.constexpr,
    WO: gl.constexpr,
    H: gl.constexpr,
    W: gl.constexpr,
    C2: gl.constexpr,
    STRIDE: gl.constexpr,
):
    """Four warps: the expansion's K steps by TMA, then the downsample's: its input rows
    (one pixel of every STRIDE-th row and column) by ``cp.async``, its weight by TMA."""
    a_desc, w_desc, v_desc, _ = descs
    a_bufs, w_bufs, _ = bufs
    ready, empty, _ = bars
    pid, programs, tm, tn, tiles, ks1 = geometry
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    rows_layout: gl.constexpr = gl.BlockedLayout([1, 8], [32 // (BK // 8), BK // 8], [4, 1], [1, 0])
    rows = gl.arange(0, BM, layout=gl.SliceLayout(1, rows_layout))
    cols = gl.arange(0, BK, layout=gl.SliceLayout(0, rows_layout))
    ks = ks1 + (C2 + BK - 1) // BK
    for j in range(tiles):
        row, col = _tile_origin(pid + j * programs, tm, tn, GROUP, BM, BN)
        m = row + rows
        image = m // (HO * WO)
        pixel = m % (HO * WO)
        base = ((image * H + (pixel // WO) * STRIDE) * W + (pixel % WO) * STRIDE) * C2
        inside = (m < M)[:, None]
        for k in range(ks):
            s = j * ks + k
            slot = s % STAGES
            mbarrier.wait(empty.index(slot), ((s // STAGES) & 1) ^ 1)
            if k < ks1:
                mbarrier.expect(ready.index(slot), a_desc.block_type.nbytes + w_desc.block_type.nbytes)
                _tma_load(a_desc, [row, k * BK], ready.index(slot), a_bufs.index(slot))
                _tma_load(w_desc, [col, k * BK], ready.index(slot), w_bufs.index(slot))
            else:
                kk = (k - ks1) * BK
                _copy_rows(a_bufs.index(slot), x + base[:, None] + (kk + cols)[None, :], inside)
                # each thread's copies count on the barrier before the one arrival below
                async_copy.mbarrier_arrive(ready.index(slot))
                _thread_barrier()
                mbarrier.expect(ready.index(slot), v_desc.block_type.nbytes)
                _tma_load(v_desc, [col, kk], ready.index(slot), w_bufs.index(slot))


@gluon.jit
def _sum_consume(
    descs,
    bufs,
    bars,
    x,
    bias,
    M,
    geometry,
    GROUP: gl.constexpr,
    HO: gl.constexpr,
    WO: gl.constexpr,
    H: gl.constexpr,
    W: gl.constexpr,
    C2: gl.constexpr,
    STRIDE: gl.constexpr,
    ME: gl.constexpr,
):
    o_desc = descs[3]
    a_bufs, w_bufs, c_bufs = bufs
    ready, empty, turn = bars
    pid, programs, tm, tn, tiles, ks1 = geometry
    N = o_desc.shape[1]
    BM: gl.constexpr = o_desc.block_type.shape[0]
    BN: gl.constexpr = o_desc.block_type.shape[1]
    BK: gl.constexpr = a_bufs.type.shape[2]
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    layout: gl.constexpr = accumulator_layout(BM, BN, 4)
    columns = gl.arange(0, BN, layout=gl.SliceLayout(0, layout))
    buf = c_bufs.index(ME)
    ks = ks1 + (C2 + BK - 1) // BK
    for j in range(ME, tiles, 2):
        row, col = _tile_origin(pid + j * programs, tm, tn, GROUP, BM, BN)
        acc = gl.zeros((BM, BN), gl.float32, layout)
        mbarrier.wait(turn.index(ME), ((j // 2) & 1) ^ (1 - ME))
        for k in range(ks):
            s = j * ks + k
            slot = s % STAGES
            mbarrier.wait(ready.index(slot), (s // STAGES) & 1)
            fence_async_shared()  # rows copied by cp.async, read by wgmma
            acc = warpgroup_mma(a_bufs.index(slot), w_bufs.index(slot).permute((1, 0)), acc, use_acc=k > 0, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            mbarrier.arrive(empty.index((s + STAGES - 1) % STAGES), pred=k > 0)
        mbarrier.arrive(turn.index(1 - ME))
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((j * ks + ks - 1) % STAGES))
        n = col + columns
        b = gl.load(bias + n, mask=n < N, other=0.0)
        y = gl.maximum(acc + b.to(gl.float32)[None, :], 0.0)
        tma.store_wait(0)
        buf.store(y.to(o_desc.dtype))
        fence_async_shared()
        _tma_store(o_desc, [row, col], buf)
    tma.store_wait(0)


@gluon.jit
def _sum_consumer0(
    descs,
    bufs,
    bars,
    x,
    bias,
    M,
    geometry,
    GROUP: gl.constexpr,
    HO: gl.constexpr,
    WO: gl.constexpr,
    H: gl.constexpr,
    W: gl.constexpr,
    C2: gl.constexpr,
    STRIDE: gl.constexpr,
):
    _sum_consume(descs, bufs, bars, x, bias, M, geometry, GROUP, HO, WO, H, W, C2, STRIDE, 0)


@gluon.jit
def _sum_consumer1(
    descs,
    bufs,
    bars,
    x,
    bias,
    M,
    geometry,
    GROUP: gl.constexpr,
    HO: gl.constexpr,
    WO: gl.constexpr,
    H: gl.constexpr,
    W: gl.constexpr,
    C2: gl.constexpr,
    STRIDE: gl.constexpr,
):
    _sum_consume(descs, bufs, bars, x, bias, M, geometry, GROUP, HO, WO, H, W, C2, STRIDE, 1)


@gluon.jit
def summed_pingpong(
    a_desc,
    w_desc,
    v_desc,
    o_desc,
    x,
    bias,
    HO: gl.constexpr,
    WO: gl.constexpr,
    H: gl.constexpr,
    W: gl.constexpr,
    C2: gl.constexpr,
    STRIDE: gl.constexpr,
    GROUP: gl.constexpr,
    STAGES: gl.constexpr,
    num_warps: gl.constexpr,
    CONSUMER_REGS: gl.constexpr = 224,
    LOADER_REGS: gl.constexpr = 56,
):
    """out = relu(A @ W^T + X_s @ V^T + bias): a block's expansion (A: M x K1 middle rows)
    and downsample (X: the block input, NHWC, read at every STRIDE-th pixel; V: N x K2)
    in one accumulator, the ping-pong form of ``expansion_pingpong`` with a four-warp loader."""
    BM: gl.constexpr = o_desc.block_type.shape[0]
    BN: gl.constexpr = o_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    dtype: gl.constexpr = a_desc.dtype
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, BK], a_desc.layout)
    w_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, BK], w_desc.layout)
    c_bufs = gl.allocate_shared_memory(dtype, [2, BM, BN], o_desc.layout)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)
    M = o_desc.shape[0]
    N = o_desc.shape[1]
    tm = gl.cdiv(M, BM)
    tn = gl.cdiv(N, BN)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    geometry = (pid, programs, tm, tn, gl.cdiv(tm * tn - pid, programs), gl.cdiv(a_desc.shape[1], BK))
    args = (
        (a_desc, w_desc, v_desc, o_desc),
        (a_bufs, w_bufs, c_bufs),
        (ready, empty, turn),
        x,
        bias,
        M,
        geometry,
        GROUP,
        HO,
        WO,
        H,
        W,
        C2,
        STRIDE,
    )
    gl.warp_specialize(
        [(_sum_consumer0, args), (_sum_consumer1, args), (_sum_loader, args)], [4, 4], [CONSUMER_REGS, LOADER_REGS]
    )


def probe_summed(n: int, h: int, c2: int, o: int, stride: int, sms: int) -> dict:
    """dnnc's own kernel of the summed group (every candidate config, as the program would
    time them) against ``summed_pingpong``, each checked against float32 first."""
    import torch

    from bench.gpu_timing import checked_kernel_us
    from bench.split_k_probe import prepared, summed, timed
    from dnnc.backends.triton.configs import candidates
    from dnnc.backends.triton.kernels import generate
    from dnnc.backends.triton.launch import capability_of
    from dnnc.backends.triton.skeleton import GroupInfo

    device = torch.device("cuda")
    ho = h // stride
    c1, m = o // 4, n * ho * ho
    row: dict = {"M": m, "N": o, "K1": c1, "K2": c2, "gflop": 2 * m * o * (c1 + c2) / 1e9}
    row["mb"] = (m * c1 + m * c2 + o * (c1 + c2) + m * o) * 2 / 1e6
    group, ins, want = prepared("summed", summed(h, c2, o, n, stride), device)
    info = GroupInfo.of(group)
    dnnc_rows = {}
    for config in candidates(info, capability_of(device)):
        tag = "_".join(f"{k}{v}" for k, v in config.items())
        result = timed(group, generate(group, config, info=info), config, ins, want, device)
        dnnc_rows[tag] = round(result["ms"] * 1e3, 2) if "ms" in result and result["rel_error"] < 0.02 else str(result)[:200]
    row["dnnc"] = dnnc_rows

    torch.manual_seed(0)
    mid = torch.randn(m, c1, device=device, dtype=torch.float16)
    x = torch.randn(n, h, h, c2, device=device, dtype=torch.float16)
    w1 = torch.randn(o, c1, device=device, dtype=torch.float16) / c1**0.5
    w2 = torch.randn(o, c2, device=device, dtype=torch.float16) / c2**0.5
    b = torch.randn(o, device=device, dtype=torch.float16)
    out = torch.empty(m, o, device=device, dtype=torch.float16)
    xs = x[:, ::stride, ::stride, :].reshape(m, c2)
    ref = torch.relu(mid.float() @ w1.float().T + xs.float() @ w2.float().T + b.float())
    gluon_rows: dict[str, float | str] = {}
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    def make(t, block):
        return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, gl.float16))

    for bm, bn, bk, _warps, stages in PINGPONG_CONFIGS:
        bn = min(bn, o)
        programs = min(triton.cdiv(m, bm) * triton.cdiv(o, bn), sms)
        descs = (make(mid, [bm, bk]), make(w1, [bn, bk]), make(w2, [bn, bk]), make(out, [bm, bn]))

        def fn(descs=descs, programs=programs, stages=stages):
            summed_pingpong[(programs,)](*descs, x, b, ho, ho, h, h, c2, stride, 8, stages, num_warps=4, maxnreg=PINGPONG_MAXNREG)

        gluon_rows[f"pingpong_{bm}x{bn}x{bk}_s{stages}"] = checked_kernel_us(fn, out, ref, 0.05)
    row["gluon"] = gluon_rows
    for key in ("dnnc", "gluon"):
        timed_rows = [(v, tag) for tag, v in row[key].items() if isinstance(v, float)]
        row[f"best_{key}"] = min(timed_rows) if timed_rows else None
    return row


def _descriptors(a, w, r, o, bm, bn, bk):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    def make(t, block):
        return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, gl.float16))

    return make(a, [bm, bk]), make(w, [bn, bk]), make(r, [bm, bn]), make(o, [bm, bn])


def compile_only(first_only: bool = False) -> dict[str, dict]:
    """Compile the configs of both kernels for sm_90 without a GPU (``first_only``: the first
    of each, and the product without its residual): per config, whether it built, its shared
    memory and what its PTX holds (wgmma, TMA copies, register hand-over between warps), or
    the error."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    def desc(block):
        layout = gl.NVMMASharedLayout.get_default_for(block, gl.float16)
        return f"tensordesc<fp16[{block[0]}, {block[1]}],{layout!r}>"

    persistent = CONFIGS[:1] if first_only else CONFIGS
    pingpong = PINGPONG_CONFIGS[:1] if first_only else PINGPONG_CONFIGS
    regs = {"CONSUMER_REGS": 224, "LOADER_REGS": 40}
    jobs = [("persistent", expansion_persistent, c, {"RESIDUAL": True}, {}) for c in persistent]
    jobs.append(("persistent-noresidual", expansion_persistent, CONFIGS[0], {"RESIDUAL": False}, {}))
    jobs += [("pingpong", expansion_pingpong, c, regs, {"maxnreg": PINGPONG_MAXNREG}) for c in pingpong]
    block = {"HO": 14, "WO": 14, "H": 28, "W": 28, "C2": 512, "STRIDE": 2, "CONSUMER_REGS": 224, "LOADER_REGS": 56}
    jobs.append(("summed-pingpong", summed_pingpong, PINGPONG_CONFIGS[0], block, {"maxnreg": PINGPONG_MAXNREG}))
    out = {}
    for kind, kernel, (bm, bn, bk, warps, stages), extra, options in jobs:
        if kernel is summed_pingpong:
            signature = {"a_desc": desc([bm, bk]), "w_desc": desc([bn, bk]), "v_desc": desc([bn, bk]), "o_desc": desc([bm, bn])}
            signature |= {"x": "*fp16", "bias": "*fp16"} | {d: "constexpr" for d in ("HO", "WO", "H", "W", "C2", "STRIDE")}
        else:
            signature = {"a_desc": desc([bm, bk]), "w_desc": desc([bn, bk]), "r_desc": desc([bm, bn]), "o_desc": desc([bm, bn])}
            signature |= {"bias": "*fp16", "N": "i32"}
        signature |= {"GROUP": "constexpr", "STAGES": "constexpr", "num_warps": "constexpr"}
        values = {"GROUP": 8, "STAGES": stages, "num_warps": warps} | extra
        signature |= {k: "constexpr" for k in extra}
        constexprs = {(list(signature).index(k),): v for k, v in values.items()}
        name = f"{kind}_{bm}x{bn}x{bk}_w{warps}s{stages}"
        try:
            # pointers 16-byte aligned, as a launch on torch tensors specializes them
            aligned = {(i,): [["tt.divisibility", 16]] for i, t in enumerate(signature.values()) if t.startswith("*")}
            src = GluonASTSource(kernel, signature, constexprs, aligned)
            compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, **options})
        except Exception as e:
            out[name] = {"built": False, "error": str(e)[-600:]}
            continue
        ptx = compiled.asm["ptx"]
        out[name] = {
            "built": True,
            "shared": compiled.metadata.shared,
            "wgmma": "wgmma.mma_async" in ptx,
            "tma_loads": re.search(r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global", ptx) is not None,
            "tma_stores": re.search(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::\w+", ptx) is not None,
            "setmaxnreg": "setmaxnreg" in ptx,
        }
    return out


def probe(m: int, n: int, k: int, sms: int, kinds=("triton", "gluon", "pingpong"), regs=(224, 40)) -> dict:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor as TritonDescriptor

    from bench.gemm_tile_probe import tma_tiles
    from bench.gpu_timing import checked_kernel_us
    from dnnc.timing import device_time_ms

    torch.manual_seed(0)
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    w = torch.randn(n, k, device="cuda", dtype=torch.float16) / k**0.5
    b = torch.randn(n, device="cuda", dtype=torch.float16)
    r = torch.randn(m, n, device="cuda", dtype=torch.float16)
    o = torch.empty(m, n, device="cuda", dtype=torch.float16)
    want = torch.relu(a.float() @ w.float().T + b.float() + r.float())
    row: dict = {"M": m, "N": n, "K": k, "mb": (m * k + n * k + 2 * m * n) * 2 / 1e6, "gflop": 2 * m * n * k / 1e9}
    conv_input = a.view(-1, 1, 1, k).permute(0, 3, 1, 2)
    row["cudnn_conv_us"] = round(device_time_ms(lambda: torch.nn.functional.conv2d(conv_input, w.view(n, k, 1, 1))) * 1e3, 2)
    kernels: dict[str, float | str] = {}

    def run(tag, fn):
        kernels[tag] = checked_kernel_us(fn, o, want, 0.05)

    for bm, bn, bk, warps, stages in TRITON_TILES if "triton" in kinds else ():
        bn, bk = min(bn, n), min(bk, k)
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        descs = (
            TritonDescriptor.from_tensor(a, [bm, bk]),
            TritonDescriptor.from_tensor(w, [bn, bk]),
            b,
            TritonDescriptor.from_tensor(r, [bm, bn]),
            TritonDescriptor.from_tensor(o, [bm, bn]),
        )
        run(
            f"triton_{bm}x{bn}x{bk}_w{warps}s{stages}",
            lambda descs=descs, tiles=tiles, bm=bm, bn=bn, bk=bk, warps=warps, stages=stages: tma_tiles[(tiles,)](
                *descs, m, n, k, bm, bn, bk, 8, num_warps=warps, num_stages=stages
            ),
        )
    for bm, bn, bk, warps, stages in CONFIGS if "gluon" in kinds else ():
        bn, bk = min(bn, n), min(bk, k)
        tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
        ad, wd, rd, od = _descriptors(a, w, r, o, bm, bn, bk)
        for per_sm in (1, 2):
            programs = min(tiles, sms * per_sm)
            run(
                f"gluon{per_sm}_{bm}x{bn}x{bk}_w{warps}s{stages}",
                lambda ad=ad, wd=wd, rd=rd, od=od, programs=programs, warps=warps, stages=stages: expansion_persistent[
                    (programs,)
                ](ad, wd, rd, od, b, n, 8, stages, num_warps=warps),
            )
        if (bm, bn, bk, warps, stages) == CONFIGS[0]:
            programs = min(tiles, sms)
            bare = expansion_persistent[(programs,)]
            descs = (ad, wd, rd, od)
            row["gemm_only_us"] = round(
                device_time_ms(
                    lambda bare=bare, descs=descs, s=stages, w=warps: bare(*descs, b, n, 8, s, num_warps=w, RESIDUAL=False)
                )
                * 1e3,
                2,
            )
    for bm, bn, bk, _warps, stages in PINGPONG_CONFIGS if "pingpong" in kinds else ():
        bn, bk = min(bn, n), min(bk, k)
        programs = min(triton.cdiv(m, bm) * triton.cdiv(n, bn), sms)
        ad, wd, rd, od = _descriptors(a, w, r, o, bm, bn, bk)
        run(
            f"pingpong_{bm}x{bn}x{bk}_s{stages}",
            lambda ad=ad, wd=wd, rd=rd, od=od, programs=programs, stages=stages: expansion_pingpong[(programs,)](
                ad, wd, rd, od, b, n, 8, stages, num_warps=4, maxnreg=PINGPONG_MAXNREG, CONSUMER_REGS=regs[0], LOADER_REGS=regs[1]
            ),
        )
    row["kernels"] = kernels
    for prefix in ("triton", "gluon", "pingpong"):
        timed = [(v, tag) for tag, v in kernels.items() if tag.startswith(prefix) and isinstance(v, float)]
        row[f"best_{prefix}"] = min(timed) if timed else None
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--kernels", default="triton,gluon,pingpong")
    ap.add_argument("--regs", default="224,40", help="the warp-specialized kernel's consumer and loader registers")
    ap.add_argument("--out", default="gluon-gemm.json")
    ap.add_argument("--summed", default="", help="SUMMED_SHAPES to probe (dnnc's kernel against summed_pingpong)")
    ap.add_argument("--compile-only", action="store_true", help="compile every config for sm_90, no GPU needed")
    args = ap.parse_args()
    if args.compile_only:
        printed_builds(compile_only)
        return
    sms, out = gpu_run()
    for name in [s for s in args.summed.split(",") if s]:
        out[name] = row = probe_summed(*SUMMED_SHAPES[name], sms)
        print(name, {k: v for k, v in row.items() if k not in ("dnnc", "gluon")}, flush=True)
        kept(out, args.out)
    for name in [s for s in args.shapes.split(",") if s]:
        regs = tuple(int(x) for x in args.regs.split(","))
        out[name] = row = probe(*SHAPES[name], sms, tuple(args.kernels.split(",")), regs)
        print(name, {k: v for k, v in row.items() if k != "kernels"}, flush=True)
        kept(out, args.out)


if __name__ == "__main__":
    main()
