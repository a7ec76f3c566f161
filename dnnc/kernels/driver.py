"""The few CUDA driver calls a user kernel needs, through ctypes: load a module
(a cubin, or PTX that the driver JIT-compiles), find its function, read limits,
launch on a stream. torch has made its primary context current before any of
these run; nothing here allocates or synchronizes, so launches can be captured
in a CUDA graph.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Sequence

from dnnc.errors import KernelBuildError

_JIT_ERROR_LOG_BUFFER = 5
_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6
FUNC_MAX_THREADS_PER_BLOCK = 0
FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
DEV_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97
DEV_MAX_BLOCK_DIM = (2, 3, 4)
DEV_MAX_GRID_DIM = (5, 6, 7)


class CudaError(RuntimeError):
    pass


@functools.cache
def _lib() -> ctypes.CDLL:
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise KernelBuildError(f"the CUDA driver (libcuda.so.1) cannot be loaded: {e}") from None
    lib.cuGetErrorString.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuModuleLoadDataEx.argtypes = [
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.c_void_p,
        ctypes.c_uint,
        ctypes.POINTER(ctypes.c_int),
        ctypes.POINTER(ctypes.c_void_p),
    ]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    lib.cuFuncGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_void_p]
    lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
    lib.cuDeviceGetAttribute.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_int, ctypes.c_int]
    lib.cuLaunchKernel.argtypes = [
        ctypes.c_void_p,
        *([ctypes.c_uint] * 6),
        ctypes.c_uint,
        ctypes.c_void_p,
        ctypes.POINTER(ctypes.c_void_p),
        ctypes.POINTER(ctypes.c_void_p),
    ]
    return lib


def _check(result: int, doing: str) -> None:
    if result != 0:
        text = ctypes.c_char_p()
        _lib().cuGetErrorString(result, ctypes.byref(text))
        raise CudaError(f"{doing}: CUDA error {result} ({(text.value or b'unknown').decode()})")


def load_function(image: bytes, entry: str, ptx: bool) -> tuple[ctypes.c_void_p, ctypes.c_void_p]:
    """(module, function) from a cubin or PTX image in the current context."""
    lib = _lib()
    module = ctypes.c_void_p()
    log = ctypes.create_string_buffer(8192)
    options = (ctypes.c_int * 2)(_JIT_ERROR_LOG_BUFFER, _JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
    values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
    data = image + b"\0" if ptx and not image.endswith(b"\0") else image
    buffer = ctypes.create_string_buffer(data, len(data))
    result = lib.cuModuleLoadDataEx(ctypes.byref(module), ctypes.cast(buffer, ctypes.c_void_p), 2, options, values)
    if result != 0:
        detail = log.value.decode(errors="replace").strip()
        try:
            _check(result, "loading the module")
        except CudaError as e:
            raise CudaError(f"{e}" + (f": {detail}" if detail else "")) from None
    function = ctypes.c_void_p()
    _check(lib.cuModuleGetFunction(ctypes.byref(function), module, entry.encode()), f"finding {entry!r}")
    return module, function


def function_attribute(function: ctypes.c_void_p, attribute: int) -> int:
    value = ctypes.c_int()
    _check(_lib().cuFuncGetAttribute(ctypes.byref(value), attribute, function), "reading a function attribute")
    return value.value


def set_dynamic_shared_memory(function: ctypes.c_void_p, size: int) -> None:
    _check(_lib().cuFuncSetAttribute(function, FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES, size), "allowing dynamic shared memory")


def device_attribute(ordinal: int, attribute: int) -> int:
    value = ctypes.c_int()
    _check(_lib().cuDeviceGetAttribute(ctypes.byref(value), attribute, ordinal), "reading a device attribute")
    return value.value


def launch(
    function: ctypes.c_void_p, grid: Sequence[int], block: Sequence[int], shared: int, stream: int, params: ctypes.Array
) -> None:
    """Enqueue one launch; ``params`` holds the address of each kernel parameter's value, in order."""
    _check(_lib().cuLaunchKernel(function, *grid, *block, shared, stream, params, None), "launching the kernel")
