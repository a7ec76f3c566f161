"""Runs a GPU-lowered program: each top-level op by the backend that took it.

At construction every ``cudnn.graph`` is built and tuned (identical graphs share
one build), every Triton group is compiled, and parameters and constants are
uploaded once. A graph cuDNN builds no engine for is raised back to tcp ops in the
program and fused into Triton groups like the rest (recorded in ``summary()``'s
fallbacks with ``runs_as = "triton"``). What no backend takes runs as torch ops
through the reference rules in the tensors' own dtypes: the *stopgap*, reported by
``summary()``; a group whose Triton build fails falls back the same way, with the
reason logged, never a crash.

Per call, outputs of kernels are allocated through torch's caching allocator on
the current stream (or taken from a caller's ``allocate``, e.g. the arena of
``runtime.arena``) and kernels are enqueued without synchronizing.

Each op's kernel comes from the backend that takes it (``kernel_backends``): built
and tuned at compile time, or rebuilt from an artifact's records (``Recorded``)
without tuning.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator

from dnnc import progress
from dnnc.backends.interface import GROUP_KIND_ATTR, BuildContext, GroupKernel, KernelBackend, Recorded, group_attr
from dnnc.backends.reference import Value, execute
from dnnc.errors import ArtifactError, LibraryRefusal
from dnnc.ir import extern, tcp
from dnnc.ir.analysis import moves_no_data
from dnnc.ir.attrs import scalar
from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.log import say_once
from dnnc.runtime import sharing
from dnnc.runtime.index_check import IndexCheck
from dnnc.runtime.kernel_backends import KERNEL_BACKENDS, backend_of, ordinals
from dnnc.runtime.kernel_backends import precompile as precompile_kernels

log = logging.getLogger("dnnc.gpu")


def _upload(value: torch.Tensor, op: Any, device: torch.device, shared: sharing.SharedMemory | None) -> torch.Tensor:
    dtype = torch_dtype(element_of(op.result))
    if shared is not None:
        return shared.upload(op.param_name, value, device, dtype)
    return value.to(device, dtype).contiguous()


class _TorchEnv:
    """Reference rules on device tensors, each value in its own element type."""

    compute_dtype = None

    def __init__(self, params: dict[str, torch.Tensor], device: torch.device):
        self.params = params
        self.device = device

    def param(self, name: str) -> Value:
        return self.params[name]

    def run_block(self, op: Operation, args: Sequence[Value]) -> list[Value]:
        block = op.regions[0].block
        env: dict[SSAValue, Value] = dict(zip(block.args, args))
        for inner in block.ops:
            operands = [env[v] for v in inner.operands]
            if inner.has_trait(IsTerminator):
                return operands
            env.update(zip(inner.results, run_stopgap(inner, operands, self)))
        raise RuntimeError(f"{op.name} body has no terminator")


def run_stopgap(op: Operation, operands: list[Value], env: _TorchEnv) -> list[Value]:
    results = execute(op, operands, env)
    return [r.to(env.device) if r.device != env.device else r for r in results]


@dataclass
class Step:
    op: Operation
    backend: str  # cudnn | triton | torch
    kernel: GroupKernel | None = None
    out_specs: list[tuple[tuple[int, ...], torch.dtype]] = field(default_factory=list)


@dataclass
class Fallback:
    kind: str
    backend: str
    reason: str
    runs_as: str = "torch"
    """What runs the group instead: ``triton`` (a cuDNN graph raised to tcp) or ``torch``."""
    settled: bool = False
    """The library's definite answer for this graph here (``LibraryRefusal``), not a failure."""

    @property
    def headline(self) -> str:
        """The reason's first line, at most 200 characters: cuDNN's reasons carry every
        engine's refusal (all of it goes to the debug log)."""
        head = self.reason.splitlines()[0] if self.reason else ""
        return head if len(head) <= 200 else head[:200] + "..."


@dataclass(frozen=True)
class Refusal:
    """Why a backend built no kernel for an op."""

    reason: str
    settled: bool


