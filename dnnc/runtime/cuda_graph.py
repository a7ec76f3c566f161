"""Replays a whole program as one CUDA graph per input signature.

On the first call with a signature, inputs are copied into static buffers, the
program runs twice uncaptured on a side stream (Triton modules load, cuDNN and
cuBLAS initialise lazily: none of that may happen during a capture), then once
under capture. Every later call copies its inputs into the static buffers and
replays. The graph writes the returned values into buffers of its own, which the call
hands out as they are (``handed_out``): ordinary tensors the caller may keep and change
in place, as eager's outputs. A replay never rewrites buffers the caller still refers
to: a second graph with buffers of its own serves the call that finds the first one's
held, and where both are held a third one's outputs, in the arena, are copied out.

A caller that passes the same input tensors again (a serving loop filling fixed
buffers, a benchmark) gets, from the second such call on, a graph captured on
those tensors' own memory: no input copies at all. Such a graph is keyed by the
inputs' ``placement`` (address, shape, strides, dtype, device), which is all a
replay reads, so it is right for whatever tensor lives there when it is replayed.
A few are kept
(``DIRECT_GRAPHS``), the least recently used dropped first.

A program whose last kernel writes a large output (``TAIL_MIN_BYTES``: a language
model's logits) runs that kernel, and the reshapes after it, outside the graph, right
after each replay, into memory allocated for the caller: the output is the caller's
without a copy. The copy of GPT-2's 103 MB of logits (batch 8 x 128 tokens) took
about 0.05 ms of its 0.9 ms call on an H200; a launch from Python costs host time
instead, which the replay's GPU work hides. Such a program has one graph per set of
inputs, its other outputs copied out: a large output kept by the caller would otherwise
hold a second and third copy of it in graphs' buffers.

A program that cannot be captured (a stopgap op that synchronizes, say) runs
uncaptured from then on, with a warning. A call made while the caller is capturing
its own CUDA graph runs the kernels uncaptured by us, so they land in the caller's
graph (no graph launched inside a capture).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dnnc.graph_memsets import instantiated, kept_graph
from dnnc.runtime.arena import ArenaRunner
from dnnc.runtime.binding import Launch, by_running
from dnnc.runtime.handed_out import HandedOut
from dnnc.runtime.outputs import owned_copy
from dnnc.runtime.signature import placement as placement_of

log = logging.getLogger("dnnc.gpu")

WARMUP_RUNS = 2
DIRECT_GRAPHS = 2
"""Callers' own input tensors whose graphs are kept per program (each holds little:
the arena is shared, only stopgap ops allocate in a graph's pool)."""
HANDED_OUT_GRAPHS = 2
"""Graphs per set of input tensors that hand their outputs out: one for the result a
loop still holds while it calls again (``y = model(x)``), one for that call."""


TAIL_MIN_BYTES = 16 << 20
"""A last kernel writing this many bytes runs after the replay, into the caller's own
memory (``tail_start``): copying 16 MiB out of the graph's buffer costs about 10 us
of GPU time on an H100, more than launching the kernel costs the host."""


@dataclass
class _Captured:
    graph: Any  # torch.cuda.CUDAGraph
    outputs: list[torch.Tensor]
    """The returned values the graph computes (all of them where nothing runs after it);
    none where they are handed out."""
    after: dict[Any, Any] | None = None
    """Where steps run after the replay (``tail_start``): the values they start from, as
    the capture left them (the graph rewrites the same memory at every replay)."""
    handed: HandedOut | None = None
    """The buffers of its own its returned values live in, handed to the caller as they are."""

    replay: Launch = field(init=False)
    """The graph's launch (``replay_of``)."""

    def __post_init__(self) -> None:
        self.replay = replay_of(self.graph)


