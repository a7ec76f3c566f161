"""Every Triton config ``configs.candidates`` offers for a few products with few output
tiles and a long K (ResNet-50's batch-1 stage-3 and stage-4 3x3 convolutions with bias
and ReLU, read and stored channels-last, and its batch-1 classifier), timed alone as the
generated kernels run (``launch.TritonKernel``), each checked against the reference
first, beside torch's cuDNN convolution / cuBLAS product of the same shape (no
epilogue): what split-K configs (``SPLIT_K``) buy where they apply, and the 3x3
convolutions with their weight as the model stores it (OIHW) and as
``triton-conv-weights`` stores it (OHWI).

    python bench/split_k_probe.py [--out DIR]     # writes DIR/split-k-probe.json (default /tmp)
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
from dnnc.backends.triton.configs import candidates
from dnnc.backends.triton.conv_weights import TritonConvWeights
from dnnc.backends.triton.kernels import generate
from dnnc.backends.triton.launch import TritonKernel, capability_of
from dnnc.backends.triton.skeleton import GroupInfo
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.pipeline import run_passes
from dnnc.timing import device_time_ms

CONV = """func.func @forward(%x: tensor<1x{h}x{h}x{c}xf16>) -> tensor<1x{h}x{h}x{o}xf16> {{
  %w = tcp.param @w : tensor<{o}x{c}x3x3xf16>
  %b = tcp.param @b : tensor<1x{o}x1x1xf16>
  %t = tcp.transpose %x {{dnnc.part = 0 : i64, permutation = array<i64: 0, 3, 1, 2>}} : tensor<1x{h}x{h}x{c}xf16> -> tensor<1x{c}x{h}x{h}xf16>
  %c = tcp.conv2d %t, %w {{dnnc.part = 0 : i64, stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (tensor<1x{c}x{h}x{h}xf16>, tensor<{o}x{c}x3x3xf16>) -> tensor<1x{o}x{h}x{h}xf16>
  %bb = tcp.broadcast %b {{dnnc.part = 0 : i64}} : tensor<1x{o}x1x1xf16> to tensor<1x{o}x{h}x{h}xf16>
  %a = tcp.add %c, %bb {{dnnc.part = 0 : i64}} : tensor<1x{o}x{h}x{h}xf16>
  %r = tcp.clamp %a {{dnnc.part = 0 : i64, min = 0.0 : f64}} : tensor<1x{o}x{h}x{h}xf16>
  %y = tcp.transpose %r {{dnnc.part = 0 : i64, permutation = array<i64: 0, 2, 3, 1>}} : tensor<1x{o}x{h}x{h}xf16> -> tensor<1x{h}x{h}x{o}xf16>
  func.return %y : tensor<1x{h}x{h}x{o}xf16>
}}"""
"""A batch-1 3x3 convolution + bias + ReLU between channels-last neighbours, as a
partitioned Triton group (``dnnc.part``) whose weight is a parameter."""
GEMV = """func.func @forward(%x: tensor<1x2048xf16>) -> tensor<1x1000xf16> {
  %w = tcp.param @w : tensor<2048x1000xf16>
  %m = tcp.matmul %x, %w {dnnc.part = 0 : i64} : (tensor<1x2048xf16>, tensor<2048x1000xf16>) -> tensor<1x1000xf16>
  func.return %m : tensor<1x1000xf16>
}"""


def conv(h: int, c: int, o: int) -> str:
    return CONV.format(h=h, c=c, o=o)


SHAPES = {"stage4-3x3-b1": conv(7, 512, 512), "stage3-3x3-b1": conv(14, 256, 256), "classifier-b1": GEMV}


def _program(name: str, ir: str) -> Program:
    program = Program(parse_ir(ir, name), ParamStore())
    rng = torch.Generator().manual_seed(0)
    for op in program.param_ops():
        shape = shape_of(op.result)
        program.params.add(op.param_name, (torch.randn(shape, generator=rng) / math.sqrt(math.prod(shape[1:]))).half())
    return program


def probe(name: str, ir: str, weights: str, device: torch.device) -> dict:
    """``weights``: "oihw" (the weight as the model stores it) or "ohwi" (``triton-conv-weights``)."""
    program = _program(name, ir)
    rng = torch.Generator().manual_seed(1)
    inputs = [torch.randn(shape_of(t), generator=rng).to(torch_dtype(t.element_type)) for t in program.input_types]
    (want,) = ReferenceExecutor(program).run(inputs)
    run_passes(program, [*([TritonConvWeights()] if weights == "ohwi" else []), TritonFuse()])
    (group,) = [op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp)]
    info = GroupInfo.of(group)
    values = dict(zip(program.entry.body.block.args, (x.to(device) for x in inputs)))
    values |= {op.result: program.params[op.param_name].to(device) for op in program.param_ops()}
    ins = [values[v] for v in group.operands]
    rows = []
    for config in candidates(info, capability_of(device)):
        out = torch.empty(shape_of(group.outputs[0]), dtype=torch_dtype(element_of(group.outputs[0])), device=device)
        try:
            kernel = TritonKernel(generate(group, config, info=info), device, capability_of(device), config)
            kernel.launch(ins, [out])
            error = float((out.float().cpu() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-6))
            ms = device_time_ms(lambda kernel=kernel, out=out: kernel.launch(ins, [out]))
            rows.append({"config": config, "ms": ms, "rel_error": error})
        except Exception as e:  # a config that does not build is reported, not fatal
            rows.append({"config": config, "status": f"failed: {type(e).__name__}: {str(e)[:200]}"})
        print(f"{name:14s} {weights} {json.dumps(config):105s} {rows[-1].get('ms', rows[-1].get('status'))}", flush=True)
    return {"shape": name, "weights": weights, "configs": rows}


def library_ms(name: str, ir: str, device: torch.device) -> float:
    """torch's cuDNN convolution (channels-last) or cuBLAS product of the same shape, no epilogue."""
    program = _program(name, ir)
    x = torch.randn(shape_of(program.input_types[0]), device=device).half()
    w = program.params["w"].to(device)
    if name.startswith("classifier"):
        return device_time_ms(lambda: torch.mm(x, w))
    x, w = x.permute(0, 3, 1, 2), w.contiguous(memory_format=torch.channels_last)
    return device_time_ms(lambda: torch.nn.functional.conv2d(x, w, padding=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("/tmp"))
    args = parser.parse_args()
    device = torch.device("cuda")
    results = []
    for name, ir in SHAPES.items():
        for weights in ("oihw", "ohwi") if "3x3" in name else ("oihw",):
            results.append(probe(name, ir, weights, device))
        results[-1]["library_ms"] = library_ms(name, ir, device)
        print(f"{name:14s} torch (cuDNN / cuBLAS, no epilogue) {results[-1]['library_ms']:.4f}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "split-k-probe.json").write_text(json.dumps({"environment": environment(), "results": results}, indent=1) + "\n")


if __name__ == "__main__":
    main()
