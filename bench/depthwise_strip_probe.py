"""Channels-last depthwise convolutions in Triton, a strip of output columns a thread:
how fast can a kernel that reuses each loaded input column across the window's taps go,
against cuDNN's channels-last kernel (PyTorch's ``Conv2d`` on channels-last tensors)?

    python bench/depthwise_strip_probe.py [--shapes 32x96x56,32x192x28] [--kernel 7] [--out DIR]

Each program owns ``BLOCK_R`` strips of ``STRIP`` neighbouring output columns (one output
row each) by ``BLOCK_C`` channels. For one row of the window it loads the input columns the
strip reads once each (``STRIP + KW - 1`` of them) and adds each into every output column
that reads it, so a window of 7x7 costs 13 loads per output at a strip of 7, not 49.
``STRIP = 1`` is the plain tap-by-tap kernel. Every config is checked against PyTorch's
result, then timed alone in a CUDA graph. Writes ``depthwise-strip-probe-<date>-<gpu>.json``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.gpu_timing import environment, median_ms, write_record

RESULTS = Path(__file__).with_name("results")


def kernel_text(n: int, c: int, h: int, w: int, k: int, strip: int, half_rows: bool) -> str:
    """A stride-1, 'same'-padded k x k depthwise kernel over an NHWC ``[n, h, w, c]`` input,
    weights ``[k, k, c]``, bias ``[c]``; ``half_rows``: each window row's products summed
    in float16 before they join the float32 accumulator (fewer conversions)."""
    pad = k // 2
    strips = -(-w // strip)
    rows = n * h * strips
    lines = [
        "import triton",
        "import triton.language as tl",
        "",
        "@triton.jit",
        "def dw(x_ptr, w_ptr, b_ptr, y_ptr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):",
        "    rr = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)[:, None]",
        "    rc = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)[None, :]",
        f"    n_i = rr // {h * strips}",
        f"    ho_i = (rr // {strips}) % {h}",
        f"    w0 = (rr % {strips}) * {strip}",
        f"    cmask = (rr < {rows}) & (rc < {c})",
    ]
    for o in range(strip):
        lines.append(f"    acc{o} = tl.zeros((BLOCK_R, BLOCK_C), tl.float32)")
    lines.append(f"    for kh in range({k}):")
    lines.append(f"        hi = ho_i - {pad} + kh")
    lines.append(f"        hmask = cmask & (hi >= 0) & (hi < {h})")
    lines.append(f"        row = x_ptr + ((n_i * {h} + hi) * {w}) * {c} + rc")
    wt = "tl.float16" if half_rows else "tl.float32"
    for kw in range(k):
        lines.append(f"        wt{kw} = tl.load(w_ptr + (kh * {k} + {kw}) * {c} + rc, mask=rc < {c}, other=0.0).to({wt})")
    if half_rows:
        for o in range(strip):
            lines.append(f"        s{o} = tl.zeros((BLOCK_R, BLOCK_C), tl.float16)")
    for j in range(strip + k - 1):
        lines.append(f"        wi = w0 + {j - pad}")
        lines.append(f"        xj = tl.load(row + wi * {c}, mask=hmask & (wi >= 0) & (wi < {w}), other=0.0).to({wt})")
        for o in range(strip):
            kw = j - o
            if 0 <= kw < k:
                if half_rows:
                    lines.append(f"        s{o} += xj * wt{kw}")
                else:
                    lines.append(f"        acc{o} += xj * wt{kw}")
    if half_rows:
        for o in range(strip):
            lines.append(f"        acc{o} += s{o}.to(tl.float32)")
    lines.append(f"    bias = tl.load(b_ptr + rc, mask=rc < {c}, other=0.0).to(tl.float32)")
    for o in range(strip):
        lines.append(f"    wo = w0 + {o}")
        lines.append(
            f"    tl.store(y_ptr + ((n_i * {h} + ho_i) * {w} + wo) * {c} + rc, (acc{o} + bias).to(tl.float16), mask=cmask & (wo < {w}))"
        )
    return "\n".join(lines) + "\n"


def load_kernel(text: str, directory: Path, name: str):
    path = directory / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.dw


def probe(n: int, c: int, size: int, k: int, directory: Path) -> dict[str, Any]:
    import triton

    from dnnc.timing import device_time_ms

    conv = torch.nn.Conv2d(c, c, k, padding=k // 2, groups=c).cuda().half().eval().to(memory_format=torch.channels_last)
    x = torch.randn(n, c, size, size, device="cuda", dtype=torch.half).to(memory_format=torch.channels_last)
    with torch.inference_mode():
        want = conv(x)
        reference = torch.nn.functional.conv2d(x.float(), conv.weight.float(), conv.bias.float(), padding=k // 2, groups=c)
        row: dict[str, Any] = {"cudnn_channels_last_us": 1000 * device_time_ms(lambda: conv(x))}
        row["cudnn_median_us"] = 1000 * median_ms(lambda: conv(x))
    scale = reference.abs().max().item()
    row["cudnn_error"] = (want.float() - reference).abs().max().item() / scale
    weight = conv.weight.detach().reshape(c, k * k).t().contiguous()  # [k*k, c]
    bias = conv.bias.detach().contiguous()
    out = torch.empty_like(want)  # channels-last: NHWC in memory
    configs = []
    tiles = ((4, 32, 1), (8, 32, 1), (4, 64, 2), (8, 64, 2), (16, 32, 2), (8, 32, 2), (16, 64, 4), (8, 64, 4), (4, 128, 4))
    tiles += ((8, 128, 4), (32, 32, 4))
    for strip, half_rows in ((1, False), (7, False), (7, True), (14, False)):
        if size % strip:
            continue
        for block_r, block_c, warps in tiles:
            if block_c <= 2 * c:
                configs.append((strip, half_rows, block_r, block_c, warps))
    kernels = {}
    results = []
    for strip, half_rows, block_r, block_c, warps in configs:
        key = (strip, half_rows)
        if key not in kernels:
            name = f"dw_{n}_{c}_{size}_{k}_{strip}_{int(half_rows)}"
            kernels[key] = load_kernel(kernel_text(n, c, size, size, k, strip, half_rows), directory, name)
        kernel = kernels[key]
        rows = n * size * -(-size // strip)
        grid = (triton.cdiv(rows, block_r), triton.cdiv(c, block_c))

        def launch(kernel=kernel, grid=grid, block_r=block_r, block_c=block_c, warps=warps):
            kernel[grid](x, weight, bias, out, BLOCK_R=block_r, BLOCK_C=block_c, num_warps=warps)

        entry = {"strip": strip, "half_rows": half_rows, "BLOCK_R": block_r, "BLOCK_C": block_c, "num_warps": warps}
        try:
            out.zero_()
            launch()
            torch.cuda.synchronize()
            entry["error"] = (out.float() - reference).abs().max().item() / scale
            if entry["error"] > 4e-3:
                entry["us"] = None
            else:
                entry["us"] = 1000 * device_time_ms(launch)
        except Exception as e:  # a config that does not build or fit is recorded, not fatal
            entry["failed"] = f"{type(e).__name__}: {str(e)[:160]}"
        results.append(entry)
    timed = sorted((r for r in results if r.get("us")), key=lambda r: r["us"])
    row["best"] = timed[:8]
    row["best_by_strip"] = {
        f"{s}{'h' if h else ''}": next((r for r in timed if r["strip"] == s and r["half_rows"] == h), None)
        for s, h in ((1, False), (7, False), (7, True), (14, False))
    }
    row["configs"] = len(results)
    row["failed"] = [r for r in results if "failed" in r][:4]
    row["wrong"] = [r for r in results if r.get("error", 0) > 4e-3][:4]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shapes", default="32x96x56,32x192x28,32x384x14,32x768x7")
    parser.add_argument("--kernel", type=int, default=7)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("bench/depthwise_strip_probe.py times kernels on an NVIDIA GPU and none is visible here")
    record: dict[str, Any] = {"date": dt.date.today().isoformat(), "environment": environment(), "kernel": args.kernel}
    record["results"] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            n, c, size = (int(v) for v in shape.split("x"))
            row = probe(n, c, size, args.kernel, Path(tmp))
            record["results"][shape] = row
            summary = {k: (v["us"] if v else None) for k, v in row["best_by_strip"].items()}
            print(shape, "cudnn", round(row["cudnn_channels_last_us"], 1), "best", row["best"][:1], summary, flush=True)
    write_record(args.out, "depthwise-strip-probe", record)


if __name__ == "__main__":
    main()
