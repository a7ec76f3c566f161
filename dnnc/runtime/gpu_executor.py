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

How kernels are obtained is a ``KernelProvider``: ``TunedKernels`` (compile time:
tune cuDNN plans and Triton configs) or an artifact's recorded choices.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.traits import IsTerminator

from dnnc.backends.interface import GROUP_KIND_ATTR, GroupKernel, group_attr
from dnnc.backends.reference import Value, execute
from dnnc.backends.triton import is_triton_group
from dnnc.errors import ArtifactError
from dnnc.ir import cudnn, extern, tcp
from dnnc.ir.attrs import scalar
from dnnc.ir.program import Program
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.log import say_once
from dnnc.runtime.index_check import IndexCheck

log = logging.getLogger("dnnc.gpu")


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


class KernelProvider(Protocol):
    """Builds the kernel of one cuDNN graph or Triton group; raising falls back to torch ops."""

    def cudnn(self, op: cudnn.GraphOp, device: torch.device, signature: str) -> GroupKernel: ...

    def triton(self, op: tcp.IsolatedGroupOp, ordinal: int | None, device: torch.device) -> GroupKernel:
        """``ordinal``: the group's position among the program's Triton groups (None: a group
        made at build time from a cuDNN graph with no engine)."""
        ...

    def extern(self, op: extern.DispatchOp, device: torch.device, base: Path | None) -> GroupKernel:
        """A user kernel; ``base``: the directory its declaration's relative paths start from."""
        ...


class TunedKernels:
    """Compile time: cuDNN plans tuned (or rebuilt from the plan cache), Triton configs timed."""

    def cudnn(self, op: cudnn.GraphOp, device: torch.device, signature: str) -> GroupKernel:
        from dnnc.backends.cudnn import build_kernel

        return build_kernel(op, device, signature)

    def triton(self, op: tcp.IsolatedGroupOp, ordinal: int | None, device: torch.device) -> GroupKernel:
        from dnnc.backends.triton import compile_group

        return compile_group(op, device)

    def extern(self, op: extern.DispatchOp, device: torch.device, base: Path | None) -> GroupKernel:
        from dnnc.kernels.objects import kernel_objects

        return extern_kernel(op, device, lambda decl: kernel_objects(decl, base=base))


def extern_kernel(op: extern.DispatchOp, device: torch.device, objects: Callable[[Any], Any]) -> GroupKernel:
    """The dispatch's kernel loaded on ``device`` (once per declaration and device) with its constants."""
    from dnnc.kernels.custom import loaded_kernel
    from dnnc.kernels.runtime import ExternKernel, LoadedKernel

    decl = op.declaration()
    loaded: LoadedKernel = loaded_kernel(decl, device, objects(decl))
    return ExternKernel(loaded, op.constant_values())


Allocate = Callable[[int, "Step"], list[torch.Tensor]]
"""Output tensors for step ``i`` (a kernel step), in place of fresh allocations."""
AfterStep = Callable[[int, "Step", list[torch.Tensor], list[Value]], None]
"""Called once step ``i`` is enqueued, with its inputs and outputs (profiling, replay)."""


