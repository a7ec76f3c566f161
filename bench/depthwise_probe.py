"""One depthwise convolution at a time: PyTorch (NCHW and channels-last) against dnnc's policies.

    python bench/depthwise_probe.py [--shapes 32x96x56,32x384x14] [--kernel 7] [--no-bias]
                                    [--policies auto,cudnn-only,triton-only] [--out DIR]

For each batch x channels x size, a ``Conv2d(c, c, k, groups=c)`` in float16: PyTorch's
time on NCHW and on channels-last tensors, then dnnc's under each policy, with its
output checked against PyTorch's and each step's GPU time inside the program
(``runtime.profile``), so a slow cuDNN plan or Triton kernel shows apart from the
transposes around it. Writes ``depthwise-probe-<date>-<gpu>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment, median_ms, write_record

RESULTS = Path(__file__).with_name("results")


def probe(n: int, c: int, size: int, kernel: int, bias: bool, policies: list[str]) -> dict[str, Any]:
    import dnnc
    from dnnc import knobs
    from dnnc.runtime.profile import random_inputs, step_times_ms

    conv = torch.nn.Conv2d(c, c, kernel, padding=kernel // 2, groups=c, bias=bias).cuda().half().eval()
    last = torch.nn.Conv2d(c, c, kernel, padding=kernel // 2, groups=c, bias=bias).cuda().half().eval()
    last.load_state_dict(conv.state_dict())
    last = last.to(memory_format=torch.channels_last)
    x = torch.randn(n, c, size, size, device="cuda", dtype=torch.half)
    x_last = x.to(memory_format=torch.channels_last)
    row: dict[str, Any] = {}
    with torch.inference_mode():
        row["torch_nchw_ms"] = median_ms(lambda: conv(x))
        row["torch_channels_last_ms"] = median_ms(lambda: last(x_last))
        reference = conv(x).float()
    for policy in policies:
        try:
            with knobs.override(partition=policy):
                started = time.perf_counter()
                compiled = dnnc.compile(conv, [x], device="cuda")
                compile_s = time.perf_counter() - started
            error = ((compiled(x).float() - reference).norm() / reference.norm()).item()
            executor = compiled._executor
            row[policy] = {
                "ms": median_ms(lambda compiled=compiled: compiled(x)),
                "relative_error": error,
                "compile_s": round(compile_s, 1),
                "steps": [s.backend for s in executor.steps],
                "step_ms": step_times_ms(executor, random_inputs(executor)),
            }
        except Exception as e:  # a policy with no cover for it is reported, not fatal
            row[policy] = f"failed: {type(e).__name__}: {str(e)[:200]}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--shapes", default="32x96x56,32x192x28,32x384x14,32x768x7", help="batch x channels x size, comma-separated"
    )
    parser.add_argument("--kernel", type=int, default=7)
    parser.add_argument("--no-bias", action="store_true")
    parser.add_argument("--policies", default="auto,cudnn-only,triton-only")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench/depthwise_probe.py times convolutions on an NVIDIA GPU and none is visible here")
    policies = [p for p in args.policies.split(",") if p]
    record: dict[str, Any] = {"date": dt.date.today().isoformat(), "environment": environment(), "kernel": args.kernel}
    record["bias"] = not args.no_bias
    record["results"] = {}
    for shape in args.shapes.split(","):
        n, c, size = (int(v) for v in shape.split("x"))
        row = probe(n, c, size, args.kernel, not args.no_bias, policies)
        record["results"][shape] = row
        print(shape, json.dumps(row), flush=True)
    write_record(args.out, "depthwise-probe", record)


if __name__ == "__main__":
    main()
