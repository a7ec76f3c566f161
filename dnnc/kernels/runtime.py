"""A user kernel on one GPU: the variant chosen for it, checks before each
launch, and the launch itself.

The variant is picked once per device (``select.ranked``): the best cubin,
else PTX that the driver JIT-compiles (warned), else the reference
implementation (warned); an object that fails to load is skipped with its
reason. The choice is logged and kept in ``variant`` for summaries and
artifacts. Before every launch the tensors are checked against the declaration
(count, dtype, shape symbols, device, contiguity) and the grid against the
device's limits, so a wrong call is an error naming the binding, never a fault.
"""

from __future__ import annotations

import ctypes
import logging
import threading
import warnings
from collections.abc import Sequence
from typing import Any

import torch

from dnnc.errors import KernelBuildError, KernelDeclarationError
from dnnc.kernels import driver
from dnnc.kernels.declaration import KernelDecl
from dnnc.kernels.objects import KernelObject
from dnnc.kernels.reference import run_reference
from dnnc.kernels.select import describe_objects, ranked

log = logging.getLogger("dnnc.kernels")

_CTYPES = {"i32": ctypes.c_int32, "i64": ctypes.c_int64, "f32": ctypes.c_float}


class KernelVariantWarning(UserWarning):
    """A user kernel runs from PTX (JIT-compiled) or from its reference, not from a cubin for this GPU."""


