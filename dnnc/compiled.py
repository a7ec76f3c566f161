"""A compiled program as the user holds it: called like the model, saved as an
artifact. Built by ``dnnc.compile`` and by ``dnnc.load``; imports nothing of the
compiler, so a program loaded from an artifact runs without it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.utils._pytree as pytree

from dnnc import knobs, progress
from dnnc.backends.reference import ReferenceExecutor
from dnnc.errors import DnncError, InputError
from dnnc.ir.program import Program
from dnnc.report import CompileReport
from dnnc.runtime.binding import Binding, by_running, checked
from dnnc.runtime.index_check import IndexCheck
from dnnc.runtime.signature import as_tensors, check_inputs, placement, specs_of


class InferenceModule:
    """What a compiled module answers as an inference ``nn.Module`` would."""

    device: str

    def forward(self, *args: Any) -> Any:
        """The same as calling the module (``nn.Module``'s spelling)."""
        return self(*args)

    def eval(self) -> InferenceModule:
        """A compiled program is for inference already: itself."""
        return self

    def train(self, mode: bool = True) -> InferenceModule:
        if mode:
            raise DnncError("a compiled module runs inference only; train the PyTorch model and compile it again")
        return self

    def to(self, *args: Any, **kwargs: Any) -> InferenceModule:
        """Refused: a program is built for its device and dtypes (compile again, with
        ``device=`` or ``dtype=``)."""
        raise DnncError(
            f"a compiled module stays on {self.device} with the dtypes it was compiled for; "
            "compile the model again with device= or dtype="
        )

    def cuda(self, *args: Any, **kwargs: Any) -> InferenceModule:
        return self.to("cuda")

    def cpu(self) -> InferenceModule:
        return self.to("cpu")

    def half(self) -> InferenceModule:
        return self.to(torch.float16)

    def state_dict(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Empty: the weights are part of the program (``save`` writes them), not state to load."""
        return {}

    def parameters(self, recurse: bool = True) -> Iterator[torch.nn.Parameter]:
        """None: nothing in a compiled module trains."""
        return iter(())


class CompiledModule(InferenceModule):
    """A compiled program, called like the model it came from.

    Inputs (torch tensors, or arrays that speak DLPack) are checked against the
    compiled signature before anything runs (tensors at the placement last checked are
    the ones checked, and pass again); outputs come back in the model's
    structure (a tensor, tuple, ...). On a GPU the program runs from one memory
    arena, replayed as a CUDA graph unless ``cuda_graph`` is off.
    """

    def __init__(
        self,
        program: Program,
        report: CompileReport,
        device: str,
        in_spec: Any = None,
        out_spec: Any = None,
        positional: bool = True,
        *,
        recorded: Any = None,
        cuda_graph: bool | None = None,
        target: str | None = None,
        executor: Any = None,
        built_for_target: dict[str, list[dict[str, Any]]] | None = None,
    ):
        """``recorded``: an artifact's kernel records, rebuilt without tuning.
        ``executor``: the program's ``GpuExecutor`` where the compile built it already
        (the partitioner's whole-program contest); else it is built here.
        ``built_for_target``: a GPU program built for ``target`` on a machine without
        that GPU (``cross_compile``): the records of its kernels, which ``save`` writes;
        it runs here on the reference backend."""
        self.program = program
        self.report = report
        self._built_for_target = built_for_target
        self.device = device
        self.target = target or target_of(device)
        """What the program was compiled for: ``cpu`` or ``sm_<capability>``."""
        self.input_specs = specs_of(program.input_types)
        self._in_spec = in_spec
        self._positional = positional  # the example inputs were plain positional tensors
        self._out_spec = out_spec
        self._one_leaf = out_spec is not None and out_spec.is_leaf()
        """The model returns one tensor: the call hands back the program's one output."""
        self._checked: tuple | None = None
        """The ``placement`` of the last inputs that passed ``check_inputs``."""
        self._index_check: IndexCheck | None = None
        """The gathering steps' out-of-range flags (GPU programs that gather; the
        reference backend raises by itself)."""
        self.placed = torch.device("cuda", torch.cuda.current_device()) if device == "cuda" else torch.device("cpu")
        """The device the program was built on and runs on, with its index: the GPU
        current when it was built. Inputs must be there."""
        self._other_gpus = device == "cuda" and torch.cuda.device_count() > 1
        """Whether a call may come while another GPU is current (asked once: a call on a
        one-GPU machine does not ask which GPU is current)."""
        if device == "cuda":
            from dnnc.runtime.arena import ArenaRunner
            from dnnc.runtime.cuda_graph import CudaGraphRunner
            from dnnc.runtime.gpu_executor import GpuExecutor

            started = time.perf_counter()
            progress.stage("gpu-build")
            self._executor: ReferenceExecutor | GpuExecutor = (
                executor if executor is not None else GpuExecutor(program, "cuda", recorded)
            )
            report.add("gpu-build", started, None)  # cuDNN plans built (tuned unless recorded), kernels compiled
            self._executor.announce()
            arena = ArenaRunner(self._executor)
            graphed = knobs.get().cuda_graph if cuda_graph is None else cuda_graph
            self._runner: Any = CudaGraphRunner(arena) if graphed else arena
            self._takes_placement = graphed
            if self._executor.index_check.flags is not None:
                self._index_check = self._executor.index_check
        else:
            self._executor = ReferenceExecutor(program, knobs.get().reference_precision)
            self._runner = self._executor
            self._takes_placement = False

    def __call__(self, *args: Any) -> Any:
        placed = None
        if self._positional and all(type(a) is torch.Tensor for a in args):
            flat: Any = args  # the common call: nothing to flatten or convert
            try:
                placed = placement(args)
            except RuntimeError:  # a tensor without storage (a sparse one)
                check_inputs(self.input_specs, args, self.placed)
                i = next((i for i, a in enumerate(args) if a.layout != torch.strided), 0)
                raise InputError(
                    f"input {i}: expected a dense tensor of {self.input_specs[i].describe()}, got a {args[i].layout} one"
                ) from None
            if placed != self._checked:  # the same tensors as the last checked call pass again
                check_inputs(self.input_specs, args, self.placed)
                self._checked = placed
        else:
            flat = as_tensors(self._flatten(args))
            check_inputs(self.input_specs, flat, self.placed)
        if self._other_gpus and torch.cuda.current_device() != self.placed.index:
            with torch.cuda.device(self.placed):  # its graphs, streams and kernels are that GPU's
                return self._run(flat, placed)
        return self._run(flat, placed)

    def _run(self, flat: Any, placed: tuple | None = None) -> Any:
        if self._index_check is not None:
            self._index_check.before_call()
        outputs = self._runner.run(flat, placed) if self._takes_placement else self._runner.run(flat)
        if self._index_check is not None:
            self._index_check.after_call()
        return self._structured(outputs)

    def check_steps(self, *args: Any) -> list[Any]:
        """Runs the GPU program once on ``args``, step by step outside its CUDA graph, and
        judges each step's outputs against the reference rule of its op on the operands
        it got (``dnnc.runtime.step_check``): a ``StepCheck`` per output, the first one
        not ``ok`` the step to look at when the whole output is off."""
        from dnnc.runtime.gpu_executor import GpuExecutor
        from dnnc.runtime.step_check import check_steps

        if not isinstance(self._executor, GpuExecutor):
            raise DnncError("check_steps judges a GPU program's steps; this one runs on the reference backend")
        flat = as_tensors(self._flatten(args))
        check_inputs(self.input_specs, flat, self.placed)
        return check_steps(self._executor, flat)

    def bind(self, *args: Any) -> Binding:
        """Bind the program to these input tensors for a loop that fills them and calls
        ``replay()`` (``runtime.binding``): the inputs are checked once, here, and on a
        GPU the program is captured as a CUDA graph reading their memory. The binding's
        ``outputs`` (in the model's structure) hold the result for what the inputs hold
        now; every ``replay()`` rewrites them, and nothing else does. Inputs must be torch
        tensors, as they will be filled (an array converted here would be a copy)."""
        leaves = self._flatten(args)
        strangers = [i for i, t in enumerate(leaves) if not isinstance(t, torch.Tensor)]
        if strangers:
            kind = type(leaves[strangers[0]]).__name__
            raise InputError(f"bind: input {strangers[0]} is a {kind}; bind takes the torch tensors it will read at every replay")
        check_inputs(self.input_specs, leaves, self.placed)
        bind = getattr(self._runner, "bind", None)
        outputs, launch = bind(leaves) if bind is not None else by_running(self._runner.run, leaves)
        if self._index_check is not None:
            launch = checked(launch, self._index_check.before_call, self._index_check.after_call)
        return Binding(tuple(leaves), self._structured(outputs), launch, self)

    def _structured(self, outputs: list[Any]) -> Any:
        if self._one_leaf:
            return outputs[0]
        if self._out_spec is None:
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        return pytree.tree_unflatten(outputs, self._out_spec)

    def check_indices(self) -> None:
        """Wait for the calls made so far and raise if a GPU kernel met a gather index
        out of range in any of them. Without this, such an index is reported by a
        later call (the kernel reads 0 for it; see ``runtime.index_check``)."""
        if self._index_check is not None:
            self._index_check.check_now()

    def summary(self) -> dict[str, Any]:
        """What runs the program: steps per backend, ops left to torch, fallbacks with
        their reasons, user kernels and the variant each runs as, and the device bytes it
        holds (``memory``: weights, kernel workspaces, the intermediates' arena), and the
        memset nodes its last CUDA graph writes with fill kernels (``graph_fill_kernels``,
        ``dnnc.graph_memsets``) (GPU); on the CPU one reference step per op."""
        if self.device == "cuda":
            summary = self._executor.summary()  # type: ignore[union-attr]
            summary["memory"]["arena_bytes"] = self.memory_peak_bytes or 0
            summary["graph_fill_kernels"] = getattr(self._runner, "fill_kernels", 0)
            return summary
        if self._built_for_target is not None:
            from dnnc.runtime.kernel_backends import planned_steps

            steps, torch_ops = planned_steps(self.program.entry.body.block)
            return {"steps": steps, "torch_ops": torch_ops, "fallbacks": [], "user_kernels": {}}
        ops = sum(1 for op in self.program.entry.body.block.ops) - 1  # not the return
        return {"steps": {"reference": ops}, "torch_ops": {}, "fallbacks": [], "user_kernels": {}}

    def kernels(self) -> dict[Any, Any]:
        """Each top-level op a kernel runs (GPU) and that kernel (a ``GroupKernel``:
        ``record()``, and what its backend adds, such as a plan or a config), in program
        order; empty on the reference backend."""
        if self.device != "cuda":
            return {}
        return {step.op: step.kernel for step in self._executor.steps if step.kernel is not None}  # type: ignore[union-attr]

    @property
    def memory_peak_bytes(self) -> int | None:
        """Size of the arena that holds every intermediate (GPU only; None on the reference backend)."""
        return getattr(self._runner, "peak_bytes", None)

    def _flatten(self, args: tuple[Any, ...]) -> list[Any]:
        """Inputs structured like the example inputs, flattened to the program's
        tensors. Plain positional tensors are taken as given, so a wrong argument
        is reported by its position."""
        leaves, spec = pytree.tree_flatten((args, {}))
        if self._in_spec is None or spec == self._in_spec:
            return leaves
        if self._positional:
            return list(args)
        raise InputError(f"inputs are structured as {spec}, but the program was compiled for {self._in_spec}")

    @property
    def ir(self) -> str:
        return self.program.text()

    def save_ir(self, path: str | Path) -> Path:
        """Write the IR and its parameters (``x.mlir`` + ``x.safetensors``)."""
        from dnnc.paths import check_writable

        check_writable(path)
        self.program.save(path)
        return Path(path)

    def save(self, path: str | Path) -> Path:
        """Write an artifact (``model.dnnc``) that ``dnnc.load`` runs without compiling
        or tuning again; a path ending in ``.mlir`` writes the IR instead."""
        if Path(path).suffix == ".mlir":
            return self.save_ir(path)
        from dnnc.artifact.store import save_artifact
        from dnnc.paths import check_writable

        check_writable(path)
        return save_artifact(self.artifact_contents(), path)

    def artifact_contents(self) -> Any:
        """What an artifact holds of this module (``artifact.store.ArtifactContents``):
        a copy of the program with its user kernels embedded, its structure, kernel
        records and summary."""
        from dnnc.artifact.kernels import embed_user_kernels, kernel_records, portable_kernels
        from dnnc.artifact.store import ArtifactContents

        structure = {
            "in_spec": _spec_text(self._in_spec),
            "out_spec": _spec_text(self._out_spec),
            "positional": self._positional,
        }
        summary: dict[str, Any] = {"memory_peak_bytes": self.memory_peak_bytes}
        kernels: dict[str, list[dict[str, Any]]] = {}
        program, files = self.program, {}
        if self.device == "cuda":
            executor = self._executor
            summary.update(self.summary(), device_name=torch.cuda.get_device_name(executor.device))  # type: ignore[union-attr]
            kernels = kernel_records(executor)
            program, files = embed_user_kernels(self.program, executor.steps)  # type: ignore[union-attr]
        elif self._built_for_target is not None:
            summary.update(self.summary(), device_name=None)
            kernels = self._built_for_target
        program = portable_kernels(program)
        return ArtifactContents(program, self.target, structure, kernels, summary, files=files)


def target_of(device: str) -> str:
    """``cpu``, or the current GPU's ``sm_<major><minor>``."""
    if device != "cuda":
        return "cpu"
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def _spec_text(spec: Any) -> str | None:
    if spec is None:
        return None
    try:
        return pytree.treespec_dumps(spec)
    except Exception:  # a container type pytree cannot serialise: outputs come back flat
        return None


def _spec_from_text(text: str | None) -> Any:
    return None if text is None else pytree.treespec_loads(text)
