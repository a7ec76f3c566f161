"""Check a candidate by lowering it alone, and time it alone on the GPU.

``lower_alone`` outlines the candidate's ops (as a standalone program, see
``extract``) for its backend and runs that backend's stages: a cuDNN candidate
that ``lower-cudnn`` cannot express is found here, on any machine. On a GPU,
``time_alone`` builds the program with the GPU executor and times only the
candidate's own kernels (the layout transposes at its boundary are left out: in
the full program they cancel between cuDNN graphs or fuse into Triton kernels)
on fresh random inputs, by CUDA-graph replay. Times are cached by content:
dnnc, torch, Triton and cuDNN versions, the GPU, the autotune setting and the
group's text; only successful measurements are stored. A library's definite
refusal of a group (``LibraryRefusal``: cuDNN with no engine for it) is stored
too, keyed the same way without the autotune setting: it is the library's answer
for that group on that GPU and version, not a failed attempt, and pricing drops
such a group before it is offered again (``known_refusal``).
"""

from __future__ import annotations

import logging
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.ir import Operation
from xdsl.utils.exceptions import VerifyException

from dnnc import knobs
from dnnc.cache import ContentCache, content_key, environment
from dnnc.errors import DnncError, PassError
from dnnc.ir import tcp
from dnnc.ir.program import Program
from dnnc.partition.backends import BACKENDS
from dnnc.partition.candidates import Candidate
from dnnc.partition.extract import extract
from dnnc.version import code_identity

log = logging.getLogger("dnnc.partition")

_CACHE = ContentCache("measured")


class NotLowered(DnncError):
    """The candidate's backend does not take it once lowered alone."""


class NotBuilt(DnncError):
    """The candidate's backend built no kernel for it alone (it would fall back)."""


def lower_alone(candidate: Candidate, params: Any) -> Program:
    """The candidate as its own program, lowered for its backend as the whole program
    would be (``partition.backends``); a group its backend does not keep raises ``NotLowered``."""
    from dnnc.passes import run_passes

    program = extract(candidate.ops, params)
    backend = BACKENDS.get(candidate.backend)
    if backend is None:
        return program
    backend.mark(_members(program), candidate.kind, 0, None)
    # verified once, at the end: the verifier after each of the stage's passes took more than
    # half of pricing's lowering (ResNet-50: 2.4 of 4.3 s); the whole program's own lowering
    # still verifies after every pass and names the pass that broke it
    run_passes(program, backend.stage, verify_each=False)
    try:
        program.module.verify()
    except VerifyException as e:
        raise PassError(
            f"lowering a {candidate.backend} {candidate.kind} group alone ({backend.stage}) made invalid IR: {e}"
        ) from None
    problem = backend.not_lowered(list(program.entry.body.block.ops))
    if problem is not None:
        raise NotLowered(problem)
    return program


def _members(program: Program) -> list[Operation]:
    """The candidate's own ops in its extracted program: every op but the parameters and
    constants it reads and the return. Its compile-time ops (a bias broadcast a cuDNN
    graph absorbs) are members too, as when the whole program marks it
    (``realize.realize``). Marking only ``graph_nodes`` left such a broadcast outside: a
    Triton kernel then wrote the bias out whole, and cuDNN's graph added a full tensor
    instead of a broadcast one, a different graph with other plans (a depthwise
    convolution with its bias timed alone at 0.011 ms, its plans tuned in the program at
    0.052 ms; H200)."""
    block = program.entry.body.block
    return [op for op in block.ops if not isinstance(op, (func.ReturnOp, *tcp.SOURCE_OPS))]


MEASURED_ALONE = 4
"""How a group is lowered to be timed alone; raised when that changes, so times measured
the earlier way are not read back from the cache (2: compile-time members inside; 3: a
Triton 1x1 convolution on channels-last tensors; 4: a Triton convolution with a window
too)."""


