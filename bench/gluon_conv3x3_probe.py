"""ResNet's stride-1 3x3 convolutions (+ bias + ReLU, NHWC) as a Gluon implicit GEMM whose
operand tiles are patches of the image read through 4-D TMA boxes, against cuDNN.

Why: at batch 32 ResNet-50's sixteen 3x3 convolutions take 297 of its 854 us on an H200
(cuDNN's eng41 at 316-440 TFLOP/s, against 580-680 at batch 128: one or two waves of
output tiles on 132 SMs; BENCHMARKS.md, "cuDNN's plans past the eight"), and the stage-1
one (56 x 56, 64 -> 64) stays at 440 TFLOP/s at batch 128 too.

The kernel: a tile is a patch of BH x BW output pixels of one image by BN output channels.
Its K loop runs over the nine taps and the input channels 64 at a time; tap (ky, kx)'s
operand is the patch's input shifted by (ky - 1, kx - 1), one TMA box [1, BH, BW, 64] of
the NHWC input at those coordinates: TMA fills what lies past the image's edges (the
padding, negative coordinates included) with zeros, so no masks and no gathers. The box
lands in shared memory as BH * BW rows of 128 bytes, the same bytes and swizzle as the
[BH * BW, 64] matrix wgmma reads (the buffer is one, viewed both ways). The weights are
the O x 9C matrix of the OHWI kernel, the output leaves through a 4-D TMA box of the NHWC
result (rows past the image's edge are not written). Persistent programs, one an SM,
the ping-pong structure of ``dnnc/backends/triton/pingpong.py``: a loader warpgroup fills a
ring of operand stages, two consumer warpgroups take tiles in turn, so one's epilogue runs
beside the other's product. A patch rounds an image's side up to BH / BW: 56 x 56 in
8 x 16 patches computes 56 x 64 (12.5% more), 14 x 14 in 8 x 16 computes 16 x 16 (31%).

First run (H200, Triton 3.6, ``bench/results/gluon-conv3x3-2026-11-29-h200*.json``): at
batch 32 4-9% faster than dnnc's tuned cuDNN plan on the 56x56, 28x28 and 14x14 maps
(22.7 / 16.7 / 15.9 us against 23.8 / 17.5 / 17.4), slower on 7x7 and at batch 128 (the
patches' rounding: 31% more work at 14x14). TMA's im2col mode would remove the rounding;
Triton 3.9's Gluon has it, 3.6 does not.

Every kernel's result is checked against float32 first, then timed as a CUDA-graph replay
(``dnnc.timing.device_time_ms``), beside torch's cuDNN convolution (channels-last, fp16,
bias, ReLU) in the same run. Run on the GPU: ``python bench/gluon_conv3x3_probe.py``
(writes ``$OUT/gluon-conv3x3.json``); ``--compile-only`` builds every config for sm_90
without a GPU and prints what each kernel's PTX holds or why it failed (Triton 3.6).
"""

from __future__ import annotations

import argparse

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from bench.gluon_common import built_summary, gpu_run, kept, printed_builds
from bench.gluon_common import tma_load as _tma_load
from bench.gluon_common import tma_store as _tma_store
from bench.gluon_common import viewed as _viewed

BK = 64
"""Input channels a K step: a box's row is 128 bytes, the 128-byte swizzle's width."""
CONSUMER_REGS = gl.constexpr(224)
LOADER_REGS = gl.constexpr(56)
MAXNREG = 168

SHAPES = {
    "s1": (56, 64, 64),
    "s2": (28, 128, 128),
    "s3": (14, 256, 256),
    "s4": (7, 512, 512),
}
"""ResNet-50's stride-1 3x3 convolutions: (side, input channels, output channels)."""
CONFIGS = {
    "s1": [(8, 16, 64, 4), (4, 32, 64, 4), (2, 64, 64, 4), (8, 16, 64, 6)],
    "s2": [(4, 32, 128, 4), (4, 32, 64, 4), (8, 16, 128, 4)],
    "s3": [(8, 16, 128, 4), (8, 16, 64, 4)],
    "s4": [(8, 8, 128, 4), (8, 8, 64, 4)],
}
"""(BH, BW, BN, operand stages) a shape is tried with."""
CUDNN_TUNED_US = {
    ("s1", 32): 23.8,
    ("s2", 32): 17.5,
    ("s3", 32): 17.4,
    ("s4", 32): 16.8,
    ("s1", 128): 67.4,
    ("s2", 128): 47.0,
    ("s3", 128): 43.8,
    ("s4", 128): 45.4,
}
"""dnnc's tuned cuDNN plan for each (with bias and ReLU), H200, 2026-11-29
(``cudnn-plan-probe-sweep-b{32,128}-2026-11-29-h200.json``)."""
BATCHES = (32, 128)


