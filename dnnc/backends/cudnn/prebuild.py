"""cuDNN's runtime-compiled plans, built side by side in worker processes.

A plan of a runtime-compiled engine (behavior note ``RUNTIME_COMPILATION``: cuDNN
generates its kernel and compiles it when the plan is built) takes 0.1-1 s to build;
a precompiled engine's plan about a millisecond. Graphs that only runtime-compiled
engines take (a convolution with a residual add, a matmul with its bias) had eight such
plans among the first ``MAX_TIMED_PLANS``: on an H100, building the plans of
ResNet-50's 29 distinct graphs took 30 s at batch 1 and 35 s at batch 32, all but a
few hundredths of a second of it in the 72 runtime-compiled plans (cuDNN 9.19,
2026-11-25; BENCHMARKS.md). Tuning now builds the first
``knobs.runtime_compiled_plans`` of them (``runtime.tuned_plan``), and those are
built here.

The executor hands ``precompile`` the ops it is about to build. For each graph that
will be tuned (no cached plan, no tuning spec's), the runtime-compiled plans among
those tuning will build are built in worker processes, each with a CUDA context of
its own (they build, they run nothing), and serialized there in cuDNN's backend
format, which carries the compiled kernel. Tuning then deserializes each one
(milliseconds) where it would have built it (``runtime._tune``, through
``prebuilt``). A plan a worker did not build or serialize, or ranked otherwise (its
engine tag differs), and every plan when the pool breaks, is built by tuning as before.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, Region

from dnnc import knobs, progress
from dnnc.backends.cudnn import prebuilt
from dnnc.ir import cudnn as dialect
from dnnc.workers import worth_sending

log = logging.getLogger("dnnc.cudnn")

MAX_WORKERS = 8
"""Build workers at most: each holds a CUDA context (some hundred MB of GPU memory)."""

IDLE_S = 30.0
"""Build workers idle this long exit (a compile asks for builds every few seconds; the
program it made should not keep their CUDA contexts)."""


def precompile(ops: Sequence[Operation], device: Any) -> None:
    """Build, side by side, the runtime-compiled plans tuning will build for the
    ``cudnn.graph`` ops among ``ops``; a single such plan is left to tuning unless the
    workers are running already (one costs more to start than one build), and so is
    every plan with ``knobs.compile_workers`` at 0 or 1."""
    from dnnc.backends.cudnn.runtime import handle_for, has_cached_plan
    from dnnc.backends.cudnn.signature import graph_signature

    device = torch.device(device)
    graphs = [op for op in ops if isinstance(op, dialect.GraphOp) and op.plan is None]  # a tuning spec's plan is not tuned
    if device.type != "cuda" or knobs.get().compile_workers <= 1 or not graphs:
        return
    index = device.index if device.index is not None else torch.cuda.current_device()
    handle = handle_for(device)
    wanted: list[tuple[str, int, str, str]] = []  # signature, rank, engine tag, graph text
    seen: set[str] = set()
    for op in graphs:
        signature = graph_signature(op)
        if signature in seen or has_cached_plan(signature, device):
            continue
        seen.add(signature)
        plans = [(rank, name) for rank, name in _runtime_compiled(op, handle) if not prebuilt.has(signature, rank)]
        if plans:
            text = standalone_text(op)
            wanted += [(signature, rank, name, text) for rank, name in plans]
    if not worth_sending(len(wanted), _WORKERS):
        return
    progress.tally("compile cudnn kernels ahead", len(wanted))
    try:
        results = _pool().map(build_serialized, [(text, index, rank, name) for _, rank, name, text in wanted])
    except Exception as e:  # the builds are left to tuning
        log.info("cudnn: building plans in worker processes failed: %s: %s", type(e).__name__, e)
        return
    finally:
        _close_when_idle()
    for (signature, rank, name, _), (blob, why) in zip(wanted, results):
        if blob is not None:
            prebuilt.keep(signature, rank, prebuilt.Prebuilt(name, blob))
        else:  # tuning builds it (and finds out for itself if it does not build)
            log.debug("cudnn: plan %d (%s) was not built in a worker: %s", rank, name, why)


def _runtime_compiled(op: dialect.GraphOp, handle: Any) -> list[tuple[int, str]]:
    """(rank, engine tag) of the runtime-compiled plans tuning builds (``runtime.tuned_plan``
    when autotuning, else the first plan's if it is one)."""
    from dnnc.backends.cudnn.runtime import _plan_name, _ranked, runtime_compiled, tuned_plan

    try:
        g = _ranked(op, handle).graph
        count = g.get_execution_plan_count()
    except Exception:  # tuning says why
        return []
    if not knobs.get().autotune:
        return [(0, _plan_name(g, 0))] if count and runtime_compiled(g, 0) else []
    found: list[tuple[int, str]] = []
    for i in range(count):
        if runtime_compiled(g, i):
            if not tuned_plan(i, len(found)):
                break
            found.append((i, _plan_name(g, i)))
    return found


def standalone_text(op: dialect.GraphOp) -> str:
    """The graph as a module of its own (its operands become a function's arguments):
    what a worker parses to build it."""
    from dnnc.ir.text import print_ir

    block = Block(arg_types=[v.type for v in op.operands])
    clone = op.clone(value_mapper=dict(zip(op.operands, block.args)))
    block.add_op(clone)
    block.add_op(func.ReturnOp(*clone.results))
    fn = func.FuncOp("graph", ([v.type for v in op.operands], [r.type for r in op.results]), Region(block))
    return print_ir(ModuleOp([fn]))


_WORKERS: Any = None
_IDLE: threading.Timer | None = None


def _pool() -> Any:
    global _WORKERS
    from dnnc.workers import WorkerPool

    if _IDLE is not None:
        _IDLE.cancel()
    if _WORKERS is None:
        _WORKERS = WorkerPool(max(1, min(MAX_WORKERS, knobs.get().compile_workers)))
    return _WORKERS


def start_workers() -> None:
    """Start the build workers while the compile exports and lowers the model: each
    imports torch and the frontend and makes its CUDA context and cuDNN handle (about
    as long as the first builds), which the first ``precompile`` would otherwise wait
    for. They exit when idle (``IDLE_S``) if no build comes."""
    from dnnc.backends.cudnn.runtime import load_frontend

    if knobs.get().compile_workers <= 1 or not torch.cuda.is_available():
        return
    try:
        load_frontend()
    except Exception:  # no cuDNN backend here: nothing to build
        return
    _pool().start_ahead(_ready, torch.cuda.current_device())
    _close_when_idle()


def _ready(device: int) -> bool:
    """A worker's first job: the frontend loaded and a handle on the GPU."""
    from dnnc.backends.cudnn.runtime import handle_for

    handle_for(torch.device("cuda", device))
    return True


def _close_when_idle() -> None:
    global _IDLE
    if _WORKERS is None:
        return
    if _IDLE is not None:
        _IDLE.cancel()
    _IDLE = threading.Timer(IDLE_S, _WORKERS.close)
    _IDLE.daemon = True
    _IDLE.start()


def build_serialized(job: tuple[str, int, int, str]) -> tuple[bytes | None, str]:
    """In a worker: build plan ``index`` of the graph in ``text`` on GPU ``device`` and
    serialize it; (None, why) when it does not build or serialize here, or is not the
    plan named ``name`` here."""
    from dnnc.backends.cudnn.runtime import _plan_name, _ranked, handle_for, serialized_plan
    from dnnc.ir.text import parse_ir

    text, device, index, name = job
    op = next(o for o in parse_ir(text, verify=False).walk() if isinstance(o, dialect.GraphOp))
    handle = handle_for(torch.device("cuda", device))
    try:
        g = _ranked(op, handle).graph
        if _plan_name(g, index) != name:
            return None, f"plan {index} is {_plan_name(g, index)} in the worker, not {name}"
        g.build_plan_at_index(index)
    except Exception as e:
        return None, f"{type(e).__name__}: {e}"
    blob = serialized_plan(g)
    return (blob, "") if blob is not None else (None, "the plan does not serialize")
