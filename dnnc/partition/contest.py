"""The last word on a cover is the whole program's time on the GPU.

Candidates are timed alone, and alone is not where they run: a Triton convolution
replayed on its own buffers keeps its inputs in L2, and the times of a cuDNN
convolution with and without its epilogue can disagree. On an H100 the cover
``auto`` predicted cheapest for ResNet-50 at batch 32 ran 19% slower than the
cudnn-only program. So ``auto``'s cover and the covers the single-backend
policies take from the same priced candidates, where predicted close to the
cheapest, are each built complete on a copy of the module (with the stages that
follow the partitioner; a cover two policies share once) and timed as one
CUDA-graph replay on fresh random inputs; the fastest wins. The winner's program and executor, built and tuned for the
contest, are what the compile goes on with (``Built``); the others are let go as
soon as one beats them. The winner is cached by content (``contest_key``): a warm
compile builds no contender and the pipeline builds the winner once, from the
kernel caches.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from dnnc import knobs, progress
from dnnc.cache import ContentCache, content_key
from dnnc.errors import PassError
from dnnc.ir.params import ParamStore
from dnnc.ir.program import Program
from dnnc.partition.measure import timing_environment

log = logging.getLogger("dnnc.partition")

CONTESTS = ContentCache("contests")
"""Winners by ``contest_key``: a warm compile does not build the contenders again."""

MARGIN = 1.25
"""Covers predicted at most this many times the cheapest are built and timed. Predicted
ratios between the covers of one program follow the measured ratios closely (the
estimates' error is mostly common to all covers): in the eight contests measured on an
H100 and an H200 (ResNet-50, the conv block, the GPT-2 block, convnext_tiny, a UNet) the
largest upset was a cover predicted 1.13x the cheapest that ran 0.96x of it, and covers
predicted 1.19-1.36x ran 1.19-1.47x. A cover predicted over 1.25x would have to be
mispredicted by a fifth relative to the others to win; each one built costs seconds of
tuning (convnext_tiny's cudnn-only cover, predicted 1.36x, ran 1.33x)."""

MARGINS = {"triton-only": 1.10}
"""Tighter margins, by contender, where its whole programs run slower than predicted
relative to the others: of the 62 distinct Triton-only programs built in the contests of
``bench/results`` (H200 and H100, 2026-11-26 to 29), none was the fastest; predicted
1.04-1.24x the cheapest cover, they ran 1.03-3.2x the fastest program. Within a tenth of
the cheapest one is still built, where a misprediction of that size could let it win;
further out it costs 3-7.5 s of a cold compile (MobileNetV3-L, EfficientNet-B0) for a
program that has never won."""


def margin(name: str) -> float:
    """How many times the cheapest cover's prediction a contender may be predicted at and
    still be built and timed."""
    return MARGINS.get(name, MARGIN)


def contest_key(module: ModuleOp, backends: Sequence[str], specs: str | None = None) -> str:
    """The program's text (before partitioning), the backends, the tuning specs in
    force (their fingerprint), and what every measured time depends on
    (``measure.timing_environment``)."""
    return content_key({**timing_environment(), "program": str(module), "backends": list(backends), "specs": specs})


Build = Callable[[ModuleOp, Mapping[Operation, Operation], ParamStore], None]
"""Makes a copy of the module say what one contender chose: (the copy, the original's
ops -> the copy's, the copy's parameters)."""


def contender_program(program: Program, build: Build) -> Program:
    """A copy of ``program`` after ``build`` and the partitioned stages (the program
    itself is left as it was; the copy's relative paths start where its own do).

    With ``knobs.verify_each_pass``, the copy is verified once, after the stages, and
    only when that fails are they run again on a fresh copy, verified after each pass,
    to name the pass that broke it: verifying after each of the seven passes took two
    thirds of a UNet contender's lowering (0.5 of 0.7-0.8 s, CPU)."""
    from dnnc.passes import run_passes
    from dnnc.passes.stages import PARTITIONED

    contender = _marked(program, build)
    run_passes(contender, PARTITIONED, verify_each=False)
    if knobs.get().verify_each_pass:
        try:
            contender.module.verify()
        except VerifyException as e:
            run_passes(_marked(program, build), PARTITIONED, verify_each=True)  # raises, naming the pass
            raise PassError(f"the partitioned stages made invalid IR: {e}") from None
    return contender


def _marked(program: Program, build: Build) -> Program:
    """A copy of ``program`` marked by ``build``, not yet lowered."""
    copy = program.module.clone()
    store = ParamStore(program.params)
    build(copy, dict(zip(program.module.walk(), copy.walk())), store)
    return Program(copy, store, base_dir=program.base_dir)


@dataclass(frozen=True)
class Built:
    """A contender as it was timed: its program (lowered by ``PARTITIONED``) and the
    executor built for it, kernels tuned, parameters on the GPU."""

    program: Program
    executor: Any
    ms: float


def build_and_time(program: Program, build: Build) -> Built | None:
    """The whole program ``build`` makes, built and timed on the GPU (None if it cannot be built)."""
    import torch

    from dnnc.runtime.gpu_executor import GpuExecutor
    from dnnc.runtime.profile import random_inputs
    from dnnc.timing import device_time_ms

    try:
        with progress.span("contest: lower a contender"):
            contender = contender_program(program, build)
        with progress.span("contest: build a contender"):
            executor = GpuExecutor(contender, torch.device("cuda"))
        inputs = random_inputs(executor)
        with progress.span("contest: time a contender"):
            ms = device_time_ms(lambda: executor.run(inputs))
        torch.cuda.synchronize()
        executor.index_check.clear()  # random inputs may index out of range; the user's calls start clean
        return Built(contender, executor, ms)
    except Exception as e:  # a contender that cannot be built is not a choice
        log.info("partition: a contending program did not build: %s: %s", type(e).__name__, e)
        return None


def contest(program: Program, contenders: Mapping[str, tuple[float, Build]]) -> tuple[str, dict[str, Any], Built | None]:
    """Build and time the contenders (name -> predicted ms, build) predicted within
    their ``margin`` of the cheapest, each distinct program once (a build with the ``cover``
    of one built before is that program: a policy's cover is often another's); returns
    the fastest one's name (the first contender when none could be timed), what was
    found, and the fastest one as built (None when none could be timed)."""
    cheapest = min(predicted for predicted, _ in contenders.values())
    report: dict[str, Any] = {}
    fastest: tuple[str, Built] | None = None
    covers: dict[Any, str] = {}
    for name, (predicted, build) in contenders.items():
        entry: dict[str, Any] = {"predicted_ms": predicted}
        limit = margin(name)
        cover = getattr(build, "cover", None)
        if cover is not None and cover in covers:  # the same groups and configs: the same program
            entry.update(program_ms=report[covers[cover]].get("program_ms"), same_program_as=covers[cover])
        elif predicted > limit * cheapest:
            entry["skipped"] = f"predicted over {limit}x the cheapest cover"
        else:
            progress.stage(f"gpu-partition: timing {name}'s whole program")
            started = time.perf_counter()
            built = build_and_time(program, build)
            entry["program_ms"] = built.ms if built is not None else None
            entry["build_s"] = round(time.perf_counter() - started, 2)
            if built is not None and (fastest is None or built.ms < fastest[1].ms):
                fastest = (name, built)  # the one it beats goes back to the allocator
            del built  # a slower one is not kept while the next contender is built
            if cover is not None:
                covers[cover] = name
        report[name] = entry
    if fastest is None:
        return next(iter(contenders)), report, None
    return fastest[0], report, fastest[1]
