"""Device memory the GPU may keep compressed (Compute Data Compression, Ampere and later).

An allocation made with ``cuMemCreate`` and the generic compression type lets the memory
system store a block of it in fewer bytes when its contents allow, and move fewer bytes
between L2 and DRAM. Nothing changes for the kernels: the addresses and the values are
the same; only the allocation differs. On an H200 (``bench/compressible_probe.py``) a copy
of float16 values 84% zeros ran 1.73x faster in it, half zeros scattered at random (a
ReLU of normal values) 1.03x, dense values 0.97x; ResNet-50 with random weights ran no
faster, so a program's arena is put here only where ``compressible_arena`` asks.

``empty_bytes`` hands out such memory as a ``torch.uint8`` tensor where the GPU grants
it, and ``None`` elsewhere (no driver bindings, a GPU without the feature, or the driver
declining: it may give plain memory back, which is then released and reported as
``None``), so the caller falls back to ``torch.empty``. The memory is mapped at its own
virtual address range and released, after the device has finished with it, when the
last tensor that views it is gone.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any

import torch

from dnnc import knobs


def arena(nbytes: int, device: torch.device) -> torch.Tensor:
    """``nbytes`` (at least 1) for a program's intermediates: compressible memory where the
    ``compressible_arena`` setting asks for it and the GPU gives it, else ``torch.empty``."""
    if knobs.get().compressible_arena:
        held = empty_bytes(nbytes, device)
        if held is not None:
            return held
    return torch.empty(max(nbytes, 1), dtype=torch.uint8, device=device)


def _driver() -> Any | None:
    try:
        from cuda.bindings import driver
    except ImportError:
        return None
    return driver


def _ok(returned: Any) -> tuple[bool, Any]:
    driver = _driver()
    result, *values = returned if isinstance(returned, tuple) else (returned,)
    value = values[0] if len(values) == 1 else values
    return result == driver.CUresult.CUDA_SUCCESS, value


@functools.cache
def supported(ordinal: int) -> bool:
    """Whether GPU ``ordinal`` offers compressible memory (and the bindings are here)."""
    driver = _driver()
    if driver is None:
        return False
    attribute = driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED
    ok, value = _ok(driver.cuDeviceGetAttribute(attribute, ordinal))
    return bool(ok and value)


def _properties(ordinal: int) -> Any:
    driver = _driver()
    prop = driver.CUmemAllocationProp()
    prop.type = driver.CUmemAllocationType.CU_MEM_ALLOCATION_TYPE_PINNED
    prop.location.type = driver.CUmemLocationType.CU_MEM_LOCATION_TYPE_DEVICE
    prop.location.id = ordinal
    prop.allocFlags.compressionType = int(driver.CUmemAllocationCompType.CU_MEM_ALLOCATION_COMP_GENERIC)
    return prop


class _Mapping:
    """A compressible allocation mapped at its own address range; ``__cuda_array_interface__``
    lets torch view it, and torch keeps this object alive while any view of it lives."""

    def __init__(self, nbytes: int, address: int, handle: Any, device: torch.device):
        self.nbytes, self.address = nbytes, address
        self.__cuda_array_interface__ = {
            "shape": (nbytes,),
            "typestr": "|u1",
            "data": (address, False),
            "version": 3,
            "strides": None,
        }
        weakref.finalize(self, _release, address, nbytes, handle, device)


def _release(address: int, nbytes: int, handle: Any, device: torch.device) -> None:
    """Unmaps and frees once the device is done with what was queued on the memory."""
    driver = _driver()
    try:
        torch.cuda.synchronize(device)
    except Exception:  # at interpreter exit the context may be gone already
        return
    driver.cuMemUnmap(address, nbytes)
    driver.cuMemAddressFree(address, nbytes)
    driver.cuMemRelease(handle)


def empty_bytes(nbytes: int, device: torch.device) -> torch.Tensor | None:
    """``nbytes`` (at least 1) of compressible memory on ``device`` as ``uint8``, or None
    where the GPU, the driver or the bindings do not give it."""
    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    ordinal = device.index if device.index is not None else torch.cuda.current_device()
    if not supported(ordinal):
        return None
    driver = _driver()
    torch.cuda.init()
    with torch.cuda.device(ordinal):
        torch.cuda.current_stream(ordinal)  # the primary context current on this thread
        prop = _properties(ordinal)
        granularity_kind = driver.CUmemAllocationGranularity_flags.CU_MEM_ALLOC_GRANULARITY_RECOMMENDED
        ok, granularity = _ok(driver.cuMemGetAllocationGranularity(prop, granularity_kind))
        if not ok or not granularity:
            return None
        size = -(-max(nbytes, 1) // granularity) * granularity
        ok, handle = _ok(driver.cuMemCreate(size, prop, 0))
        if not ok:
            return None
        ok, granted = _ok(driver.cuMemGetAllocationPropertiesFromHandle(handle))
        if not ok or granted.allocFlags.compressionType != prop.allocFlags.compressionType:
            driver.cuMemRelease(handle)
            return None
        ok, address = _ok(driver.cuMemAddressReserve(size, granularity, 0, 0))
        if not ok:
            driver.cuMemRelease(handle)
            return None
        address = int(address)
        ok, _ = _ok(driver.cuMemMap(address, size, 0, handle, 0))
        if ok:
            access = driver.CUmemAccessDesc()
            access.location = prop.location
            access.flags = driver.CUmemAccess_flags.CU_MEM_ACCESS_FLAGS_PROT_READWRITE
            ok, _ = _ok(driver.cuMemSetAccess(address, size, [access], 1))
            if not ok:
                driver.cuMemUnmap(address, size)
        if not ok:
            driver.cuMemAddressFree(address, size)
            driver.cuMemRelease(handle)
            return None
        mapping = _Mapping(size, address, handle, torch.device("cuda", ordinal))
        return torch.as_tensor(mapping, device=torch.device("cuda", ordinal))[: max(nbytes, 1)]