def replay_of(graph: torch.cuda.CUDAGraph) -> Launch:
    """``graph``'s replay without ``torch.cuda.CUDAGraph.replay``'s Python layer, which
    only checks an input-liveness tracker these graphs never enable: on a small program
    every call's host time is the call's time (the conv block at batch 1: 5.4 us of
    18.6 us a call go to the replay, H200 host)."""
    native = getattr(type(graph).__mro__[1], "replay", None)
    if getattr(graph, "_tracker", None) is None and native is not None:
        return native.__get__(graph)
    return graph.replay


@dataclass
class _Replays:
    """The graphs captured on one set of input tensors: static copies the call fills, or
    the caller's own tensors."""

    inputs: list[torch.Tensor]
    handing: list[_Captured] = field(default_factory=list)
    """Graphs that hand their outputs out (``handed_out``), at most ``HANDED_OUT_GRAPHS``."""
    shared: _Captured | None = None
    """The graph whose outputs live in the arena, copied out at every call: for a program
    with a tail, and for a call that finds every handing graph's outputs still held."""

    @property
    def count(self) -> int:
        return len(self.handing) + (self.shared is not None)


def tail_start(executor: Any) -> int:
    """The first step run after the replay: the last kernel step when its outputs, which
    only the reshapes after it read, reach ``TAIL_MIN_BYTES``; else past the last step."""
    steps = executor.steps
    last = len(steps)
    while last > 0 and steps[last - 1].backend == "view":
        last -= 1
    if last == 0 or steps[last - 1].kernel is None:
        return len(steps)
    written = sum(math.prod(shape) * dtype.itemsize for shape, dtype in steps[last - 1].out_specs)
    return last - 1 if written >= TAIL_MIN_BYTES else len(steps)


def _signature(inputs: Sequence[torch.Tensor]) -> tuple:
    return tuple((tuple(t.shape), t.dtype, t.device) for t in inputs)


