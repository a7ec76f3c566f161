"""Replays a whole program as one CUDA graph per input signature.

On the first call with a signature, inputs are copied into static buffers, the
program runs twice uncaptured on a side stream (Triton modules load, cuDNN and
cuBLAS initialise lazily: none of that may happen during a capture), then once
under capture. Every later call copies its inputs into the static buffers,
replays, and returns copies of the outputs (the graph's own buffers are rewritten
by the next replay), made outside inference mode: ordinary tensors the caller may
change in place, as eager's outputs.

A caller that passes the same input tensors again (a serving loop filling fixed
buffers, a benchmark) gets, from the second such call on, a graph captured on
those tensors' own memory: no input copies at all. Such a graph is keyed by each
input's address, shape, strides and dtype, which is all a replay reads, so it is
right for whatever tensor lives there when it is replayed. A few are kept
(``DIRECT_GRAPHS``), the least recently used dropped first.

A program that cannot be captured (a stopgap op that synchronizes, say) runs
uncaptured from then on, with a warning. A call made while the caller is capturing
its own CUDA graph runs the kernels uncaptured by us, so they land in the caller's
graph (no graph launched inside a capture).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from dnnc.runtime.arena import ArenaRunner
from dnnc.runtime.binding import Launch, by_running
from dnnc.runtime.outputs import owned_copy

log = logging.getLogger("dnnc.gpu")

WARMUP_RUNS = 2
DIRECT_GRAPHS = 2
"""Graphs on callers' own input memory kept per program (each holds little: the
arena is shared, only stopgap ops allocate in a graph's pool)."""


@dataclass
class _Captured:
    graph: Any  # torch.cuda.CUDAGraph
    inputs: list[torch.Tensor]
    outputs: list[torch.Tensor]


def _signature(inputs: Sequence[torch.Tensor]) -> tuple:
    return tuple((tuple(t.shape), t.dtype, t.device) for t in inputs)


def _placement(inputs: Sequence[torch.Tensor]) -> tuple:
    """What a graph captured on these very tensors reads: address, shape, strides, dtype."""
    return tuple((t.data_ptr(), t.shape, t.stride(), t.dtype) for t in inputs)


class CudaGraphRunner:
    def __init__(self, arena: ArenaRunner):
        self.arena = arena
        self._graphs: dict[tuple, _Captured] = {}
        self._direct: dict[tuple, _Captured] = {}  # by placement, least recently used first
        self._last_placement: tuple | None = None
        self.disabled: str | None = None
        """Why the program runs uncaptured (capture failed), or None."""

    @property
    def peak_bytes(self) -> int:
        return self.arena.peak_bytes

    @property
    def captured(self) -> int:
        """Graphs captured on static input buffers (one per input signature)."""
        return len(self._graphs)

    @property
    def captured_direct(self) -> int:
        """Graphs captured on callers' own input tensors."""
        return len(self._direct)

    def run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        if self.disabled is not None or torch.cuda.is_current_stream_capturing():
            return self.arena.run(inputs)
        placement = _placement(inputs)
        direct = self._direct.pop(placement, None)
        if direct is None and placement == self._last_placement:
            direct = self._capture(inputs, on_static_copies=False)
        if direct is not None:
            self._direct[placement] = direct  # (re)inserted last: the most recently used
            while len(self._direct) > DIRECT_GRAPHS:
                del self._direct[next(iter(self._direct))]
            direct.graph.replay()
            return [owned_copy(t) for t in direct.outputs]
        if self.disabled is not None:  # the capture just tried failed
            return self.arena.run(inputs)
        self._last_placement = placement
        key = _signature(inputs)
        captured = self._graphs.get(key)
        if captured is None:
            captured = self._capture(inputs)
            if captured is None:
                return self.arena.run(inputs)
            self._graphs[key] = captured
        with torch.inference_mode():  # the static buffers are inference tensors
            for static, x in zip(captured.inputs, inputs):
                static.copy_(x)
            captured.graph.replay()
        return [owned_copy(t) for t in captured.outputs]

    def bind(self, inputs: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], Launch]:
        """Outputs of their own and the launch of a graph captured on ``inputs``
        themselves (``binding``); run uncaptured where the program cannot be captured."""
        if self.disabled is None and not torch.cuda.is_current_stream_capturing():
            captured = self._capture(inputs, on_static_copies=False, buffers=self.arena.returned_apart())
            if captured is not None:
                return captured.outputs, captured.graph.replay
        return by_running(self.arena.run, inputs)

    def _capture(
        self, inputs: Sequence[torch.Tensor], on_static_copies: bool = True, buffers: dict[int, list[torch.Tensor]] | None = None
    ) -> _Captured | None:
        """A graph of the program reading static copies of ``inputs`` (filled before
        each replay), or reading ``inputs`` themselves; ``buffers``: the kernel steps'
        outputs, in place of the arena's (``ArenaRunner.run_in_place``)."""
        if on_static_copies:
            with torch.inference_mode():
                static = [torch.empty(x.shape, dtype=x.dtype, device=x.device).copy_(x) for x in inputs]
        else:
            static = list(inputs)
        current = torch.cuda.current_stream()
        side = torch.cuda.Stream(device=current.device)
        side.wait_stream(current)
        try:
            with torch.cuda.stream(side):
                for _ in range(WARMUP_RUNS):
                    self.arena.run_in_place(static, buffers)
            current.wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                outputs = self.arena.run_in_place(static, buffers)
        except Exception as e:  # capture is an optimisation: run uncaptured instead
            torch.cuda.synchronize()
            self.disabled = f"{type(e).__name__}: {e}"
            log.warning("dnnc: the program could not be captured in a CUDA graph (%s); running it uncaptured", self.disabled)
            return None
        return _Captured(graph, static, list(outputs))
