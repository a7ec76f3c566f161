"""Compressible device memory (Compute Data Compression) measured: copies of buffers
larger than L2 by what they hold, and whole programs with their intermediates in it.

Nsight Compute showed every kernel of ResNet-50's program sending its writes through L2's
compression unit with none compressed: the arena is plain ``torch.empty`` memory. In memory
allocated compressible (``dnnc.runtime.compressible``) the memory system may keep a block
in fewer bytes when its contents allow; a ReLU's output is half zeros or more, and
stage 1 and the stem of ResNet-50 at serving batches are bound by DRAM.

    python bench/compressible_probe.py [--workloads resnet50-b32,resnet50-b128] [--mib 1024] [--out DIR]

Copies: ``dst.copy_(src)`` of ``--mib`` MiB, both plain or both compressible, for a
float16 tensor of normal values, the same after a ReLU (half zeros), after a ReLU of
values shifted down by one (84% zeros), and all zeros; each copy checked equal to its
source first. Programs: each workload compiled once and loaded twice, its arena plain and
compressible (the second load comes from the compile cache: the setting changes no
decision), each output checked against float32 and the two against each other, then
timed as CUDA-graph replays (``bench.gpu_timing.median_ms``, the GPU given a head start).
Writes ``DIR/compressible.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PATTERNS = {
    "normal": lambda x: x,
    "relu": torch.relu,
    "relu_shifted": lambda x: torch.relu(x - 1),
    "zeros": torch.zeros_like,
}


def buffers(nbytes: int, compressible: bool) -> tuple[torch.Tensor, torch.Tensor]:
    from dnnc.runtime.compressible import empty_bytes

    if not compressible:
        return tuple(torch.empty(nbytes, dtype=torch.uint8, device="cuda") for _ in range(2))  # type: ignore[return-value]
    pair = empty_bytes(nbytes, torch.device("cuda")), empty_bytes(nbytes, torch.device("cuda"))
    if pair[0] is None or pair[1] is None:
        raise SystemExit("this GPU or driver gives no compressible memory")
    return pair  # type: ignore[return-value]


def copies(mib: int) -> list[dict]:
    nbytes = mib << 20
    rows = []
    for kind in ("plain", "compressible"):
        src, dst = buffers(nbytes, kind == "compressible")
        a, b = src.view(torch.float16), dst.view(torch.float16)
        for name, pattern in PATTERNS.items():
            torch.manual_seed(0)
            a.copy_(pattern(torch.randn(a.numel(), dtype=torch.float16, device="cuda")))
            b.zero_()
            b.copy_(a)
            if not torch.equal(a, b):
                raise SystemExit(f"{kind} {name}: the copy differs from its source")
            zeros = float((a == 0).float().mean())
            ms, read_ms = copy_and_read_ms(a, b)
            row = {
                "memory": kind,
                "pattern": name,
                "zeros": round(zeros, 3),
                "copy_ms": round(ms, 4),
                "copy_gbs": round(2 * nbytes / ms / 1e6, 1),
                "read_ms": round(read_ms, 4),
                "read_gbs": round(nbytes / read_ms / 1e6, 1),
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
        del src, dst
        torch.cuda.synchronize()
    return rows


def copy_and_read_ms(a: torch.Tensor, b: torch.Tensor) -> tuple[float, float]:
    from bench.gpu_timing import median_ms

    return (
        median_ms(lambda: b.copy_(a), inner=5, repeats=11, warmup=3),
        median_ms(lambda: torch.amax(a), inner=5, repeats=11, warmup=3),
    )


def program(name: str) -> dict:
    import dnnc
    from bench.batch_split_probe import TOLERANCE, relative_error
    from bench.gpu_timing import fp16_inputs, median_ms
    from bench.suite.workloads import WORKLOADS
    from dnnc import knobs

    model, inputs = WORKLOADS[name].build()
    model = model.cuda().eval()
    xs = fp16_inputs(inputs)
    with torch.inference_mode():
        reference = model.float()(*[x.float() if x.is_floating_point() else x for x in xs])
    half = model.half()
    row: dict = {"workload": name}
    bound = {}
    for kind in ("plain", "compressible"):
        with knobs.override(compressible_arena=kind == "compressible"):
            bound[kind] = dnnc.compile(half, xs).bind(*[x.clone() for x in xs])
        bound[kind].replay()
        torch.cuda.synchronize()
        error = relative_error(bound[kind].outputs, reference)
        if not error <= TOLERANCE:
            raise SystemExit(f"{name}, {kind} arena: differs from float32 by {error:.2e}")
        row[f"{kind}_error"] = error
    row["same_outputs"] = bool(torch.equal(bound["plain"].outputs, bound["compressible"].outputs))
    times: dict[str, list[float]] = {kind: [] for kind in bound}
    for _ in range(3):  # in turn, so a drift of the clocks falls on both
        for kind, b in bound.items():
            times[kind].append(median_ms(b.replay, inner=20, repeats=9, warmup=3, head_start=True))
    for kind, ts in times.items():
        row[f"{kind}_ms"] = round(min(ts), 4)
        row[f"{kind}_ms_rounds"] = [round(t, 4) for t in ts]
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    from bench.gpu_timing import environment
    from dnnc.runtime.compressible import supported

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="resnet50-b32,resnet50-b128")
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    args = ap.parse_args()
    out: dict = {"environment": environment(), "supported": supported(torch.cuda.current_device())}
    print(f"compressible memory supported: {out['supported']}", flush=True)
    path = Path(args.out, "compressible.json")
    out["copies"] = copies(args.mib) if args.mib else []
    path.write_text(json.dumps(out, indent=1))
    out["programs"] = []
    for name in filter(None, args.workloads.split(",")):
        out["programs"].append(program(name))
        path.write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
