"""Every Triton config ``configs.candidates`` offers for a few products with few output
tiles and a long K (ResNet-50's batch-1 stage-3 and stage-4 3x3 convolutions with bias
and ReLU, read and stored channels-last, and its batch-1 classifier), timed alone as the
generated kernels run (``launch.TritonKernel``), each checked against the reference
first, beside torch's cuDNN convolution / cuBLAS product of the same shape (no
epilogue): what split-K configs (``SPLIT_K``) buy where they apply, and the 3x3
convolutions with their weight as the model stores it (OIHW) and as
``triton-conv-weights`` stores it (OHWI).

    python bench/split_k_probe.py [--out DIR]     # writes DIR/split-k-probe.json (default /tmp)
    python bench/split_k_probe.py --set resnet-large [--out DIR]    # DIR/conv-probe.json
    python bench/split_k_probe.py --set serving-split [--out DIR]   # DIR/conv-probe.json
    python bench/split_k_probe.py --set split-grid [--out DIR]      # DIR/conv-probe.json
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment
from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse
from dnnc.backends.triton.configs import Config, _tile, _unique, candidates
from dnnc.backends.triton.conv_weights import TritonConvWeights
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel, capability_of
from dnnc.backends.triton.skeleton import GroupInfo, KernelSource, product_sizes
from dnnc.ir import tcp
from dnnc.ir.attrs import ints
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.pipeline import run_passes
from dnnc.timing import device_time_ms

CONV = """func.func @forward(%x: tensor<{n}x{h}x{h}x{c}x{t}>) -> tensor<{n}x{ho}x{ho}x{o}x{t}> {{
  %w = tcp.param @w : tensor<{o}x{c}x{k}x{k}x{t}>
  %b = tcp.param @b : tensor<1x{o}x1x1x{t}>
  %t = tcp.transpose %x {{dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>}} : tensor<{n}x{h}x{h}x{c}x{t}> -> tensor<{n}x{c}x{h}x{h}x{t}>
  %c = tcp.conv2d %t, %w {{dnnc.part = 0 : i64, stride = array<i64: {s}, {s}>, padding = array<i64: {p}, {p}, {p}, {p}>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<{n}x{c}x{h}x{h}x{t}>, tensor<{o}x{c}x{k}x{k}x{t}>) -> tensor<{n}x{o}x{ho}x{ho}x{t}>
  %bb = tcp.broadcast %b {{dnnc.part = 0 : i64}} : tensor<1x{o}x1x1x{t}> to tensor<{n}x{o}x{ho}x{ho}x{t}>
  %a = tcp.add %c, %bb {{dnnc.part = 0 : i64}} : tensor<{n}x{o}x{ho}x{ho}x{t}>
  %r = tcp.clamp %a {{dnnc.part = 0 : i64, min = 0.0 : f64}} : tensor<{n}x{o}x{ho}x{ho}x{t}>
  %y = tcp.transpose %r {{dnnc.part = 0 : i64, permutation = array<i64: 0, 2, 3, 1>}} : tensor<{n}x{o}x{ho}x{ho}x{t}> -> tensor<{n}x{ho}x{ho}x{o}x{t}>
  func.return %y : tensor<{n}x{ho}x{ho}x{o}x{t}>
}}"""
"""A convolution + bias + ReLU between channels-last neighbours, as a partitioned
Triton group (``dnnc.part``) whose weight is a parameter."""
SUMMED = """func.func @forward(%y: tensor<{n}x{ho}x{ho}x{c1}x{t}>, %x: tensor<{n}x{h}x{h}x{c2}x{t}>) -> tensor<{n}x{ho}x{ho}x{o}x{t}> {{
  %w1 = tcp.param @w1 : tensor<{o}x{c1}x1x1x{t}>
  %w2 = tcp.param @w2 : tensor<{o}x{c2}x1x1x{t}>
  %b1 = tcp.param @b1 : tensor<1x1x1x{o}x{t}>
  %b2 = tcp.param @b2 : tensor<1x1x1x{o}x{t}>
  %yt = tcp.transpose %y {{permutation = array<i64: 0, 3, 1, 2>}} : tensor<{n}x{ho}x{ho}x{c1}x{t}> -> tensor<{n}x{c1}x{ho}x{ho}x{t}>
  %c1 = tcp.conv2d %yt, %w1 {{stride = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<{n}x{c1}x{ho}x{ho}x{t}>, tensor<{o}x{c1}x1x1x{t}>) -> tensor<{n}x{o}x{ho}x{ho}x{t}>
  %t1 = tcp.transpose %c1 {{permutation = array<i64: 0, 2, 3, 1>}} : tensor<{n}x{o}x{ho}x{ho}x{t}> -> tensor<{n}x{ho}x{ho}x{o}x{t}>
  %bb1 = tcp.broadcast %b1 : tensor<1x1x1x{o}x{t}> to tensor<{n}x{ho}x{ho}x{o}x{t}>
  %a1 = tcp.add %t1, %bb1 : tensor<{n}x{ho}x{ho}x{o}x{t}>
  %xt = tcp.transpose %x {{permutation = array<i64: 0, 3, 1, 2>}} : tensor<{n}x{h}x{h}x{c2}x{t}> -> tensor<{n}x{c2}x{h}x{h}x{t}>
  %c2 = tcp.conv2d %xt, %w2 {{stride = array<i64: {s}, {s}>, padding = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<{n}x{c2}x{h}x{h}x{t}>, tensor<{o}x{c2}x1x1x{t}>) -> tensor<{n}x{o}x{ho}x{ho}x{t}>
  %t2 = tcp.transpose %c2 {{permutation = array<i64: 0, 2, 3, 1>}} : tensor<{n}x{o}x{ho}x{ho}x{t}> -> tensor<{n}x{ho}x{ho}x{o}x{t}>
  %bb2 = tcp.broadcast %b2 : tensor<1x1x1x{o}x{t}> to tensor<{n}x{ho}x{ho}x{o}x{t}>
  %a2 = tcp.add %t2, %bb2 : tensor<{n}x{ho}x{ho}x{o}x{t}>
  %sum = tcp.add %a1, %a2 : tensor<{n}x{ho}x{ho}x{o}x{t}>
  %r = tcp.clamp %sum {{min = 0.0 : f64}} : tensor<{n}x{ho}x{ho}x{o}x{t}>
  func.return %r : tensor<{n}x{ho}x{ho}x{o}x{t}>
}}"""
"""A bottleneck block's end where it changes width: its 1x1 expansion of ``y`` and the
strided 1x1 downsample of its input ``x``, each with its bias, summed and rectified, all
channels-last: one Triton kernel of two summed products (``ops.summed_products``)."""
GEMV = """func.func @forward(%x: tensor<1x2048xf16>) -> tensor<1x1000xf16> {
  %w = tcp.param @w : tensor<2048x1000xf16>
  %m = tcp.matmul %x, %w {dnnc.part = 0 : i64} : (tensor<1x2048xf16>, tensor<2048x1000xf16>) -> tensor<1x1000xf16>
  func.return %m : tensor<1x1000xf16>
}"""


def summed(h: int, c2: int, o: int, n: int, stride: int, dtype: str = "f16") -> str:
    """``SUMMED`` for a block on an ``n x h x h x c2`` input, ``o`` channels out (the
    expansion reads ``o / 4`` channels)."""
    return SUMMED.format(n=n, h=h, ho=h // stride, c1=o // 4, c2=c2, o=o, s=stride, t=dtype)


def conv(h: int, c: int, o: int, n: int = 1, k: int = 3, stride: int = 1, pad: int = 1, dtype: str = "f16") -> str:
    """``CONV`` on an ``n x h x h x c`` input, ``o`` channels out, a ``k x k`` window."""
    return CONV.format(n=n, h=h, c=c, o=o, k=k, s=stride, p=pad, ho=(h + 2 * pad - k) // stride + 1, t=dtype)


SHAPE_SETS = {
    "split-k": {"stage4-3x3-b1": conv(7, 512, 512), "stage3-3x3-b1": conv(14, 256, 256), "classifier-b1": GEMV},
    "split-grid": {
        "stage4-3x3-b1": conv(7, 512, 512),
        "stage3-3x3-b1": conv(14, 256, 256),
        "stage2-3x3-b1": conv(28, 128, 128),
    },
    "resnet-large": {
        **{f"stem-7x7-c4-b{n}": conv(224, 4, 64, n, k=7, stride=2, pad=3) for n in (1, 32, 128)},
        **{
            f"stage{i}-3x3-b{n}": conv(h, c, c, n)
            for n in (32, 128)
            for i, (h, c) in enumerate(((56, 64), (28, 128), (14, 256), (7, 512)), start=1)
        },
    },
    "serving-split": {
        **{
            f"stage{i}-3x3-b32": conv(h, c, c, 32) for i, (h, c) in enumerate(((56, 64), (28, 128), (14, 256), (7, 512)), start=1)
        },
        "stage3-reduce-b32": conv(14, 1024, 256, 32, k=1, pad=0),
        "stage4-reduce-b32": conv(7, 2048, 512, 32, k=1, pad=0),
        "stage4-3x3-b128": conv(7, 512, 512, 128),
    },
    "summed": {
        f"stage{i}-summed-b{n}": summed(h, c2, o, n, stride)
        for n in (32, 128)
        for i, (h, c2, o, stride) in enumerate(
            ((56, 64, 256, 1), (56, 256, 512, 2), (28, 512, 1024, 2), (14, 1024, 2048, 2)), start=1
        )
    },
}
"""``split-k``: ResNet-50's batch-1 products with few tiles and a long K; ``resnet-large``:
its stem (on the 4 channels the input is padded to) and its stride-1 3x3 convolutions at
the serving batches, where the products are long and FLOPs or bytes bound them;
``serving-split``: batch-32 products of a few waves of 128 x 128 tiles or less (the 3x3
convolutions and stage 3's and 4's reductions), also timed with K split;
``summed``: the four blocks of ResNet-50 that change width, their expansion and
downsample as one kernel, at the serving batches; ``split-grid``: the batch-1 3x3
convolutions with a grid of split-K tiles beyond the candidates (``grid_configs``)."""
EXTRA_CONFIGS = [
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 256, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 4},
    {"BLOCK_M": 256, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 8, "num_stages": 4},
]
"""Configs beyond ``configs.candidates`` timed for the ``resnet-large`` and ``serving-split``
sets (blocks cut to the product's sizes by ``_tile`` as the candidates are): larger tiles
and deeper pipelines."""
SPLIT_BASES = [(128, 128, 64, 4, 3), (128, 128, 64, 8, 3), (64, 128, 64, 4, 3)]
SPLITS = (2, 3, 4)
FEW_WAVES = 2 * 132
"""``serving-split`` times each of ``SPLIT_BASES`` with K cut into each of ``SPLITS``
slices where the product has at most this many 128 x 128 tiles (two waves of an H200)."""


def split_configs(m: int, n: int, k: int) -> list[dict]:
    """``SPLIT_BASES`` x ``SPLITS`` for a product of few 128 x 128 tiles, each slice at
    least ``BLOCK_K`` long; none for a larger one."""
    if math.ceil(m / 128) * math.ceil(n / 128) > FEW_WAVES:
        return []
    return [
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": w, "num_stages": st, "SPLIT_K": s}
        for bm, bn, bk, w, st in SPLIT_BASES
        for s in SPLITS
        if k // s >= bk
    ]


GRID_TILES = [(bm, bn, bk) for bm in (16, 32, 64) for bn in (64, 128) for bk in (64, 128)]
GRID_SPLITS = (4, 8, 16, 32)


def grid_configs(m: int, n: int, k: int) -> list[dict]:
    """``GRID_TILES`` x ``GRID_SPLITS`` (four warps, three stages), each slice at least
    ``BLOCK_K`` long: smaller row tiles than the candidates' 64 for a product of 49 or 196
    rows, so more programs share K's slices and each adds up fewer partials."""
    return [
        {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_warps": 4, "num_stages": 3, "SPLIT_K": s}
        for bm, bn, bk in GRID_TILES
        for s in GRID_SPLITS
        if k // s >= bk
    ]


def _program(name: str, ir: str) -> Program:
    program = Program(parse_ir(ir, name), ParamStore())
    rng = torch.Generator().manual_seed(0)
    for op in program.param_ops():
        shape = shape_of(op.result)
        program.params.add(op.param_name, (torch.randn(shape, generator=rng) / math.sqrt(math.prod(shape[1:]))).half())
    return program


def prepared(name: str, ir: str, device: torch.device, weights: str = "oihw") -> tuple[tcp.IsolatedGroupOp, list, torch.Tensor]:
    """The program's one Triton group (its summed one where there are more), its operands on
    ``device`` and the reference output. ``weights``: "oihw" (the weight as the model stores
    it) or "ohwi" (``triton-conv-weights``)."""
    program = _program(name, ir)
    rng = torch.Generator().manual_seed(1)
    inputs = [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]
    (want,) = ReferenceExecutor(program).run(inputs)
    run_passes(program, [*([TritonConvWeights()] if weights == "ohwi" else []), TritonFuse()])
    groups = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    (group,) = [g for g in groups if GroupInfo.of(g).summed is not None] if len(groups) > 1 else groups
    values = dict(zip(program.entry.body.block.args, (x.to(device) for x in inputs)))
    values |= {op.result: program.params[op.param_name].to(device) for op in program.param_ops()}
    return group, [values[v] for v in group.operands], want


def timed(
    group: tcp.IsolatedGroupOp, source: KernelSource, config: Config, ins: list, want: torch.Tensor, device: torch.device
) -> dict:
    """``source`` built, checked against ``want`` and timed: ``ms`` and ``rel_error``, or
    ``status`` where it does not build (reported, not fatal)."""
    out = torch.empty(shape_of(group.outputs[0]), dtype=torch_dtype(element_of(group.outputs[0])), device=device)
    try:
        kernel = TritonKernel(source, device, capability_of(device), config)
        kernel.launch(ins, [out])
        error = float((out.float().cpu() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-6))
        return {"ms": device_time_ms(lambda: kernel.launch(ins, [out])), "rel_error": error}
    except Exception as e:
        return {"status": f"failed: {type(e).__name__}: {str(e)[:200]}"}


def probe(
    name: str, ir: str, weights: str, device: torch.device, extra: list[Config] = (), split: bool = False, grid: bool = False
) -> dict:
    """``weights``: as ``prepared`` takes it; ``extra``: configs timed after the candidates;
    ``split``: ``split_configs`` too; ``grid``: ``grid_configs`` too."""
    group, ins, want = prepared(name, ir, device, weights)
    info = GroupInfo.of(group)
    rows = []
    m, n, k, _ = product_sizes(info.anchor)
    offered = candidates(info, capability_of(device))
    extra = [*extra, *(split_configs(m, n, k) if split else []), *(grid_configs(m, n, k) if grid else [])]
    more = [
        {
            **_tile(c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["num_warps"], c["num_stages"], (m, n, k)),
            **({"SPLIT_K": c["SPLIT_K"]} if "SPLIT_K" in c else {}),
        }
        for c in extra
    ]
    for config in _unique(offered + more):
        rows.append({"config": config, **timed(group, generate(group, config, info=info), config, ins, want, device)})
        print(f"{name:14s} {weights} {json.dumps(config):105s} {rows[-1].get('ms', rows[-1].get('status'))}", flush=True)
    return {"shape": name, "weights": weights, "configs": rows}


def library_ms(name: str, ir: str, device: torch.device) -> float:
    """torch's cuDNN convolution (channels-last) or cuBLAS product of the same shape, no epilogue."""
    program = _program(name, ir)
    x = torch.randn(shape_of(program.input_types[0]), device=device).half()
    w = program.params["w"].to(device)
    if name.startswith("classifier"):
        return device_time_ms(lambda: torch.mm(x, w))
    (op,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.Conv2dOp)]
    stride, padding = ints(op.stride), ints(op.padding)[::2]
    x, w = x.permute(0, 3, 1, 2), w.contiguous(memory_format=torch.channels_last)
    return device_time_ms(lambda: torch.nn.functional.conv2d(x, w, stride=stride, padding=padding))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    parser.add_argument("--set", choices=sorted(SHAPE_SETS), default="split-k", help="which products (SHAPE_SETS)")
    args = parser.parse_args()
    device = torch.device("cuda")
    large = args.set in ("resnet-large", "serving-split")
    out = args.out / f"{'split-k' if args.set == 'split-k' else 'conv'}-probe.json"
    args.out.mkdir(parents=True, exist_ok=True)
    grid = args.set == "split-grid"
    results = []
    for name, ir in SHAPE_SETS[args.set].items():
        for weights in ("ohwi",) if large or grid else ("oihw", "ohwi") if "3x3" in name else ("oihw",):
            results.append(probe(name, ir, weights, device, EXTRA_CONFIGS if large else [], args.set == "serving-split", grid))
        results[-1]["library_ms"] = library_ms(name, ir, device)
        print(f"{name:14s} torch (cuDNN / cuBLAS, no epilogue) {results[-1]['library_ms']:.4f}", flush=True)
        out.write_text(json.dumps({"environment": environment(), "results": results}, indent=1) + "\n")  # each shape as it ends


if __name__ == "__main__":
    main()