@gluon.jit
def _tile_origin(t, sizes, BH: gl.constexpr, BW: gl.constexpr, BN: gl.constexpr):
    """Tile ``t``'s image, first output row and column and first output channel; the output
    channel tiles of one patch are neighbours (they read the same input boxes)."""
    H, W, _, OC = sizes
    PN = gl.cdiv(OC, BN)
    PX = gl.cdiv(W, BW)
    PY = gl.cdiv(H, BH)
    pn = t % PN
    rest = t // PN
    px = rest % PX
    rest = rest // PX
    return rest // PY, (rest % PY) * BH, px * BW, pn * BN


@gluon.jit
def _loader(x_desc, w_desc, o_desc, bias, bufs, bars, pid, programs, tiles, sizes):
    # block sizes from the descriptors and buffers: the partitions take their arguments as values
    BH: gl.constexpr = x_desc.block_type.shape[1]
    BW: gl.constexpr = x_desc.block_type.shape[2]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    a_bufs, w_bufs, _ = bufs
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    C = sizes[2]
    CB = C // 64
    KS = 9 * CB
    ready, empty, _ = bars
    dtype: gl.constexpr = x_desc.dtype
    box: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4)
    for j in range(tiles):
        n, y0, x0, col = _tile_origin(pid + j * programs, sizes, BH, BW, BN)
        for k in range(KS):
            s = j * KS + k
            slot = s % STAGES
            mbarrier.wait(empty.index(slot), ((s // STAGES) & 1) ^ 1)
            tap = k // CB
            c0 = (k % CB) * 64
            mbarrier.expect(ready.index(slot), x_desc.block_type.nbytes + w_desc.block_type.nbytes)
            patch = _viewed(a_bufs.index(slot), dtype, [1, BH, BW, 64], box)
            _tma_load(x_desc, [n, y0 + tap // 3 - 1, x0 + tap % 3 - 1, c0], ready.index(slot), patch)
            _tma_load(w_desc, [col, tap * C + c0], ready.index(slot), w_bufs.index(slot))


@gluon.jit
def _consume(x_desc, w_desc, o_desc, bias, bufs, bars, pid, programs, tiles, sizes, ME: gl.constexpr):
    BH: gl.constexpr = x_desc.block_type.shape[1]
    BW: gl.constexpr = x_desc.block_type.shape[2]
    BN: gl.constexpr = w_desc.block_type.shape[0]
    BM: gl.constexpr = BH * BW
    a_bufs, w_bufs, c_bufs = bufs
    STAGES: gl.constexpr = a_bufs.type.shape[0]
    OC = sizes[3]
    KS = 9 * (sizes[2] // 64)
    ready, empty, turn = bars
    dtype: gl.constexpr = x_desc.dtype
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1], instr_shape=[16, BN, 16])
    box: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4)
    buf = c_bufs.index(ME)
    for j in range(ME, tiles, 2):
        n, y0, x0, col = _tile_origin(pid + j * programs, sizes, BH, BW, BN)
        acc = gl.zeros((BM, BN), gl.float32, acc_layout)
        mbarrier.wait(turn.index(ME), ((j // 2) & 1) ^ (1 - ME))
        for k in range(KS):
            s = j * KS + k
            slot = s % STAGES
            mbarrier.wait(ready.index(slot), (s // STAGES) & 1)
            acc = warpgroup_mma(a_bufs.index(slot), w_bufs.index(slot).permute((1, 0)), acc, use_acc=k > 0, is_async=True)
            acc = warpgroup_mma_wait(1, deps=(acc,))
            mbarrier.arrive(empty.index((s + STAGES - 1) % STAGES), pred=k > 0)
        mbarrier.arrive(turn.index(1 - ME))
        acc = warpgroup_mma_wait(0, deps=(acc,))
        mbarrier.arrive(empty.index((j * KS + KS - 1) % STAGES))
        channels = col + gl.arange(0, BN, layout=gl.SliceLayout(0, acc_layout))
        b = gl.load(bias + channels, mask=channels < OC, other=0.0).to(gl.float32)
        result = gl.maximum(acc + b[None, :], 0.0).to(dtype)
        tma.store_wait(0)  # this consumer's last tile has left its buffer
        buf.store(result)
        fence_async_shared()
        _tma_store(o_desc, [n, y0, x0, col], _viewed(buf, dtype, [1, BH, BW, BN], box))
    tma.store_wait(0)


@gluon.jit
def _consumer0(x_desc, w_desc, o_desc, bias, bufs, bars, pid, programs, tiles, sizes):
    _consume(x_desc, w_desc, o_desc, bias, bufs, bars, pid, programs, tiles, sizes, 0)


@gluon.jit
def _consumer1(x_desc, w_desc, o_desc, bias, bufs, bars, pid, programs, tiles, sizes):
    _consume(x_desc, w_desc, o_desc, bias, bufs, bars, pid, programs, tiles, sizes, 1)


@gluon.jit
def conv3x3(
    x_desc,
    w_desc,
    o_desc,
    bias,
    TILES,
    H: gl.constexpr,
    W: gl.constexpr,
    C: gl.constexpr,
    OC: gl.constexpr,
    BH: gl.constexpr,
    BW: gl.constexpr,
    BN: gl.constexpr,
    STAGES: gl.constexpr,
):
    """out[n, y, x, o] = relu(sum over (ky, kx, c) of x[n, y + ky - 1, x + kx - 1, c] *
    w[o, ky * 3 C + kx * C + c] + bias[o]); ``x_desc``: the N x H x W x C input in boxes of
    1 x BH x BW x 64; ``w_desc``: the O x 9C weights in boxes of BN x 64; ``o_desc``: the
    N x H x W x O output in boxes of 1 x BH x BW x BN."""
    BM: gl.constexpr = BH * BW
    dtype: gl.constexpr = x_desc.dtype
    matrix: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    out_matrix: gl.constexpr = gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)
    a_bufs = gl.allocate_shared_memory(dtype, [STAGES, BM, 64], matrix)
    w_bufs = gl.allocate_shared_memory(dtype, [STAGES, BN, 64], matrix)
    c_bufs = gl.allocate_shared_memory(dtype, [2, BM, BN], out_matrix)
    ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    turn = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(STAGES):
        mbarrier.init(ready.index(i), count=1)
        mbarrier.init(empty.index(i), count=1)
    for i in gl.static_range(2):
        mbarrier.init(turn.index(i), count=1)
    pid = gl.program_id(0)
    programs = gl.num_programs(0)
    tiles = gl.cdiv(TILES - pid, programs)
    sizes = (H, W, C, OC)
    args = (x_desc, w_desc, o_desc, bias, (a_bufs, w_bufs, c_bufs), (ready, empty, turn), pid, programs, tiles, sizes)
    gl.warp_specialize([(_consumer0, args), (_consumer1, args), (_loader, args)], [4, 4], [CONSUMER_REGS, LOADER_REGS])


def _box_layout():
    return gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=4)


def _matrix_layout():
    return gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)


def tile_count(n: int, side: int, o: int, config: tuple[int, int, int, int]) -> int:
    bh, bw, bn, _ = config
    return n * -(-side // bh) * -(-side // bw) * -(-o // bn)


def compile_only() -> dict[str, dict]:
    """Every config built for sm_90 without a GPU: shared memory and what the PTX holds,
    or the error."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    box, matrix = _box_layout(), _matrix_layout()
    out = {}
    for shape, configs in CONFIGS.items():
        side, c, o = SHAPES[shape]
        for config in configs:
            bh, bw, bn, stages = config
            signature = {
                "x_desc": f"tensordesc<fp16[1, {bh}, {bw}, 64],{box!r}>",
                "w_desc": f"tensordesc<fp16[{bn}, 64],{matrix!r}>",
                "o_desc": f"tensordesc<fp16[1, {bh}, {bw}, {bn}],{box!r}>",
                "bias": "*fp16",
                "TILES": "i32",
                "H": "constexpr",
                "W": "constexpr",
                "C": "constexpr",
                "OC": "constexpr",
                "BH": "constexpr",
                "BW": "constexpr",
                "BN": "constexpr",
                "STAGES": "constexpr",
            }
            values = {"H": side, "W": side, "C": c, "OC": o, "BH": bh, "BW": bw, "BN": bn, "STAGES": stages}
            constexprs = {(list(signature).index(k),): v for k, v in values.items()}
            aligned = {(list(signature).index("bias"),): [["tt.divisibility", 16]]}
            name = _name(shape, config)
            try:
                src = GluonASTSource(conv3x3, signature, constexprs, aligned)
                compiled = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "maxnreg": MAXNREG})
            except Exception as e:
                out[name] = {"built": False, "error": str(e)[-900:]}
                continue
            out[name] = built_summary(compiled)
    return out


def _name(shape: str, config: tuple[int, int, int, int]) -> str:
    bh, bw, bn, stages = config
    return f"{shape}_{bh}x{bw}_n{bn}_s{stages}"


def probe(shape: str, batch: int, sms: int) -> dict:
    import torch
    import torch.nn.functional as F
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    from bench.gpu_timing import checked_kernel_us
    from dnnc.timing import device_time_ms

    side, c, o = SHAPES[shape]
    torch.manual_seed(0)
    x = torch.randn(batch, c, side, side, device="cuda", dtype=torch.float16).contiguous(memory_format=torch.channels_last)
    weight = (torch.randn(o, c, 3, 3, device="cuda") / (9 * c) ** 0.5).to(torch.float16)
    bias = torch.randn(o, device="cuda", dtype=torch.float16)
    want = F.conv2d(x.float(), weight.float(), bias.float(), padding=1).relu().permute(0, 2, 3, 1)
    nhwc = x.permute(0, 2, 3, 1)  # the channels-last memory as N x H x W x C, no copy
    w_matrix = weight.permute(0, 2, 3, 1).reshape(o, 9 * c).contiguous()
    out = torch.empty(batch, side, side, o, device="cuda", dtype=torch.float16)
    gflop = 2 * batch * side * side * o * 9 * c / 1e9
    row: dict = {"shape": shape, "batch": batch, "side": side, "c": c, "o": o, "gflop": round(gflop, 3)}
    weight_cl = weight.contiguous(memory_format=torch.channels_last)
    row["torch_cudnn_us"] = round(device_time_ms(lambda: F.conv2d(x, weight_cl, bias, padding=1).relu_()) * 1e3, 2)
    row["dnnc_cudnn_tuned_us"] = CUDNN_TUNED_US.get((shape, batch))
    box, matrix = _box_layout(), _matrix_layout()
    kernels: dict[str, float | str] = {}
    for config in CONFIGS[shape]:
        bh, bw, bn, _ = config
        x_desc = TensorDescriptor(nhwc, list(nhwc.shape), list(nhwc.stride()), [1, bh, bw, BK], box)
        w_desc = TensorDescriptor(w_matrix, [o, 9 * c], [9 * c, 1], [bn, BK], matrix)
        o_desc = TensorDescriptor(out, list(out.shape), list(out.stride()), [1, bh, bw, bn], box)
        tiles = tile_count(batch, side, o, config)
        programs = min(tiles, sms)

        def run(x_desc=x_desc, w_desc=w_desc, o_desc=o_desc, tiles=tiles, programs=programs, config=config):
            bh, bw, bn, stages = config
            conv3x3[(programs,)](
                x_desc, w_desc, o_desc, bias, tiles, side, side, c, o, bh, bw, bn, stages, num_warps=4, maxnreg=MAXNREG
            )

        tag = _name(shape, config)
        kernels[tag] = checked_kernel_us(run, out, want, 0.02)
        print(batch, tag, kernels[tag], flush=True)
    row["kernels"] = kernels
    timed = [(v, tag) for tag, v in kernels.items() if isinstance(v, float)]
    if timed:
        best, tag = min(timed)
        row["best"] = [best, tag]
        row["best_tflops"] = round(gflop / best * 1e3, 1)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("--out", default="gluon-conv3x3.json")
    ap.add_argument("--compile-only", action="store_true", help="build every config for sm_90, no GPU needed")
    args = ap.parse_args()
    if args.compile_only:
        printed_builds(compile_only)
        return
    sms, found = gpu_run()
    for batch in (int(b) for b in args.batches.split(",")):
        for shape in args.shapes.split(","):
            found[f"{shape}-b{batch}"] = row = probe(shape, batch, sms)
            print(batch, {k: v for k, v in row.items() if k != "kernels"}, flush=True)
            kept(found, args.out)


if __name__ == "__main__":
    main()
