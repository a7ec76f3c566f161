"""How backends time candidates (cuDNN plans, Triton configs) on the GPU.

A single launch from Python can take longer on the CPU than the kernel takes on
the GPU; timing one call between two events then measures the launch, and every
candidate looks the same. So the calls are captured in a CUDA graph and the
replay is timed: the events see only GPU work. Candidates that cannot be
captured are timed the plain way (launch overhead included), which is still a
fair comparison between them for large problems.

Five calls per graph keep a capture cheap: a compile times hundreds of candidates.
Triton's ``do_bench_cudagraph`` unrolls about 20 ms of calls into one graph and
replays it ten times (at least 0.2 s a candidate), raises where a capture fails and
has no cut-off for a candidate already far behind; hence this function.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any


def device_time_ms(
    fn: Callable[[], Any], repeats: int = 7, calls_per_graph: int = 5, give_up_above_ms: float | None = None
) -> float:
    """Median GPU milliseconds of one ``fn()`` call.

    ``give_up_above_ms``: when one plain call already takes longer, that call's time
    is returned without capturing. A candidate known to lose is not worth the capture,
    which can cost seconds: a cuDNN engine that runs a grouped convolution as one
    launch per group puts thousands of nodes into the graph."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        with torch.cuda.stream(stream):
            fn()  # loads modules and sets up state outside the capture
            if give_up_above_ms is not None:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                fn()
                end.record()
        stream.synchronize()
        if give_up_above_ms is not None and (plain_ms := start.elapsed_time(end)) > give_up_above_ms:
            return plain_ms
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls_per_graph):
                fn()
    except Exception:
        torch.cuda.synchronize()
        return _plain_ms(fn, repeats)
    graph.replay()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / calls_per_graph)
    return statistics.median(times)


def _plain_ms(fn: Callable[[], Any], repeats: int) -> float:
    import torch

    fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