class CudaGraphRunner:
    def __init__(self, arena: ArenaRunner):
        self.arena = arena
        self._graphs: dict[tuple, _Replays] = {}
        self._direct: dict[tuple, _Replays] = {}  # by placement, least recently used first
        self._last_placement: tuple | None = None
        self.tail = tail_start(arena.executor)
        """The first step run after each replay rather than captured (``tail_start``)."""
        self.disabled: str | None = None
        """Why the program runs uncaptured (capture failed), or None."""
        self.fill_kernels = 0
        """Memset nodes the last graph captured writes with fill kernels (``graph_memsets``)."""

    @property
    def peak_bytes(self) -> int:
        return self.arena.peak_bytes

    @property
    def captured(self) -> int:
        """Input signatures with graphs captured on static input buffers."""
        return len(self._graphs)

    @property
    def captured_direct(self) -> int:
        """Callers' own input tensors with graphs captured on them."""
        return len(self._direct)

    def run(self, inputs: Sequence[torch.Tensor], placed: tuple | None = None) -> list[torch.Tensor]:
        """``placed``: the inputs' ``placement``, where the caller has it already."""
        if self.disabled is not None or torch.cuda.is_current_stream_capturing():
            return self.arena.run(inputs)
        placement = placed if placed is not None else placement_of(inputs)
        direct = self._direct.pop(placement, None)
        if direct is None and placement == self._last_placement:
            direct = _Replays(list(inputs))
        if direct is not None:
            self._direct[placement] = direct  # (re)inserted last: the most recently used
            while len(self._direct) > DIRECT_GRAPHS:
                del self._direct[next(iter(self._direct))]
            return self._replay(direct, inputs)
        self._last_placement = placement
        key = _signature(inputs)
        replays = self._graphs.get(key)
        if replays is None:
            with torch.inference_mode():
                static = [torch.empty(x.shape, dtype=x.dtype, device=x.device) for x in inputs]
            replays = self._graphs[key] = _Replays(static)
        with torch.inference_mode():  # the static buffers are inference tensors
            for static, x in zip(replays.inputs, inputs):
                static.copy_(x)
        return self._replay(replays, inputs)

    def _replay(self, replays: _Replays, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        captured = self._pick(replays)
        if captured is None:  # the capture failed: uncaptured from now on
            return self.arena.run(inputs)
        captured.replay()
        if captured.handed is not None:
            return captured.handed.give()
        return self._outputs(captured)

    def _pick(self, replays: _Replays) -> _Captured | None:
        """A handing graph whose outputs nobody holds (captured if there is room for one
        more), else the shared graph."""
        if self.tail == len(self.arena.executor.steps):
            for captured in replays.handing:
                if captured.handed is not None and captured.handed.free():
                    return captured
            if len(replays.handing) < HANDED_OUT_GRAPHS:
                handed = HandedOut(self.arena.returned_views())
                captured = self._capture(replays, self.arena.returned_apart(handed.buffers), handed)
                if captured is not None:
                    replays.handing.append(captured)
                return captured
        if replays.shared is None:
            replays.shared = self._capture(replays)
        return replays.shared

    def _outputs(self, captured: _Captured) -> list[torch.Tensor]:
        """The outputs of a replay, the caller's: the steps after the graph run into fresh
        memory, and what lives in the graph's buffers is copied out."""
        if captured.after is None:
            return [owned_copy(t) for t in captured.outputs]
        values = dict(captured.after)
        executor = self.arena.executor
        fresh: set[int] = set()

        def written(index: int, step: Any, operands: Any, outs: list[torch.Tensor]) -> None:
            if step.kernel is not None:
                fresh.update(t.untyped_storage().data_ptr() for t in outs)

        executor.run_steps(values, self.tail, len(executor.steps), after_step=written)
        return [t if t.untyped_storage().data_ptr() in fresh else owned_copy(t) for t in executor.returned(values)]

    def bind(self, inputs: Sequence[torch.Tensor]) -> tuple[list[torch.Tensor], Launch]:
        """Outputs of their own and the launch of a graph captured on ``inputs``
        themselves (``binding``); run uncaptured where the program cannot be captured."""
        if self.disabled is None and not torch.cuda.is_current_stream_capturing():
            captured = self._capture(_Replays(list(inputs)), self.arena.returned_apart())
            if captured is not None:
                return captured.outputs, captured.replay
        return by_running(self.arena.run, inputs)

    def _capture(
        self, replays: _Replays, buffers: dict[int, list[torch.Tensor]] | None = None, handed: HandedOut | None = None
    ) -> _Captured | None:
        """A graph of the program reading ``replays.inputs``; ``buffers``: the kernel steps'
        outputs, in place of the arena's (``ArenaRunner.run_in_place``); ``handed``: the
        buffers among them that its returned values are handed out in."""
        inputs = replays.inputs
        warm_up = replays.count == 0  # the first graph on these inputs
        if warm_up:
            current = torch.cuda.current_stream()
            side = torch.cuda.Stream(device=current.device)
            side.wait_stream(current)
        try:
            if warm_up:
                with torch.cuda.stream(side):
                    for _ in range(WARMUP_RUNS):
                        self.arena.run_in_place(inputs, buffers)
                current.wait_stream(side)
            graph = kept_graph()
            steps = len(self.arena.executor.steps)
            with torch.cuda.graph(graph):
                if buffers is not None or self.tail == steps:
                    outputs, after = self.arena.run_in_place(inputs, buffers), None
                else:  # the last kernel runs after each replay, into the caller's memory
                    after = self.arena.executor.begin(inputs)
                    self.arena.run_part(after, 0, self.tail)
                    outputs = []
            self.fill_kernels = instantiated(graph)
        except Exception as e:  # capture is an optimisation: run uncaptured instead
            torch.cuda.synchronize()
            self.disabled = f"{type(e).__name__}: {e}"
            log.warning("dnnc: the program could not be captured in a CUDA graph (%s); running it uncaptured", self.disabled)
            return None
        if handed is not None:
            handed.describe(outputs)
            outputs = []
        return _Captured(graph, list(outputs), after, handed)
