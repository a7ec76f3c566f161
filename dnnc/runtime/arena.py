"""Runs a ``GpuExecutor`` with every kernel output carved out of one arena.

The outputs of kernel steps (cuDNN graphs, Triton groups) are the buffers; their
lifetimes come from the steps' operands. Steps that are not kernels (row-major
reshapes, stopgap torch ops) may return views of their operands, so a buffer
stays live for as long as anything computed from it through such steps is used.
Returned values stay live to the end and are copied out of the arena, so what the
caller gets is never overwritten by a later call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from xdsl.ir import SSAValue

from dnnc.runtime import compressible, sharing
from dnnc.runtime.gpu_executor import GpuExecutor, Step
from dnnc.runtime.memory_plan import MemoryPlan, plan_memory
from dnnc.runtime.outputs import owned_copy


@dataclass(frozen=True)
class Buffer:
    step: int
    result: int
    shape: tuple[int, ...]
    dtype: torch.dtype

    @property
    def nbytes(self) -> int:
        count = 1
        for d in self.shape:
            count *= d
        return count * torch.empty((), dtype=self.dtype).element_size()


def buffer_lifetimes(steps: Sequence[Step], returned: Sequence[SSAValue]) -> tuple[list[Buffer], list[tuple[int, int]]]:
    """Kernel outputs and their (first, last) steps, inclusive; returned ones live past the last step."""
    buffers: list[Buffer] = []
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    roots: dict[SSAValue, set[int]] = {}  # value -> the buffers its storage may belong to
    for i, step in enumerate(steps):
        for v in step.op.operands:
            for b in roots.get(v, ()):
                last[b] = i
        if step.kernel is not None:
            for r, (result, (shape, dtype)) in enumerate(zip(step.op.results, step.out_specs)):
                roots[result] = {len(buffers)}
                first[len(buffers)] = last[len(buffers)] = i
                buffers.append(Buffer(i, r, tuple(shape), dtype))
        else:
            aliased = set().union(*(roots.get(v, set()) for v in step.op.operands))
            for result in step.op.results:
                roots[result] = aliased
    for v in returned:
        for b in roots.get(v, ()):
            last[b] = len(steps)
    return buffers, [(first[b], last[b]) for b in range(len(buffers))]


class ArenaRunner:
    """One ``torch.empty(peak, dtype=uint8)`` for every intermediate, views fixed at
    construction (so the same addresses serve a CUDA graph capture)."""

    def __init__(self, executor: GpuExecutor):
        self.executor = executor
        buffers, lifetimes = buffer_lifetimes(executor.steps, executor._returned)
        self.plan: MemoryPlan = plan_memory([b.nbytes for b in buffers], lifetimes)
        shared = sharing.current()
        if shared is not None:
            self.arena = shared.arena(self.plan.peak, executor.device)
        else:
            self.arena = compressible.arena(self.plan.peak, executor.device)
        self._outputs: dict[int, list[torch.Tensor]] = {}
        self._returned: list[tuple[int, int]] = []
        """(step, result) of every buffer a returned value may live in."""
        for b, offset, (_, last) in zip(buffers, self.plan.offsets, lifetimes):
            view = self.arena[offset : offset + b.nbytes].view(b.dtype).view(b.shape)
            self._outputs.setdefault(b.step, []).append(view)
            if last == len(executor.steps):
                self._returned.append((b.step, b.result))

    @property
    def peak_bytes(self) -> int:
        return self.plan.peak

    def run_in_place(
        self, inputs: Sequence[torch.Tensor], buffers: dict[int, list[torch.Tensor]] | None = None
    ) -> list[torch.Tensor]:
        """Outputs may be views of the arena (valid until the next call). ``buffers``: each
        kernel step's outputs, in place of the arena's views (``returned_apart``)."""
        chosen = self._outputs if buffers is None else buffers
        return self.executor.run(inputs, allocate=lambda index, step: chosen[index])

    def run_part(self, env: dict, start: int, stop: int) -> None:
        """Steps ``start`` to ``stop`` of a run begun with ``executor.begin``, their outputs in the arena."""
        self.executor.run_steps(env, start, stop, allocate=lambda index, step: self._outputs[index])

    def returned_views(self) -> list[torch.Tensor]:
        """The arena's views of every buffer a returned value may live in."""
        return [self._outputs[step][result] for step, result in self._returned]

    def returned_apart(self, replacements: list[torch.Tensor] | None = None) -> dict[int, list[torch.Tensor]]:
        """The arena's views, but every buffer a returned value may live in is a tensor of
        its own (``replacements``, in ``returned_views``' order, or fresh ones): outputs no
        other run in the arena overwrites (a ``Binding``'s, a ``HandedOut``'s)."""
        if replacements is None:
            replacements = [torch.empty(v.shape, dtype=v.dtype, device=v.device) for v in self.returned_views()]
        buffers = {step: list(views) for step, views in self._outputs.items()}
        for (step, result), own in zip(self._returned, replacements, strict=True):
            buffers[step][result] = own
        return buffers

    def run(self, inputs: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        return [self._own(t) for t in self.run_in_place(inputs)]

    def _own(self, t: torch.Tensor) -> torch.Tensor:
        """An output the caller owns: a copy of an arena buffer (the next call rewrites it)
        or of a tensor made in inference mode (the caller may change it in place)."""
        in_arena = t.untyped_storage().data_ptr() == self.arena.untyped_storage().data_ptr()
        return owned_copy(t) if in_arena or t.is_inference() else t
