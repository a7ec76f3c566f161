"""A compiled program bound to the caller's own input tensors, replayed with no
per-call work.

A call of a compiled program checks its inputs, finds or captures the CUDA graph for
them, picks one whose output buffers the caller no longer holds and hands those out
(``handed_out``): a few microseconds of host time a call, which a program of a few
kernels notices. A serving loop that fills the same input tensors every time can bind
them once instead, as a TensorRT execution context or a CUDA graph it captured itself would:
``bind`` checks the inputs, captures the program on those tensors' memory and gives
output tensors of the binding's own; ``replay`` launches that graph and nothing else
(no checks, no copies), reading whatever the bound inputs hold then and rewriting the
same outputs. Where the program cannot be captured (no CUDA graphs, the CPU reference
backend), a replay runs the program and copies its results into those outputs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from dnnc.runtime.outputs import owned_copy

Launch = Callable[[], None]


@dataclass(frozen=True)
class Binding:
    """What ``CompiledModule.bind`` gives: call ``replay()`` after filling ``inputs``."""

    inputs: tuple[torch.Tensor, ...]
    """The caller's tensors the program reads at every replay."""
    outputs: Any
    """The results, structured as the model returns them: the same tensors at every
    replay, which rewrites them (no other call of the program does)."""
    _launch: Launch
    _program: Any = None
    """The compiled program the launch runs, held for as long as the binding is: a captured
    graph holds addresses, not tensors, so the weights and the intermediates' arena it
    reads must not go back to the allocator when the caller drops its own reference
    (``compile(...).bind(...)`` in one expression): a later allocation would take that
    memory, and the replay would compute from whatever is written there."""

    def replay(self) -> None:
        """Run the program on what the bound inputs hold now, into ``outputs``. On a GPU it
        is enqueued on the current stream, like any kernel launch."""
        self._launch()


def by_running(
    run: Callable[[Sequence[torch.Tensor]], list[torch.Tensor]], inputs: Sequence[torch.Tensor]
) -> tuple[list[torch.Tensor], Launch]:
    """Outputs and a launch for a program that is not replayed as a graph: it runs now into
    outputs of its own, and each launch runs it again and copies the results there."""
    outputs = [owned_copy(t) for t in run(inputs)]

    def launch() -> None:
        for kept, new in zip(outputs, run(inputs)):
            kept.copy_(new)

    return outputs, launch


def checked(launch: Launch, before: Callable[[], None], after: Callable[[], None]) -> Launch:
    """``launch`` between the index check's two halves (programs that gather)."""

    def run() -> None:
        before()
        launch()
        after()

    return run