class LoadedKernel:
    """One declared kernel ready to launch on one device."""

    def __init__(self, decl: KernelDecl, objects: Sequence[KernelObject], device: torch.device):
        self.decl = decl
        self.device = device
        self.objects = list(objects)
        major, minor = torch.cuda.get_device_capability(device)
        self.capability = major * 10 + minor
        self.function: Any = None
        self.chosen: KernelObject | None = None
        self._module: Any = None
        self._plans: dict[tuple[object, ...], _Plan] = {}
        self.max_grid: tuple[int, ...] = (2**31 - 1, 65535, 65535)  # read from the device when an object loads
        self._other_gpus = torch.cuda.device_count() > 1
        """Whether a launch may come while another GPU is current (asked once, so a launch
        on a one-GPU machine does not ask which GPU is current)."""
        here = f"sm_{self.capability}"
        refused: list[str] = []
        with torch.cuda.device(device):
            torch.cuda.current_stream(device)  # the primary context is current from here on
            for obj in ranked(self.objects, self.capability):
                try:
                    self._load(obj)
                except (driver.CudaError, KernelDeclarationError) as e:
                    refused.append(f"{obj.describe()} ({e})")
                    log.warning("dnnc: kernel %s: the %s object does not load on %s: %s", decl.name, obj.describe(), here, e)
                    continue
                break
        if self.chosen is None:
            listed = describe_objects(self.objects) + (f"; refused: {'; '.join(refused)}" if refused else "")
            if decl.reference is None:
                raise KernelBuildError(
                    f"kernel {decl.name}: no object runs on {here} (objects: {listed}) and it has no reference implementation"
                )
            self.variant = "reference"
            warnings.warn(
                f"kernel {decl.name}: no object runs on {here} (objects: {listed}); running its reference implementation",
                KernelVariantWarning,
                stacklevel=3,
            )
        elif self.chosen.kind == "ptx":
            self.variant = f"{self.chosen.describe()}, JIT-compiled for {here}"
            warnings.warn(
                f"kernel {decl.name}: no cubin for {here} among its objects ({describe_objects(self.objects)}); "
                f"the driver JIT-compiles its {self.chosen.target} PTX",
                KernelVariantWarning,
                stacklevel=3,
            )
        else:
            self.variant = self.chosen.describe()
        log.info("dnnc: kernel %s runs on %s as %s", decl.name, here, self.variant)

    def _load(self, obj: KernelObject) -> None:
        module, function = driver.load_function(obj.data, self.decl.entry, obj.kind == "ptx")
        allowed = driver.max_threads_per_block(function)
        threads = self.decl.block[0] * self.decl.block[1] * self.decl.block[2]
        if threads > allowed:
            raise KernelDeclarationError(
                f"block {list(self.decl.block)} has {threads} threads, but this build of {self.decl.entry!r} allows {allowed} "
                "(registers or shared memory limit it)"
            )
        ordinal = self.device.index if self.device.index is not None else torch.cuda.current_device()
        self.max_grid = driver.max_grid(ordinal)
        max_block = driver.max_block(ordinal)
        if any(b > m for b, m in zip(self.decl.block, max_block)):
            raise KernelDeclarationError(f"block {list(self.decl.block)} exceeds this GPU's {list(max_block)}")
        if self.decl.shared_memory:
            limit = driver.max_shared_memory_optin(ordinal)
            if self.decl.shared_memory > limit:
                raise KernelDeclarationError(
                    f"shared_memory {self.decl.shared_memory} bytes exceeds this GPU's {limit} per block"
                )
            if self.decl.shared_memory > 48 * 1024:
                driver.set_dynamic_shared_memory(function, self.decl.shared_memory)
        self._module, self.function, self.chosen = module, function, obj

    # Calls -------------------------------------------------------------------------------

    def plan(self, inputs: Sequence[torch.Tensor], constants: Sequence[int | float] = ()) -> _Plan:
        """What a call with these input shapes, dtypes and constants launches; checked
        against the declaration on the first call of each signature, then reused."""
        key = (tuple((t.shape, t.dtype) for t in inputs), tuple(constants))
        planned = self._plans.get(key)
        if planned is None:
            if len(self._plans) >= 64:  # callers varying their constants: keep the cache small
                self._plans.clear()
            planned = _Plan(self.decl, inputs, constants)
            if any(g > m for g, m in zip(planned.grid, self.max_grid)):
                raise self.decl.fail(f"grid {list(planned.grid)} exceeds this GPU's {list(self.max_grid)}")
            self._plans[key] = planned
        return planned

    def run(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], constants: Sequence[int | float]) -> None:
        """Check, then enqueue on the current stream: ``readwrite`` inputs are copied
        into their outputs first and updated there (the inputs are left as they were)."""
        plan = self.plan(inputs, constants)
        self._check_tensors(plan, inputs, outputs)
        if self.function is None:
            results = run_reference(self.decl, list(inputs), list(constants))
            for out, value in zip(outputs, results):
                out.copy_(value)
            return
        for i, j in plan.tied:
            outputs[j].copy_(inputs[i])
        tensors = (*inputs, *outputs)
        stream = torch.cuda.current_stream(self.device).cuda_stream
        with plan.lock:  # the pointer slots are shared by every call of this signature
            for slot, index in enumerate(plan.binding_tensors):
                plan.pointers[slot] = tensors[index].data_ptr()
            if self._other_gpus and torch.cuda.current_device() != self.device.index:
                with torch.cuda.device(self.device):  # its module is that GPU's context's
                    driver.launch(self.function, plan.grid, self.decl.block, self.decl.shared_memory, stream, plan.params)
            else:
                driver.launch(self.function, plan.grid, self.decl.block, self.decl.shared_memory, stream, plan.params)

    def _check_tensors(self, plan: _Plan, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        if len(outputs) != len(plan.out_specs):
            raise self.decl.fail(f"expected {len(plan.out_specs)} output tensor(s), got {len(outputs)}")
        for b, t, (shape, dtype) in zip(self.decl.outputs, outputs, plan.out_specs):
            if t.shape != shape or t.dtype != dtype:
                raise self.decl.fail(f"output {b.name!r} must be {list(shape)} {b.dtype}, got {list(t.shape)} {t.dtype}")
        for b, t in (*zip(self.decl.inputs, inputs), *zip(self.decl.outputs, outputs)):
            if not t.is_cuda or (self.device.index is not None and t.get_device() != self.device.index):
                raise self.decl.fail(f"binding {b.name!r} is on {t.device}, the kernel was loaded for {self.device}")
            if not t.is_contiguous():
                raise self.decl.fail(f"binding {b.name!r} must be contiguous (row-major), got strides {list(t.stride())}")


class _Plan:
    """One call signature of a kernel: its grid, output specs, which tensor fills each
    pointer parameter, and the kernel's parameter array (pointer slots written per
    call, push constants fixed), built once."""

    def __init__(self, decl: KernelDecl, inputs: Sequence[torch.Tensor], constants: Sequence[int | float]):
        symbols = decl.bind([tuple(t.shape) for t in inputs], [t.dtype for t in inputs])
        self.grid = decl.grid_for(symbols)
        self.symbols = symbols
        self.out_specs = [(torch.Size(s), b.torch_dtype) for b, s in zip(decl.outputs, decl.output_shapes(symbols))]
        values = decl.constant_values(symbols, constants)
        in_index = {b.name: i for i, b in enumerate(decl.inputs)}
        out_index = {b.name: len(decl.inputs) + j for j, b in enumerate(decl.outputs)}
        # a readwrite binding is launched on its output, which holds a copy of its input
        self.binding_tensors = [out_index.get(b.name, in_index.get(b.name)) for b in decl.bindings]
        self.tied = [(in_index[b.name], out_index[b.name] - len(decl.inputs)) for b in decl.bindings if b.access == "readwrite"]
        self.pointers = (ctypes.c_void_p * len(decl.bindings))()
        self._constants = [_CTYPES[c.type](v) for c, v in zip(decl.push_constants, values)]
        addresses = [ctypes.addressof(self.pointers) + i * ctypes.sizeof(ctypes.c_void_p) for i in range(len(decl.bindings))]
        addresses += [ctypes.addressof(c) for c in self._constants]
        self.params = (ctypes.c_void_p * len(addresses))(*addresses)
        self.lock = threading.Lock()


class ExternKernel:
    """A ``GroupKernel`` for the GPU executor: one ``extern.dispatch`` with its constants."""

    backend = "extern"

    def __init__(self, loaded: LoadedKernel, constants: Sequence[int | float]):
        self.loaded = loaded
        self.constants = list(constants)
        self.variant = loaded.variant

    def record(self) -> None:
        """Nothing: an artifact carries the kernel's objects as members of their own."""
        return None

    def launch(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        self.loaded.run(inputs, outputs, self.constants)