Allocate = Callable[[int, "Step"], list[torch.Tensor]]
"""Output tensors for step ``i`` (a kernel step), in place of fresh allocations."""
AfterStep = Callable[[int, "Step", list[torch.Tensor], list[Value]], None]
"""Called once step ``i`` is enqueued, with its inputs and outputs (profiling, replay)."""


class GpuExecutor:
    def __init__(
        self,
        program: Program,
        device: torch.device | str = "cuda",
        recorded: Recorded | None = None,
        precompile: bool = True,
        give_back: bool = True,
    ):
        """``recorded``: an artifact's kernel records, rebuilt without tuning; None tunes.
        ``precompile``: at compile time, compile every kernel side by side before building
        them one by one (off where the caller compiled them ahead already), and again
        for the groups made of what a library gave back. ``give_back``: a group a library
        cannot build is given back and fused by the other backends; off, it runs as
        torch ops (where only whether the library builds it matters: pricing its
        candidate, which then compiles no kernel it would not time)."""
        self.program = program
        self.device = torch.device(device)
        self._give_back = give_back
        self.context = BuildContext(self.device, recorded, program.base_dir)
        shared = sharing.current()
        params = {op.param_name: _upload(program.params[op.param_name], op, self.device, shared) for op in program.param_ops()}
        self.env = _TorchEnv(params, self.device)
        self.fallbacks: list[Fallback] = []
        self.block = program.entry.body.block
        self.statics: dict[SSAValue, Value] = {}
        self.steps: list[Step] = []
        self.ordinals = ordinals(self.block) if recorded is not None else {}
        """Each op's position among its backend's ops in the program as an artifact holds
        it (what its records are keyed by): when loading, the program as read; when
        compiling (no records to look up while building), the program once the ops given
        back are regrouped, which is what ``save`` writes."""
        ahead = set(self.block.ops) if recorded is None and precompile else set()
        if ahead:  # every backend's kernels side by side, before any is built
            precompile_kernels(list(self.block.ops), self.device)
        built = self._build_givers()
        if recorded is None:
            self.ordinals = ordinals(self.block)
            regrouped = [op for op in self.block.ops if op not in built and op not in ahead]
            if ahead and regrouped:  # the groups made of what a library gave back
                precompile_kernels(regrouped, self.device)
        for op in self.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if isinstance(op, tcp.SOURCE_OPS):
                self.statics.update(zip(op.results, run_stopgap(op, [], self.env)))
                continue
            self.steps.append(self._plan_step(op, built))
        ret = self.block.last_op
        assert isinstance(ret, func.ReturnOp)
        self._returned = list(ret.operands)
        self._dead_after = _dead_after(self.steps, set(self.statics) | set(self._returned))
        self.index_check = self._index_flags()

    def _index_flags(self) -> IndexCheck:
        """One int32 per step whose kernel gathers, each kernel pointed at its own."""
        flagged = [(i, s) for i, s in enumerate(self.steps) if getattr(s.kernel, "index_flag", None) is not None]
        check = IndexCheck([_gathers_of(step, i) for i, step in flagged], self.device)
        for slot, (_, step) in enumerate(flagged):
            step.kernel.index_flag = check.slot(slot)  # type: ignore[union-attr]
        return check

    def _plan_step(self, op: Operation, built: dict[Operation, GroupKernel | None]) -> Step:
        backend = backend_of(op)
        if backend is None:
            if moves_no_data(op):
                return Step(op, "view")
            return Step(op, "torch")
        if backend.gpu_only and self.device.type != "cuda":
            return Step(op, "torch")  # its reference implementation, as on the reference backend
        if op in built:
            kernel = built[op]
        else:
            kernel, refusal = self._build(backend, op)
            if refusal is not None:
                self._fell_back(op, backend.name, refusal)
        if kernel is None:
            return Step(op, "torch")
        return Step(op, backend.name, kernel, [(shape_of(r), torch_dtype(element_of(r))) for r in op.results])

    def _build(self, backend: KernelBackend, op: Operation) -> tuple[GroupKernel | None, Refusal | None]:
        """The op's kernel, or None and why the backend has none."""
        try:
            with progress.span(f"build {backend.name} kernels"):
                kernel = backend.build(op, self.ordinals.get(op), self.context)
        except ArtifactError:  # a changed artifact is refused, not worked around
            raise
        except backend.no_kernel as e:
            return None, Refusal(_reason(e, backend), isinstance(e, LibraryRefusal))
        progress.add(kernels=1)
        return kernel, None

    def _build_givers(self) -> dict[Operation, GroupKernel | None]:
        """The kernels of backends that give back what they cannot build, built first:
        the ops they give back become tcp ops, which the backends that regroup take
        (fused into Triton groups) before the rest is built."""
        built: dict[Operation, GroupKernel | None] = {}  # None: tried, not built
        refused: list[tuple[Operation, KernelBackend, Refusal]] = []
        for op in list(self.block.ops):
            backend = backend_of(op)
            if backend is not None and backend.give_back is not None:
                built[op], refusal = self._build(backend, op)
                if refusal is not None:
                    refused.append((op, backend, refusal))
        given = False
        for op, backend, refusal in refused:
            assert backend.give_back is not None
            if not self._give_back:
                self._fell_back(op, backend.name, refusal)
                continue
            kind = group_attr(op, GROUP_KIND_ATTR) or op.name
            try:
                backend.give_back(op)
            except Exception as e:
                self._fell_back(op, backend.name, Refusal(f"{refusal.reason} (and it has no tcp form here: {e})", False))
                continue
            given = True
            self._fell_back(op, backend.name, refusal, runs_as=_REGROUPED_BY, kind=kind)
        if given:
            for backend in KERNEL_BACKENDS:
                if backend.regroup is not None:
                    backend.regroup(self.program.module)
        return built

    def _fell_back(self, op: Operation, backend: str, refusal: Refusal, runs_as: str = "torch", kind: str | None = None) -> None:
        """Kept in ``fallbacks`` and logged at info level: an executor built to price a
        candidate or a contending program says nothing; the compiled program's own
        fallbacks are said once, by ``announce``."""
        kind = kind or group_attr(op, GROUP_KIND_ATTR) or op.name
        fallback = Fallback(kind, backend, refusal.reason, runs_as, refusal.settled)
        self.fallbacks.append(fallback)
        log.info("dnnc: %s", _fallback_line(fallback))
        if fallback.reason != fallback.headline:
            log.debug("dnnc: %s group %s: %s", backend, kind, fallback.reason)

    @torch.inference_mode()
    def run(
        self, inputs: Sequence[torch.Tensor], allocate: Allocate | None = None, after_step: AfterStep | None = None
    ) -> list[torch.Tensor]:
        """Outputs may be views of ``allocate``'s buffers; callers that reuse those copy them out."""
        env = self.begin(inputs)
        self.run_steps(env, 0, len(self.steps), allocate, after_step)
        return self.returned(env)

    def begin(self, inputs: Sequence[torch.Tensor]) -> dict[SSAValue, Value]:
        """The values a run starts from: the program's inputs and its constants."""
        env: dict[SSAValue, Value] = dict(self.statics)
        env.update(zip(self.block.args, inputs))
        return env

    def returned(self, env: dict[SSAValue, Value]) -> list[torch.Tensor]:
        return [env[v] for v in self._returned]

    def run_steps(
        self,
        env: dict[SSAValue, Value],
        start: int,
        stop: int,
        allocate: Allocate | None = None,
        after_step: AfterStep | None = None,
    ) -> None:
        """Enqueue steps ``start`` to ``stop`` (exclusive), reading and adding to ``env``;
        a value is dropped from it after its last use. ``allocate``: each kernel step's
        outputs (else fresh tensors on the current stream)."""
        for index in range(start, stop):
            step, dead = self.steps[index], self._dead_after[index]
            operands = [env[v] for v in step.op.operands]
            if step.kernel is not None:
                if allocate is not None:
                    outs = allocate(index, step)
                else:
                    outs = [torch.empty(shape, dtype=dtype, device=self.device) for shape, dtype in step.out_specs]
                operands = [t if t.is_contiguous() else t.contiguous() for t in operands]
                step.kernel.launch(operands, outs)
            else:
                outs = run_stopgap(step.op, operands, self.env)
            if after_step is not None:
                after_step(index, step, operands, outs)
            env.update(zip(step.op.results, outs))
            for v in dead:  # intermediates go back to the allocator after their last use
                env.pop(v, None)

    def summary(self) -> dict[str, Any]:
        """How many top-level ops each backend runs, and which ops are stopgap torch ops."""
        by_backend = Counter(s.backend for s in self.steps)
        stopgap = Counter(group_attr(s.op, GROUP_KIND_ATTR) or s.op.name for s in self.steps if s.backend == "torch")
        tuned = [getattr(s.kernel, "tuned_ms", None) for s in self.steps]
        return {
            "steps": dict(by_backend),
            "torch_ops": dict(stopgap),
            "fallbacks": [f.__dict__ for f in self.fallbacks],
            "tuned_ms_total": sum(ms for ms in tuned if ms is not None),
            "user_kernels": {
                s.op.kernel_name: getattr(s.kernel, "variant", "?") for s in self.steps if isinstance(s.op, extern.DispatchOp)
            },
            "memory": self.memory(),
        }

    def memory(self) -> dict[str, int]:
        """Device bytes the built program holds apart from its intermediates (the arena):
        its weights and the kernels' own workspaces (cuDNN plans), each storage counted
        once (weights shared with another bucket's program count here too)."""
        spaces = [getattr(s.kernel, "workspace", None) for s in self.steps]
        return {
            "weights_bytes": _storage_bytes(self.env.params.values()),
            "workspace_bytes": _storage_bytes(t for t in spaces if isinstance(t, torch.Tensor)),
        }

    def announce(self) -> None:
        """Say, once per process, each fallback of this program and the ops left to torch."""
        for fallback in self.fallbacks:
            say_once(f"dnnc: {_fallback_line(fallback)}")
        s = self.summary()
        if s["torch_ops"]:
            ops = ", ".join(f"{n}x {k}" for k, n in sorted(s["torch_ops"].items()))
            say_once(f"dnnc: {s['steps'].get('torch', 0)} ops run as torch ops (stopgap, no generated kernel yet): {ops}")


