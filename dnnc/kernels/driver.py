"""The few CUDA driver calls a user kernel needs, through NVIDIA's own Python
bindings (``cuda.bindings.driver``, part of dnnc[cuda]): load a module (a cubin, or
PTX that the driver JIT-compiles), find its function, read limits, launch on a
stream. torch has made its primary context current before any of these run; nothing
here allocates or synchronizes, so launches can be captured in a CUDA graph.

The bindings are imported on first use, so a machine without them (or without a
driver) fails only where a user kernel is loaded, with a ``KernelBuildError``.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence
from typing import Any

from dnnc.errors import KernelBuildError


class CudaError(RuntimeError):
    pass


@functools.cache
def bindings() -> Any:
    try:
        from cuda.bindings import driver
    except ImportError as e:
        raise KernelBuildError(f"user kernels need NVIDIA's CUDA Python bindings (pip install 'dnnc[cuda]'): {e}") from None
    return driver


def checked(returned: Any, doing: str) -> Any:
    """The values a binding returned after its ``CUresult``; raises ``CudaError`` where it is not success."""
    driver = bindings()
    result, *values = returned if isinstance(returned, tuple) else (returned,)
    if result != driver.CUresult.CUDA_SUCCESS:
        _, text = driver.cuGetErrorString(result)
        raise CudaError(f"{doing}: CUDA error {int(result)} ({(text or b'unknown').decode()})")
    return values[0] if len(values) == 1 else values


def load_function(image: bytes, entry: str, ptx: bool) -> tuple[Any, Any]:
    """(module, function) from a cubin or PTX image in the current context; a PTX
    image the driver cannot compile is reported with the driver's log."""
    driver = bindings()
    jit = driver.CUjit_option
    log = bytearray(8192)
    data = image + b"\0" if ptx and not image.endswith(b"\0") else image
    options = [jit.CU_JIT_ERROR_LOG_BUFFER, jit.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES]
    try:
        module = checked(driver.cuModuleLoadDataEx(data, len(options), options, [log, len(log)]), "loading the module")
    except CudaError as e:
        detail = log.split(b"\0", 1)[0].decode(errors="replace").strip()
        raise CudaError(f"{e}" + (f": {detail}" if detail else "")) from None
    function = checked(driver.cuModuleGetFunction(module, entry.encode()), f"finding {entry!r}")
    return module, function


def max_threads_per_block(function: Any) -> int:
    """How many threads a block of this function may have (its registers and the GPU's limit)."""
    attribute = bindings().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
    return int(checked(bindings().cuFuncGetAttribute(attribute, function), "reading a function attribute"))


def set_dynamic_shared_memory(function: Any, size: int) -> None:
    attribute = bindings().CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    checked(bindings().cuFuncSetAttribute(function, attribute, size), "allowing dynamic shared memory")


def _device_attribute(ordinal: int, name: str) -> int:
    attribute = getattr(bindings().CUdevice_attribute, f"CU_DEVICE_ATTRIBUTE_{name}")
    return int(checked(bindings().cuDeviceGetAttribute(attribute, ordinal), "reading a device attribute"))


def max_block(ordinal: int) -> tuple[int, int, int]:
    """The largest block of the GPU, per dimension."""
    return tuple(_device_attribute(ordinal, f"MAX_BLOCK_DIM_{axis}") for axis in "XYZ")  # type: ignore[return-value]


def max_grid(ordinal: int) -> tuple[int, int, int]:
    """The largest grid of the GPU, per dimension."""
    return tuple(_device_attribute(ordinal, f"MAX_GRID_DIM_{axis}") for axis in "XYZ")  # type: ignore[return-value]


def max_shared_memory_optin(ordinal: int) -> int:
    """The most shared memory a block may ask for once its function allows it."""
    return _device_attribute(ordinal, "MAX_SHARED_MEMORY_PER_BLOCK_OPTIN")


def launch(function: Any, grid: Sequence[int], block: Sequence[int], shared: int, stream: int, params: ctypes.Array) -> None:
    """Enqueue one launch; ``params`` holds the address of each kernel parameter's value, in order."""
    driver = bindings()
    returned = driver.cuLaunchKernel(function, *grid, *block, shared, stream, ctypes.addressof(params), 0)
    if returned[0] != driver.CUresult.CUDA_SUCCESS:
        checked(returned, "launching the kernel")
