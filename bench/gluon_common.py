"""What the Gluon kernel probes share: Gluon's Hopper calls under the names of the Triton at
hand (Triton 3.6, the device image's, names the TMA copies ``async_copy_*``, the
``cp.async`` copy ``async_copy_global_to_shared``, the warp barrier ``thread_barrier`` and a
shared-memory reinterpret ``_reinterpret``; later versions ``async_load`` / ``async_store``,
``barrier`` and ``reinterpret``), and what a kernel built for sm_90 holds."""

from __future__ import annotations

import re
from typing import Any

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.ampere import async_copy
from triton.experimental.gluon.language.nvidia.hopper import tma

tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared
tma_store = getattr(tma, "async_store", None) or tma.async_copy_shared_to_global
copy_rows = getattr(async_copy, "async_load", None) or async_copy.async_copy_global_to_shared
thread_barrier = getattr(gl, "thread_barrier", None) or gl.barrier

if hasattr(gl.shared_memory_descriptor, "reinterpret"):

    @gluon.jit
    def viewed(view, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
        """``view``'s memory as ``shape`` in ``layout``."""
        return view.reinterpret(dtype, shape, layout)

else:

    @gluon.jit
    def viewed(view, dtype: gl.constexpr, shape: gl.constexpr, layout: gl.constexpr):
        """``view``'s memory as ``shape`` in ``layout``."""
        return view._reinterpret(dtype, shape, layout)


def built_summary(compiled: Any) -> dict[str, Any]:
    """A kernel built for sm_90: its shared memory, its wgmma instructions, the ranks of its
    TMA copies, whether it hands registers between partitions and whether it spills."""
    ptx = compiled.asm["ptx"]
    return {
        "built": True,
        "shared": compiled.metadata.shared,
        "wgmma": len(re.findall(r"wgmma\.mma_async", ptx)),
        "tma": sorted(set(re.findall(r"cp\.async\.bulk\.tensor\.(\dd)", ptx))),
        "setmaxnreg": "setmaxnreg" in ptx,
        "registers_spilled": ".local" in ptx,
    }
