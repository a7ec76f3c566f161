"""What each step of a built program costs on the GPU, inside the whole program.

A kernel timed alone, replayed on the same buffers, can look faster than it runs
in its program (its inputs stay in L2, its neighbours' layouts differ), so the
partitioner checks its choices here: the program runs once on fresh random
inputs with an event after every step. The steps are enqueued behind a long
device-side sleep, so the CPU is far ahead of the GPU and the gap between two
events is the step's own GPU time, not Python's launch time.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from typing import Any

import torch

from dnnc.inputs import random_tensor
from dnnc.ir.types import element_of, shape_of, torch_dtype

SLEEP_CYCLES = 200_000_000
"""About 0.1 s at 1.9 GHz: longer than enqueueing any program we build from Python."""


def random_inputs(executor: Any, seed: int = 0) -> list[torch.Tensor]:
    """Fresh inputs for the program's arguments, made on its device (normal floats;
    integers 0 or 1, valid as indices into any dimension)."""
    generator = torch.Generator(device=executor.device).manual_seed(seed)
    return [random_tensor(tuple(shape_of(a)), torch_dtype(element_of(a)), generator, (0, 2)) for a in executor.block.args]


def step_times_ms(executor: Any, inputs: Sequence[torch.Tensor], repeats: int = 5) -> list[float]:
    """Median GPU ms of every step of ``executor`` (views and stopgaps included)."""
    executor.run(inputs)  # warm-up: modules loaded, allocator primed
    samples: list[list[float]] = [[] for _ in executor.steps]
    for _ in range(repeats):
        events = [torch.cuda.Event(enable_timing=True) for _ in range(len(executor.steps) + 1)]
        torch.cuda._sleep(SLEEP_CYCLES)
        events[0].record()
        executor.run(inputs, after_step=lambda i, *_, marks=events: marks[i + 1].record())
        events[-1].synchronize()
        for i in range(len(executor.steps)):
            samples[i].append(events[i].elapsed_time(events[i + 1]))
    return [statistics.median(s) for s in samples]


def step_buffers(executor: Any, inputs: Sequence[torch.Tensor]) -> list[tuple[Any, list[torch.Tensor], list[Any]]]:
    """Run the program once, keeping every step's inputs and outputs, so any kernel
    can be replayed on buffers it really sees."""
    out: list[tuple[Any, list[torch.Tensor], list[Any]]] = []
    executor.run(inputs, after_step=lambda i, step, ins, outs: out.append((step, list(ins), list(outs))))
    torch.cuda.synchronize(executor.device)
    return out
