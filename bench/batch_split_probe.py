"""A batch run as equal parts on concurrent streams, against the whole batch as one
program: what the GPU gains when one part's kernels fill the SMs another part's last
wave leaves idle.

At batch 32 ResNet-50's 3x3 convolutions of stages 2-4 have 52-196 output tiles for 132
SMs, and cuDNN's best plans run them at 417-442 TFLOP/s against 579-676 at batch 128
(``cudnn-plan-probe-sweep-b{32,128}-2026-11-29-h200.json``); neither a stream-K Triton
kernel nor a Triton one-program-per-tile kernel beat cuDNN there
(``stream-k-2026-11-29-h200-b32.json``). A program compiled for a part of the batch and
replayed on ``k`` streams at once keeps every kernel as cuDNN and Triton run it best and
lets the hardware scheduler start one part's next kernel on the SMs the other part's
current kernel has finished with. It pays where the tails are wide and the parts'
kernels are not much slower per image than the whole batch's.

    python bench/batch_split_probe.py [--workloads resnet50-b32,resnet50-b128] [--splits 2,4] [--out DIR]

Each part is its own compiled module (the second compile of a size comes from the
compile cache) bound to its slice of the batch (``CompiledModule.bind``), so no two
parts share intermediate buffers. The parts' outputs, concatenated, are checked against
the whole batch's before anything is timed. Times: ``ROUNDS`` rounds of ``CALLS`` calls,
CUDA events on the issuing stream, the GPU given a head start; each call forks the parts
off the issuing stream and joins them back, as one CUDA graph with a fork and a join
would. Writes ``DIR/batch-split.json`` after each workload.

Measured on an H200 (2026-11-29, BENCHMARKS.md, thirty-first session): ResNet-50 b32 0.930
ms whole, 0.998 as 2 x 16 on two streams, 1.239 as 4 x 8.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALLS = 20
ROUNDS = 9
TOLERANCE = 2e-2
"""Largest difference allowed against the reference, relative to its largest magnitude (fp16)."""


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    """NaN where either holds a NaN: callers compare with ``not error <= TOLERANCE``."""
    return float((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-6))


def ms_per_call(call: Callable[[], None]) -> float:
    """Median over ``ROUNDS`` of the mean GPU time of ``CALLS`` back-to-back calls, the GPU
    given a head start."""
    from bench.gpu_timing import median_ms

    return median_ms(call, inner=CALLS, repeats=ROUNDS, warmup=3, head_start=True)


def on_streams(replays: list[Callable[[], None]], streams: list[torch.cuda.Stream]) -> Callable[[], None]:
    """One call: each replay on its own stream, forked from and joined back to the current one."""

    def call() -> None:
        issuing = torch.cuda.current_stream()
        for replay, stream in zip(replays, streams):
            stream.wait_stream(issuing)
            with torch.cuda.stream(stream):
                replay()
        for stream in streams:
            issuing.wait_stream(stream)

    return call


def in_turn(replays: list[Callable[[], None]]) -> Callable[[], None]:
    def call() -> None:
        for replay in replays:
            replay()

    return call


def probe(name: str, splits: list[int], device: str = "cuda") -> dict:
    """On ``cpu`` (the reference backend) only the parts' outputs are checked: the flow walked without a GPU."""
    import dnnc
    from bench.gpu_timing import fp16_inputs
    from bench.suite.workloads import WORKLOADS

    workload = WORKLOADS[name]
    model, inputs = workload.build()
    model = model.to(device).eval()
    xs = fp16_inputs(inputs) if device == "cuda" else list(inputs)
    batch = xs[0].shape[0]
    with torch.inference_mode():
        reference = model.float()(*[x.float() if x.is_floating_point() else x for x in xs])
    half = model.half() if device == "cuda" else model
    whole = dnnc.compile(half, xs, device=device)
    bound = whole.bind(*[x.clone() for x in xs])
    bound.replay()
    timed = device == "cuda"
    if timed:
        torch.cuda.synchronize()
    row: dict = {
        "workload": name,
        "batch": batch,
        "whole_error": relative_error(bound.outputs, reference),
        "whole_ms": ms_per_call(bound.replay) if timed else None,
        "splits": {},
    }
    if not row["whole_error"] <= TOLERANCE:
        raise SystemExit(f"{name}: the whole batch differs from float32 by {row['whole_error']:.2e}")
    print(f"{name}: whole batch {row['whole_ms']} ms (error {row['whole_error']:.1e})", flush=True)
    for parts in splits:
        if batch % parts:
            continue
        size = batch // parts
        slices = [[x[i * size : (i + 1) * size].clone() for x in xs] for i in range(parts)]
        bindings = [dnnc.compile(half, piece, device=device).bind(*piece) for piece in slices]
        for b in bindings:
            b.replay()
        error = relative_error(torch.cat([b.outputs for b in bindings]), bound.outputs)
        if not error <= TOLERANCE:  # NaN included
            raise SystemExit(f"{name}: {parts} parts of {size} differ from the whole batch by {error:.2e}")
        if not timed:
            row["splits"][str(parts)] = {"error_vs_whole": error}
            continue
        replays = [b.replay for b in bindings]
        streams = [torch.cuda.Stream() for _ in range(parts)]
        timed = {
            "part_ms": ms_per_call(bindings[0].replay),
            "in_turn_ms": ms_per_call(in_turn(replays)),
            "concurrent_ms": ms_per_call(on_streams(replays, streams)),
            "error_vs_whole": error,
        }
        row["splits"][str(parts)] = timed
        print(
            f"{name}: {parts} x {size}: one part {timed['part_ms']:.3f} ms, in turn {timed['in_turn_ms']:.3f}, "
            f"on {parts} streams {timed['concurrent_ms']:.3f} (whole {row['whole_ms']:.3f})",
            flush=True,
        )
    return row


def main() -> None:
    from bench.gpu_timing import environment

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", default="resnet50-b32,resnet50-b128")
    ap.add_argument("--splits", default="2,4")
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    splits = [int(s) for s in args.splits.split(",")]
    out: dict = {"environment": environment() if args.device == "cuda" else {"device": "cpu"}, "rows": []}
    for name in args.workloads.split(","):
        out["rows"].append(probe(name, splits, args.device))
        Path(args.out, "batch-split.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