class GpuExecutor:
    def __init__(self, program: Program, device: torch.device | str = "cuda", kernels: KernelProvider | None = None):
        self.program = program
        self.device = torch.device(device)
        self.kernels = kernels or TunedKernels()
        params = {
            op.param_name: program.params[op.param_name].to(self.device, torch_dtype(element_of(op.result))).contiguous()
            for op in program.param_ops()
        }
        self.env = _TorchEnv(params, self.device)
        self.fallbacks: list[Fallback] = []
        self.block = program.entry.body.block
        self.statics: dict[SSAValue, Value] = {}
        self.steps: list[Step] = []
        self._triton_ordinals = {op: i for i, op in enumerate(o for o in self.block.ops if is_triton_group(o))}
        """Positions among the program's own Triton groups (what an artifact's records are keyed by)."""
        graphs = self._build_graphs()
        for op in self.block.ops:
            if isinstance(op, func.ReturnOp):
                break
            if isinstance(op, tcp.SOURCE_OPS):
                self.statics.update(zip(op.results, run_stopgap(op, [], self.env)))
                continue
            self.steps.append(self._plan_step(op, graphs))
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

    def _plan_step(self, op: Operation, graphs: dict[Operation, GroupKernel]) -> Step:
        specs = [(shape_of(r), torch_dtype(element_of(r))) for r in op.results]
        if isinstance(op, cudnn.GraphOp):
            kernel = graphs.get(op)
            return Step(op, "cudnn", kernel, specs) if kernel is not None else Step(op, "torch")
        if is_triton_group(op):
            kernel = self._triton_kernel(op, self._triton_ordinals.get(op))
            return Step(op, "triton", kernel, specs) if kernel is not None else Step(op, "torch")
        if isinstance(op, extern.DispatchOp):
            if self.device.type != "cuda":
                return Step(op, "torch")  # its reference implementation, as on the reference backend
            return Step(op, "extern", self.kernels.extern(op, self.device, self.program.base_dir), specs)
        if isinstance(op, tcp.ReshapeOp):
            return Step(op, "view")  # a row-major reshape moves no data
        return Step(op, "torch")

    def _build_graphs(self) -> dict[Operation, GroupKernel]:
        """Every cuDNN graph's kernel (identical graphs built once). The graphs cuDNN
        builds none for are raised to tcp and fused into Triton groups in their place."""
        from dnnc.backends.cudnn import GraphUnsupported, RaiseError, graph_signature, raise_graph
        from dnnc.backends.triton import TritonFuse
        from dnnc.errors import BackendUnavailable
        from dnnc.ir.context import make_context

        kernels: dict[Operation, GroupKernel] = {}
        by_signature: dict[str, GroupKernel] = {}
        unsupported: list[tuple[cudnn.GraphOp, str]] = []
        for op in [o for o in self.block.ops if isinstance(o, cudnn.GraphOp)]:
            sig = graph_signature(op)
            if sig in by_signature:
                op.plan = cudnn_plan_attr(by_signature[sig])
                kernels[op] = by_signature[sig]
                continue
            try:
                kernels[op] = by_signature[sig] = self.kernels.cudnn(op, self.device, sig)
            except (GraphUnsupported, BackendUnavailable) as e:
                unsupported.append((op, str(e)))
        raised = False
        for op, reason in unsupported:
            kind = group_attr(op, GROUP_KIND_ATTR) or op.name
            try:
                raise_graph(op)
            except RaiseError as e:
                self._fell_back(op, "cudnn", f"{reason} (and it has no tcp form here: {e})")
                continue
            raised = True
            self._fell_back(op, "cudnn", reason, runs_as="triton", kind=kind)
        if raised:
            TritonFuse().apply(make_context(), self.program.module)
        return kernels

    def _triton_kernel(self, op: tcp.IsolatedGroupOp, ordinal: int | None) -> GroupKernel | None:
        try:
            return self.kernels.triton(op, ordinal, self.device)
        except ImportError as e:
            self._fell_back(op, "triton", f"the Triton backend is not available: {e}")
            return None
        except ArtifactError:  # a changed artifact is refused, not worked around
            raise
        except Exception as e:  # the stopgap runs the group instead
            self._fell_back(op, "triton", f"{type(e).__name__}: {e}")
            return None

    def _fell_back(self, op: Operation, backend: str, reason: str, runs_as: str = "torch", kind: str | None = None) -> None:
        kind = kind or group_attr(op, GROUP_KIND_ATTR) or op.name
        self.fallbacks.append(Fallback(kind, backend, reason, runs_as))
        # cuDNN's reasons carry every engine's refusal: one line here, all of it in the debug log
        head = reason.splitlines()[0] if reason else ""
        short = head if len(head) <= 200 else head[:200] + "..."
        instead = "generated Triton kernels" if runs_as == "triton" else "torch ops"
        log.warning("dnnc: %s group %s runs as %s instead: %s", backend, kind, instead, short)
        if short != reason:
            log.debug("dnnc: %s group %s: %s", backend, kind, reason)

    @torch.inference_mode()
    def run(
        self, inputs: Sequence[torch.Tensor], allocate: Allocate | None = None, after_step: AfterStep | None = None
    ) -> list[torch.Tensor]:
        """Outputs may be views of ``allocate``'s buffers; callers that reuse those copy them out."""
        env: dict[SSAValue, Value] = dict(self.statics)
        env.update(zip(self.block.args, inputs))
        for index, (step, dead) in enumerate(zip(self.steps, self._dead_after)):
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
        return [env[v] for v in self._returned]

    def summary(self) -> dict[str, Any]:
        """How many top-level ops each backend runs, and which ops are stopgap torch ops."""
        by_backend = Counter(s.backend for s in self.steps)
        stopgap = Counter(group_attr(s.op, GROUP_KIND_ATTR) or s.op.name for s in self.steps if s.backend == "torch")
        tuned = [getattr(s.kernel, "plan", None) for s in self.steps if s.backend == "cudnn"]
        return {
            "steps": dict(by_backend),
            "torch_ops": dict(stopgap),
            "fallbacks": [f.__dict__ for f in self.fallbacks],
            "cudnn_tuned_ms_total": sum(p.ms for p in tuned if p is not None and p.ms is not None),
            "user_kernels": {
                s.op.kernel_name: getattr(s.kernel, "variant", "?") for s in self.steps if isinstance(s.op, extern.DispatchOp)
            },
        }

    def announce(self) -> None:
        s = self.summary()
        if s["torch_ops"]:
            ops = ", ".join(f"{n}x {k}" for k, n in sorted(s["torch_ops"].items()))
            say_once(f"dnnc: {s['steps'].get('torch', 0)} ops run as torch ops (stopgap, no generated kernel yet): {ops}")


def cudnn_plan_attr(kernel: Any) -> StringAttr:
    return StringAttr(kernel.plan.to_json())


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
