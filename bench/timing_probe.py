"""How ``dnnc.timing.device_time_ms`` times a kernel of microseconds, against timing
each replay on its own (an event, a replay, an event, a wait: what it did before the
GPU got its head start), with the host idle and with every core busy (as a compile's
workers keep them), and against the kernel run 400 times in one graph (its cost among
others, launch gaps included).

    python bench/timing_probe.py [--samples 40] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.gpu_timing import environment, result_path  # noqa: E402
from dnnc.timing import device_time_ms  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def _captured(fn: Callable[[], Any], calls: int) -> torch.cuda.CUDAGraph:
    """``calls`` calls of ``fn`` in one graph (after one outside it), replayed once."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
    stream.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        for _ in range(calls):
            fn()
    graph.replay()
    return graph


def replay_waited_ms(fn: Callable[[], Any], repeats: int = 7, calls_per_graph: int = 5) -> float:
    """Each of ``repeats`` replays of a ``calls_per_graph``-call graph between two events,
    waited for before the next: the GPU idles between replays and the host's launch of
    each lies between its events."""
    graph = _captured(fn, calls_per_graph)
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls_per_graph)
    return statistics.median(times)


def in_one_graph_ms(fn: Callable[[], Any], calls: int = 400, replays: int = 5) -> float:
    """One call's share of ``calls`` back to back in one graph, replayed ``replays`` times."""
    graph = _captured(fn, calls)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(replays):
        graph.replay()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / (calls * replays)


def _burn(stop: Any) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(10_000):
            x += 1


def _stats_us(samples: list[float]) -> dict[str, float]:
    v = sorted(s * 1000 for s in samples)
    return {"median_us": round(statistics.median(v), 3), "min_us": round(v[0], 3), "max_us": round(v[-1], 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    x = torch.randn(1, 16, 112, 112, device="cuda", dtype=torch.float16)
    w = torch.randn(16, 1, 3, 3, device="cuda", dtype=torch.float16)
    kernels = {
        "add, 200K f16": lambda: x.add_(1.0),
        "depthwise 3x3, 1x16x112x112 f16": lambda: torch.nn.functional.conv2d(x, w, padding=1, groups=16),
    }
    rows = []
    for label, fn in kernels.items():
        row: dict[str, Any] = {"kernel": label, "in_one_graph_us": round(in_one_graph_ms(fn) * 1000, 3)}
        for load in ("idle", "busy"):
            stop = mp.Event()
            burners = (
                [mp.Process(target=_burn, args=(stop,)) for _ in range(2 * len(os.sched_getaffinity(0)))]
                if load == "busy"
                else []
            )
            for p in burners:
                p.start()
            time.sleep(0.5 if burners else 0)
            row[f"{load}, replays waited"] = _stats_us([replay_waited_ms(fn) for _ in range(args.samples)])
            row[f"{load}, device_time_ms"] = _stats_us([device_time_ms(fn) for _ in range(args.samples)])
            stop.set()
            for p in burners:
                p.join()
        print(json.dumps(row), flush=True)
        rows.append(row)
    path = result_path(args.out, "timing-probe")
    path.write_text(json.dumps({"environment": environment(), "results": rows}, indent=1))
    print("wrote", path)


if __name__ == "__main__":
    main()
