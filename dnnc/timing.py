"""How backends time candidates (cuDNN plans, Triton configs) on the GPU.

A single launch from Python can take longer on the CPU than the kernel takes on
the GPU; timing one call between two events then measures the launch, and every
candidate looks the same. So the calls are captured in a CUDA graph and the
replay is timed; candidates that cannot be captured are timed call by call.

Either way the GPU gets a head start: a spin queued before the first event, during
which the host queues the events and the work behind it, so the first event is
recorded on a GPU already busy and the replays run back to back, an event between
each two. Timed without it (an event, a replay, an event, wait, again), an elementwise
add measured 3.0 us against 2.1 with it, a depthwise convolution 5.0 against 4.5 (H200,
median of 40, host idle or every core busy alike): each replay paid for a GPU gone
idle and for the host's launch. (A replay's own launch remains: that add runs in 1.3 us
a call inside one graph of 400.) Those microseconds weigh most on the smallest kernels,
and unevenly: three cold compiles of MobileNetV3 at batch 1 predicted 0.41, 0.44 and 0.60
ms and chose three programs that ran 0.311, 0.320 and 0.335 ms; with the head start
they predicted 0.365-0.370 and ran 0.267, 0.271 and 0.267.

Five calls per graph keep a capture cheap: a compile times hundreds of candidates.
Triton's ``do_bench_cudagraph`` unrolls about 20 ms of calls into one graph and
replays it ten times (at least 0.2 s a candidate), raises where a capture fails and
has no cut-off for a candidate already far behind; hence this function.
"""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable
from typing import Any

from dnnc.graph_memsets import instantiated, kept_graph

HEAD_START_CYCLES = 1_000_000
"""The spin queued ahead of timed work, in GPU clock cycles: about half a millisecond,
time for the host to queue seven replays and their events even when it is busy."""


def _head_start() -> None:
    """Queues the spin on the current stream (``torch.cuda._sleep``: torch's own, private;
    a torch without it times as if the GPU had no head start)."""
    import torch

    spin = getattr(torch.cuda, "_sleep", None)
    if spin is not None:
        spin(HEAD_START_CYCLES)


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
                _head_start()
                start.record()
                fn()
                end.record()
        stream.synchronize()
        if give_up_above_ms is not None and (plain_ms := start.elapsed_time(end)) > give_up_above_ms:
            return plain_ms
        graph = kept_graph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(calls_per_graph):
                fn()
        instantiated(graph)
    except Exception:
        torch.cuda.synchronize()
        return _plain_ms(fn, repeats)
    graph.replay()
    events = [torch.cuda.Event(enable_timing=True) for _ in range(repeats + 1)]
    _head_start()
    events[0].record()
    for event in events[1:]:
        graph.replay()
        event.record()
    events[-1].synchronize()
    return statistics.median(a.elapsed_time(b) / calls_per_graph for a, b in itertools.pairwise(events))


def _plain_ms(fn: Callable[[], Any], repeats: int) -> float:
    import torch

    fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        _head_start()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)
