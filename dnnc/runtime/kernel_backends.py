"""The backends that give a GPU program's top-level ops their kernels, in the order
their kernels are built: cuDNN first, since a graph it has no engine for is given
back as tcp ops that Triton then groups. The executor and the artifact iterate over
this table; what is particular to a backend stays in its package."""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any

from xdsl.ir import Operation

from dnnc import progress
from dnnc.backends import cudnn, triton
from dnnc.backends.interface import KernelBackend, SpecChoice
from dnnc.ir.analysis import moves_no_data
from dnnc.kernels.kernel_backend import USER_KERNELS

log = logging.getLogger("dnnc.gpu")

KERNEL_BACKENDS: tuple[KernelBackend, ...] = (cudnn.KERNEL_BACKEND, triton.KERNEL_BACKEND, USER_KERNELS)


def backend_of(op: Operation) -> KernelBackend | None:
    """The backend that takes a top-level op, or None (a view, or a torch op)."""
    return next((b for b in KERNEL_BACKENDS if b.takes(op)), None)


def ordinals(block: Any) -> dict[Operation, int]:
    """Each top-level op's position among its backend's ops: what an artifact's kernel
    records are keyed by."""
    counts: Counter[str] = Counter()
    found = {}
    for op in block.ops:
        backend = backend_of(op)
        if backend is not None:
            found[op] = counts[backend.name]
            counts[backend.name] += 1
    return found


def planned_steps(block: Any) -> tuple[dict[str, int], dict[str, int]]:
    """How many of a lowered program's top-level ops each backend runs (``view``: a
    reshape or returned slice, ``torch``: no backend's) and which ops those torch ones
    are: ``GpuExecutor.summary``'s ``steps`` and ``torch_ops`` for a program built for
    another machine, where nothing was built to fall back."""
    from dnnc.ir import tcp

    steps: Counter[str] = Counter()
    torch_ops: Counter[str] = Counter()
    for op in list(block.ops)[:-1]:  # not the return
        backend = backend_of(op)
        if backend is not None:
            steps[backend.name] += 1
        elif moves_no_data(op):
            steps["view"] += 1
        elif not isinstance(op, tcp.SOURCE_OPS):
            steps["torch"] += 1
            torch_ops[op.name] += 1
    return dict(steps), dict(torch_ops)


def precompile(ops: Sequence[Operation], device: Any) -> None:
    """Compile side by side the kernels of ``ops`` that their backends can compile ahead
    (``KernelBackend.precompile``), every backend at once (each drives worker processes:
    Triton's compiles and cuDNN's runtime-compiled plans overlap); a failure only costs
    time, each kernel then compiles when it is built."""

    def ahead(backend: KernelBackend) -> None:
        assert backend.precompile is not None
        try:
            with progress.span(f"compile {backend.name} kernels ahead"):
                backend.precompile(ops, device)
        except Exception as e:
            log.info("dnnc: compiling the %s kernels ahead failed: %s: %s", backend.name, type(e).__name__, e)

    backends = [b for b in KERNEL_BACKENDS if b.precompile is not None]
    others = [threading.Thread(target=ahead, args=(b,), daemon=True) for b in backends[1:]]
    for thread in others:
        thread.start()
    for backend in backends[:1]:
        ahead(backend)
    for thread in others:
        thread.join()


def start_workers() -> None:
    """Start every backend's worker processes in the background (a GPU compile calls
    this before it exports, so they are ready when the first kernels are compiled);
    a backend that cannot start them compiles without them."""
    for backend in KERNEL_BACKENDS:
        if backend.start_workers is not None:
            try:
                backend.start_workers()
            except Exception as e:
                log.info("dnnc: starting the %s workers ahead failed: %s: %s", backend.name, type(e).__name__, e)


def recording_backends() -> list[KernelBackend]:
    """The backends whose kernels an artifact records, one member each."""
    return [b for b in KERNEL_BACKENDS if b.parse_records is not None]


def spec_choices() -> dict[str, SpecChoice]:
    """Backend name -> what a tuning spec may choose for its kernels, for the backends a
    spec can choose, in table order."""
    return {b.name: b.spec for b in KERNEL_BACKENDS if b.spec is not None}
