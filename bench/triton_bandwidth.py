"""Achieved memory bandwidth of dnnc's generated Triton kernels on one GPU, against
the GPU's copy bandwidth and against torch.compile's kernels for the same ops.

    python bench/triton_bandwidth.py [--elements 67108864] [--dtypes f16,f32] [--out DIR]

Ops on 64M-element inputs (a [16384, 4096] matrix): an elementwise chain
(``gelu(x * 0.5 + 1)``), a sum over the last dim, softmax and layer_norm over the
last dim. Bytes moved are the ideal minimum (every input read once, every output
written once). Each result is checked against PyTorch eager before timing; times are
CUDA events around 10 back-to-back launches, after warm-up, median of 25. Prints a
table and writes JSON to bench/results/triton-bandwidth-<date>.json (and $OUT if set).
Goal: >= 80% of copy bandwidth.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import copy_bandwidth_gbs, median_ms
from dnnc.backends.triton import TritonFuse, compile_group
from dnnc.ir import tcp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.ir.text import parse_ir
from dnnc.numerics import mismatch
from dnnc.pipeline import run_passes

COLS = 4096


def _ir(op: str, rows: int, t: str) -> str:
    x = f"tensor<{rows}x{COLS}x{t}>"
    body = {
        "elementwise": f"""%h = tcp.constant {{value = 0.5 : f64}} : {x}
  %o = tcp.constant {{value = 1.0 : f64}} : {x}
  %m = tcp.mul %x, %h : {x}
  %a = tcp.add %m, %o : {x}
  %y = tcp.gelu %a {{approximate = "none"}} : {x}""",
        "reduce_sum": f"%y = tcp.reduce_sum %x {{axes = array<i64: 1>, keepdim = false}} : {x} -> tensor<{rows}x{t}>",
        "softmax": f"%y = tcp.softmax %x {{axis = 1 : i64}} : {x}",
        "layer_norm": f"%y = tcp.layer_norm %x, %w, %b {{axis = 1 : i64, epsilon = 1.0e-05 : f64}} : {x}, tensor<{COLS}x{t}>",
    }[op]
    out = f"tensor<{rows}x{t}>" if op == "reduce_sum" else x
    args = f"%x: {x}" + (f", %w: tensor<{COLS}x{t}>, %b: tensor<{COLS}x{t}>" if op == "layer_norm" else "")
    return f"func.func @forward({args}) -> {out} {{\n  {body}\n  func.return %y : {out}\n}}"


def _torch_fn(op: str) -> Callable[..., torch.Tensor]:
    return {
        "elementwise": lambda x: F.gelu(x * 0.5 + 1.0),
        "reduce_sum": lambda x: x.sum(dim=1),
        "softmax": lambda x: torch.softmax(x, dim=1),
        "layer_norm": lambda x, w, b: F.layer_norm(x, (COLS,), w, b, 1e-5),
    }[op]


def bench_op(op: str, dtype: torch.dtype, rows: int, copy_gbs: float) -> dict[str, Any]:
    t = {torch.float16: "f16", torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
    program = Program(parse_ir(_ir(op, rows, t)), ParamStore())
    run_passes(program, [TritonFuse()])
    groups = [g for g in program.entry.body.walk() if isinstance(g, tcp.IsolatedGroupOp)]
    assert len(groups) == 1, f"{op}: expected one kernel, got {len(groups)}"
    kernel = compile_group(groups[0], torch.device("cuda"))
    x = torch.randn(rows, COLS, device="cuda", dtype=dtype)
    inputs = [x] + (
        [torch.randn(COLS, device="cuda", dtype=dtype), torch.randn(COLS, device="cuda", dtype=dtype)]
        if op == "layer_norm"
        else []
    )
    eager = _torch_fn(op)(*inputs)
    out = torch.empty_like(eager)
    kernel.launch(inputs, [out])
    problem = mismatch(out.float(), eager.float(), dtype)
    if problem:
        raise AssertionError(f"dnnc {op} {t}: {problem}")
    compiled = torch.compile(_torch_fn(op), dynamic=False)
    problem = mismatch(compiled(*inputs).float(), eager.float(), dtype)
    if problem:
        raise AssertionError(f"torch.compile {op} {t}: {problem}")
    n_bytes = sum(a.numel() * a.element_size() for a in inputs) + out.numel() * out.element_size()
    ms_dnnc = median_ms(lambda: kernel.launch(inputs, [out]))
    ms_inductor = median_ms(lambda: compiled(*inputs))
    gbs_dnnc, gbs_inductor = n_bytes / ms_dnnc / 1e6, n_bytes / ms_inductor / 1e6
    return {
        "op": op,
        "dtype": t,
        "shape": [rows, COLS],
        "bytes": n_bytes,
        "dnnc_ms": round(ms_dnnc, 4),
        "dnnc_gbs": round(gbs_dnnc, 1),
        "dnnc_pct_copy": round(100 * gbs_dnnc / copy_gbs, 1),
        "torch_compile_ms": round(ms_inductor, 4),
        "torch_compile_gbs": round(gbs_inductor, 1),
        "dnnc_vs_torch_compile": round(ms_inductor / ms_dnnc, 3),
        "config": kernel.source.text.split("@triton.jit")[0].strip().splitlines()[-3:],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--elements", type=int, default=64 * 1024 * 1024)
    parser.add_argument("--dtypes", default="f16,f32")
    parser.add_argument("--ops", default="elementwise,reduce_sum,softmax,layer_norm")
    parser.add_argument("--out", default=None, help="extra directory for the JSON (default: $OUT if set)")
    args = parser.parse_args()
    import triton

    rows = args.elements // COLS
    copy_gbs = copy_bandwidth_gbs()
    props = torch.cuda.get_device_properties(0)
    results = []
    print(f"{props.name}: copy bandwidth {copy_gbs:.0f} GB/s")
    print(f"{'op':<12} {'dtype':<5} {'dnnc GB/s':>10} {'% copy':>7} {'t.compile GB/s':>15} {'dnnc/t.compile':>15}")
    for t in args.dtypes.split(","):
        dtype = {"f16": torch.float16, "f32": torch.float32, "bf16": torch.bfloat16}[t]
        for op in args.ops.split(","):
            r = bench_op(op, dtype, rows, copy_gbs)
            results.append(r)
            print(
                f"{op:<12} {t:<5} {r['dnnc_gbs']:>10.0f} {r['dnnc_pct_copy']:>6.1f}% {r['torch_compile_gbs']:>15.0f} "
                f"{r['dnnc_vs_torch_compile']:>14.2f}x"
            )
    now = dt.datetime.now(dt.UTC)
    report = {
        "date": now.isoformat(timespec="seconds"),
        "device": props.name,
        "sm": f"{props.major}{props.minor}",
        "torch": torch.__version__,
        "triton": triton.__version__,
        "copy_gbs": round(copy_gbs, 1),
        "elements": rows * COLS,
        "method": "CUDA events, 10 back-to-back launches per sample, 5 warm-up, median of 25; ideal bytes",
        "results": results,
    }
    name = f"triton-bandwidth-{now.strftime('%Y%m%d-%H%M%S')}.json"
    targets = [Path(__file__).resolve().parent / "results"]
    extra = args.out or os.environ.get("OUT")
    if extra:
        targets.append(Path(extra))
    for directory in targets:
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {directory / name}")


if __name__ == "__main__":
    main()