_REGROUPED_BY = next((b.name for b in KERNEL_BACKENDS if b.regroup is not None), "torch")
"""What runs the ops a backend gives back."""


def _storage_bytes(tensors: Iterable[torch.Tensor]) -> int:
    """The bytes of the storages behind ``tensors``, each storage counted once."""
    return sum({t.untyped_storage().data_ptr(): t.untyped_storage().nbytes() for t in tensors}.values())


def _fallback_line(fallback: Fallback) -> str:
    instead = "torch ops" if fallback.runs_as == "torch" else f"generated {fallback.runs_as} kernels"
    return f"{fallback.backend} group {fallback.kind} runs as {instead} instead: {fallback.headline}"


def _reason(error: Exception, backend: KernelBackend) -> str:
    """A refusal the backend names speaks for itself; any other failure says its type."""
    return str(error) if type(error) in backend.no_kernel else f"{type(error).__name__}: {error}"


def _dead_after(steps: list[Step], keep: set[SSAValue]) -> list[list[SSAValue]]:
    """For each step, the values whose last use it is (never statics or outputs)."""
    last: dict[SSAValue, int] = {}
    for i, step in enumerate(steps):
        for v in step.op.operands:
            last[v] = i
    dead: list[list[SSAValue]] = [[] for _ in steps]
    for v, i in last.items():
        if v not in keep:
            dead[i].append(v)
    return dead


def _gathers_of(step: Step, index: int) -> str:
    """The gathers of a step's group, as a message names them."""
    ops = [op for op in step.op.walk() if isinstance(op, tcp.GATHER_OPS)]
    shown = ", ".join(f"{op.name} from {'x'.join(map(str, shape_of(op.input)))} along axis {scalar(op.axis)}" for op in ops)
    kind = group_attr(step.op, GROUP_KIND_ATTR) or step.op.name
    return f"step {index} ({kind} group: {shown})"
