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
        self.function: ctypes.c_void_p | None = None
        self.chosen: KernelObject | None = None
        self._module: Any = None
        self._grids: dict[tuple[tuple[int, ...], ...], tuple[tuple[int, int, int], dict[str, int]]] = {}
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
        allowed = driver.function_attribute(function, driver.FUNC_MAX_THREADS_PER_BLOCK)
        threads = self.decl.block[0] * self.decl.block[1] * self.decl.block[2]
        if threads > allowed:
            raise KernelDeclarationError(
                f"block {list(self.decl.block)} has {threads} threads, but this build of {self.decl.entry!r} allows {allowed} "
                "(registers or shared memory limit it)"
            )
        ordinal = self.device.index if self.device.index is not None else torch.cuda.current_device()
        if self.decl.shared_memory:
            limit = driver.device_attribute(ordinal, driver.DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
            if self.decl.shared_memory > limit:
                raise KernelDeclarationError(
                    f"shared_memory {self.decl.shared_memory} bytes exceeds this GPU's {limit} per block"
                )
            if self.decl.shared_memory > 48 * 1024:
                driver.set_dynamic_shared_memory(function, self.decl.shared_memory)
        self._module, self.function, self.chosen = module, function, obj

    # Calls -------------------------------------------------------------------------------

    def plan(self, inputs: Sequence[torch.Tensor]) -> tuple[tuple[int, int, int], dict[str, int]]:
        """(grid, symbols) for these input shapes; checked against the declaration once per shape."""
        shapes = tuple(tuple(t.shape) for t in inputs)
        planned = self._grids.get(shapes)
        if planned is None:
            symbols = self.decl.bind(shapes, [t.dtype for t in inputs])
            planned = self._grids[shapes] = (self.decl.grid_for(symbols), symbols)
        else:
            for b, t in zip(self.decl.inputs, inputs):
                if t.dtype != b.torch_dtype:
                    self.decl.bind(shapes, [t.dtype for t in inputs])  # raises, naming the binding
        return planned

    def output_specs(self, symbols: dict[str, int]) -> list[tuple[tuple[int, ...], torch.dtype]]:
        return [(s, b.torch_dtype) for b, s in zip(self.decl.outputs, self.decl.output_shapes(symbols))]

    def run(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], constants: Sequence[int | float]) -> None:
        """Check, then enqueue on the current stream: ``readwrite`` inputs are copied
        into their outputs first and updated there (the inputs are left as they were)."""
        grid, symbols = self.plan(inputs)
        self._check_tensors(inputs, outputs, symbols)
        values = self.decl.constant_values(symbols, constants)
        tied = {b.name: t for b, t in zip(self.decl.inputs, inputs) if b.access == "readwrite"}
        if self.function is None:
            results = run_reference(self.decl, list(inputs), list(constants))
            for out, value in zip(outputs, results):
                out.copy_(value)
            return
        by_name = dict(zip((b.name for b in self.decl.outputs), outputs))
        for name, source in tied.items():
            by_name[name].copy_(source)
        by_name.update({b.name: t for b, t in zip(self.decl.inputs, inputs) if b.access == "read"})
        args: list[Any] = [ctypes.c_void_p(by_name[b.name].data_ptr()) for b in self.decl.bindings]
        args += [_CTYPES[c.type](v) for c, v in zip(self.decl.push_constants, values)]
        stream = torch.cuda.current_stream(self.device).cuda_stream
        driver.launch(self.function, grid, self.decl.block, self.decl.shared_memory, stream, args)

    def _check_tensors(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor], symbols: dict[str, int]) -> None:
        specs = self.output_specs(symbols)
        if len(outputs) != len(specs):
            raise self.decl.fail(f"expected {len(specs)} output tensor(s), got {len(outputs)}")
        named = [*zip(self.decl.inputs, inputs), *zip(self.decl.outputs, outputs)]
        for (b, t), spec in zip(named[len(inputs) :], specs):
            if tuple(t.shape) != spec[0] or t.dtype != spec[1]:
                raise self.decl.fail(f"output {b.name!r} must be {list(spec[0])} {b.dtype}, got {list(t.shape)} {t.dtype}")
        for b, t in named:
            if t.device != self.device and not (t.device.type == "cuda" and self.device.index is None):
                raise self.decl.fail(f"binding {b.name!r} is on {t.device}, the kernel was loaded for {self.device}")
            if not t.is_contiguous():
                raise self.decl.fail(f"binding {b.name!r} must be contiguous (row-major), got strides {list(t.stride())}")


class ExternKernel:
    """A ``GroupKernel`` for the GPU executor: one ``extern.dispatch`` with its constants."""

    backend = "extern"

    def __init__(self, loaded: LoadedKernel, constants: Sequence[int | float]):
        self.loaded = loaded
        self.constants = list(constants)
        self.variant = loaded.variant

    def launch(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        self.loaded.run(inputs, outputs, self.constants)
