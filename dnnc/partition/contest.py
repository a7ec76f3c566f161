"""The last word on a cover is the whole program's time on the GPU.

Candidates are timed alone, and alone is not where they run: a Triton convolution
replayed on its own buffers keeps its inputs in L2, and the times of a cuDNN
convolution with and without its epilogue can disagree. On an H100 the cover
``auto`` predicted cheapest for ResNet-50 at batch 32 ran 19% slower than the
cudnn-only program. So ``auto``'s cover and the programs the single-backend
policies would build, where predicted close to the cheapest, are each built
complete on a copy of the module (with the stages that follow the partitioner)
and timed as one CUDA-graph replay on fresh random inputs; the fastest wins. The
kernels these builds compile and tune land in the caches, so the final build of
the winner reuses them, and the winner is cached by content (``contest_key``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from dnnc.cache import ContentCache, content_key
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.partition.measure import timing_environment

log = logging.getLogger("dnnc.partition")

CONTESTS = ContentCache("contests")
"""Winners by ``contest_key``: a warm compile does not build the contenders again."""

MARGIN = 1.5
"""Covers predicted at most this many times the cheapest are built and timed: the
predictions of the measured covers were within ~30% of the programs' times."""


def contest_key(module: ModuleOp, backends: Sequence[str], specs: str | None = None) -> str:
    """The program's text (before partitioning), the backends, the tuning specs in
    force (their fingerprint), and what every measured time depends on
    (``measure.timing_environment``)."""
    return content_key({**timing_environment(), "program": str(module), "backends": list(backends), "specs": specs})


Build = Callable[[ModuleOp, Mapping[Operation, Operation], ParamStore], None]
"""Makes a copy of the module say what one contender chose: (the copy, the original's
ops -> the copy's, the copy's parameters)."""


def contender_program(module: ModuleOp, params: ParamStore, build: Build) -> Program:
    """A copy of ``module`` after ``build`` and the partitioned stages (the module
    itself is left as it was)."""
    from dnnc.passes import run_passes
    from dnnc.passes.stages import PARTITIONED

    copy = module.clone()
    store = ParamStore(params)
    build(copy, dict(zip(module.walk(), copy.walk())), store)
    program = Program(copy, store)
    run_passes(program, PARTITIONED)
    return program


def program_ms(module: ModuleOp, params: ParamStore, build: Build) -> float | None:
    """GPU ms of the whole program ``build`` makes (None if it cannot be built)."""
    import torch

    from dnnc.runtime.gpu_executor import GpuExecutor
    from dnnc.runtime.profile import random_inputs
    from dnnc.timing import device_time_ms

    try:
        executor = GpuExecutor(contender_program(module, params, build), torch.device("cuda"))
        inputs = random_inputs(executor)
        return device_time_ms(lambda: executor.run(inputs))
    except Exception as e:  # a contender that cannot be built is not a choice
        log.info("partition: a contending program did not build: %s: %s", type(e).__name__, e)
        return None


def contest(module: ModuleOp, params: ParamStore, contenders: Mapping[str, tuple[float, Build]]) -> tuple[str, dict[str, Any]]:
    """Build and time the contenders (name -> predicted ms, build) predicted within
    ``MARGIN`` of the cheapest; returns the fastest one's name (the first contender
    when none could be timed) and what was found."""
    cheapest = min(predicted for predicted, _ in contenders.values())
    report: dict[str, Any] = {}
    for name, (predicted, build) in contenders.items():
        entry: dict[str, Any] = {"predicted_ms": predicted}
        if predicted > MARGIN * cheapest:
            entry["skipped"] = f"predicted over {MARGIN}x the cheapest cover"
        else:
            entry["program_ms"] = program_ms(module, params, build)
        report[name] = entry
    timed = {n: e["program_ms"] for n, e in report.items() if e.get("program_ms") is not None}
    if not timed:
        return next(iter(contenders)), report
    return min(timed, key=timed.__getitem__), report