def measurement_key(candidate: Candidate, text: str) -> str:
    """``text``: the group's name-free text as extracted (``pricing.identity``), so a
    cached time is found without lowering the group again."""
    parts = {"backend": candidate.backend, "kind": candidate.kind, "text": text, "alone": MEASURED_ALONE}
    return content_key({**timing_environment(), **parts})


def cached_ms(candidate: Candidate, text: str) -> float | None:
    hit = _CACHE.get_json(measurement_key(candidate, text))
    return float(hit["ms"]) if hit is not None else None


_LOWERS = ContentCache("lowers-alone")
"""Groups known to lower alone (successes only), so a warm compile skips the check."""


def lowering_key(candidate: Candidate, text: str) -> str:
    return content_key({**code_identity(), "backend": candidate.backend, "kind": candidate.kind, "text": text})


def known_to_lower(candidate: Candidate, text: str) -> bool:
    return _LOWERS.get_json(lowering_key(candidate, text)) is True


def remember_lowers(candidate: Candidate, text: str) -> None:
    _LOWERS.put_json(lowering_key(candidate, text), True)


_REFUSALS = ContentCache("library-refusals")
"""Groups a library answered it has no kernel for, with its reason, by ``refusal_key``."""


def _here() -> dict[str, Any]:
    """The versions and, on a GPU machine, the GPU: what a library's answer holds for."""
    return environment(0 if torch.cuda.is_available() else None)


def refusal_key(candidate: Candidate, text: str, here: dict[str, Any]) -> str:
    return content_key({**here, "backend": candidate.backend, "kind": candidate.kind, "text": text})


def known_refusal(candidate: Candidate, text: str) -> str | None:
    """Why the candidate's library has no kernel for it on this GPU, if it said so before."""
    here = _here()
    if "gpu" not in here:
        return None
    hit = _REFUSALS.get_json(refusal_key(candidate, text, here))
    return str(hit["reason"]) if isinstance(hit, dict) and "reason" in hit else None


def timing_environment() -> dict[str, Any]:
    """What a measured time depends on besides the program: dnnc and library
    versions, the GPU and the autotune settings."""
    settings = knobs.get()
    tuning = {"autotune": settings.autotune, "tune_floor_us": settings.tune_floor_us}
    return {**_here(), **tuning, "runtime_compiled_plans": settings.runtime_compiled_plans}


def time_alone(candidate: Candidate, program: Program, device: torch.device, text: str) -> float:
    """Median ms of the candidate's kernels, stored in the cache (the caller looked there
    first, ``cached_ms``); raises ``NotBuilt`` if its backend built no kernel for it,
    remembering a library's definite refusal (``known_refusal``).
    ``program``: the candidate lowered alone; ``text``: its extracted text (the cache key)."""
    from dnnc.runtime.gpu_executor import GpuExecutor
    from dnnc.runtime.profile import random_inputs, step_buffers
    from dnnc.timing import device_time_ms

    executor = GpuExecutor(program, device, precompile=False, give_back=False)  # its round compiled the kernels ahead
    if executor.fallbacks:
        first = executor.fallbacks[0]
        log.info("partition: %s fell back when built alone: %s", candidate.label, first.reason)
        why = f"{candidate.backend} has no kernel for it here: {first.headline}"
        if all(f.settled for f in executor.fallbacks):
            _REFUSALS.put_json(refusal_key(candidate, text, _here()), {"reason": why})
        raise NotBuilt(why)
    mine = [s for s in executor.steps if s.backend == candidate.backend and s.kernel is not None]
    if not mine:
        raise NotBuilt(f"{candidate.backend} runs none of it when built alone")
    launches = step_buffers(executor, random_inputs(executor))
    chosen = [(s, ins, outs) for s, ins, outs in launches if s in mine]
    ms = device_time_ms(lambda: [s.kernel.launch(ins, outs) for s, ins, outs in chosen])  # type: ignore[union-attr]
    _CACHE.put_json(measurement_key(candidate, text), {"ms": ms})
    return ms
