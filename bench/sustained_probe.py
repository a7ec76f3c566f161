"""One compiled program timed in bursts and under sustained load, with the GPU's SM
clock, power and clock-event reasons sampled throughout (``nvidia-smi``).

The whole-program contest times a program over about 35 calls (``dnnc.timing``); the
suite times 250 calls after a warm-up (``bench/gpu_timing.median_ms``). ResNet-50 at
batch 128 measured 2.661 ms in the first and 2.749 ms in the second, same program, same
process (H200, 2026-11-30). This probe says whether the difference is the GPU's clock
under sustained load or the way each call reaches the GPU: it was the clock (``bench/gpu_clocks.py``).

    python bench/sustained_probe.py --workload resnet50-b128 [--seconds 8] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dnnc
from bench.gpu_clocks import Sampler, summary
from bench.gpu_timing import batch_ms, environment, fp16_inputs, median_ms, write_results
from bench.suite.workloads import WORKLOADS
from dnnc import knobs
from dnnc.timing import device_time_ms


def _series(fn: Any, seconds: float, inner: int = 10) -> list[float]:
    """Per-batch ms of ``inner`` back-to-back calls, batch after batch, for ``seconds``."""
    times = []
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        times.append(batch_ms(fn, inner))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", default="resnet50-b128")
    parser.add_argument("--seconds", type=float, default=8.0, help="length of the sustained run")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()

    model, inputs = WORKLOADS[args.workload].build()
    model = model.eval().cuda().half()
    xs = fp16_inputs(inputs)
    cache = tempfile.mkdtemp(prefix="dnnc-cache-")
    with knobs.override(cache_dir=Path(cache)):
        compiled = dnnc.compile(model, xs, device="cuda")
    executor = compiled._executor  # type: ignore[attr-defined]
    call = lambda: compiled(*xs)  # noqa: E731
    call()
    torch.cuda.synchronize()

    sampler = Sampler()
    phases: list[dict[str, Any]] = []

    def phase(name: str, measure: Any) -> None:
        time.sleep(1.0)  # idle before: the GPU cools and clocks up
        start = time.time()
        value = measure()
        phases.append({"phase": name, "start": start, "end": time.time(), **value})
        print(f"{name}: {json.dumps({k: v for k, v in value.items() if k != 'series_ms'})}", flush=True)

    phase("contest-style (device_time_ms of the uncaptured program)", lambda: {"ms": device_time_ms(lambda: executor.run(xs))})
    phase("replays (device_time_ms of the call)", lambda: {"ms": device_time_ms(call)})
    phase("suite-style (median_ms: 5 warm-up, 25 x 10 calls)", lambda: {"ms": median_ms(call)})

    def sustained() -> dict[str, Any]:
        series = _series(call, args.seconds)
        tenth = max(1, len(series) // 10)
        return {
            "ms": statistics.median(series),
            "first_tenth_ms": statistics.median(series[:tenth]),
            "last_tenth_ms": statistics.median(series[-tenth:]),
            "series_ms": [round(x, 4) for x in series],
        }

    phase(f"sustained ({args.seconds:.0f} s of batches of 10 calls)", sustained)
    phase("suite-style again", lambda: {"ms": median_ms(call)})
    samples = sampler.stop()
    for p in phases:
        p["gpu"] = summary(samples, p["start"], p["end"])
        print(p["phase"], json.dumps(p["gpu"]), flush=True)
    shutil.rmtree(cache, ignore_errors=True)
    write_results(
        f"sustained-{args.workload}",
        {"environment": environment(), "workload": args.workload, "phases": phases, "samples": samples},
        args.out,
    )


if __name__ == "__main__":
    main()
