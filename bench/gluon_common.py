"""What the Gluon kernel probes share: Gluon's Hopper calls under the names of the Triton at
hand (Triton 3.6, the device image's, names the TMA copies ``async_copy_*``, the
``cp.async`` copy ``async_copy_global_to_shared``, the warp barrier ``thread_barrier`` and a
shared-memory reinterpret ``_reinterpret``; later versions ``async_load`` / ``async_store``,
``barrier`` and ``reinterpret``), what a kernel built for sm_90 holds, and how a probe's
run starts and keeps its results."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from typing import Any

import triton
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


def printed_builds(compile_only: Callable[[], dict[str, dict]]) -> None:
    """``--compile-only``: every config's build, one line each."""
    for name, result in compile_only().items():
        print(name, result)


def probe_arguments(doc: str, batches: tuple[int, ...], out: str) -> argparse.ArgumentParser:
    """A probe's command line: ``--batches``, ``--out`` (the JSON under ``$OUT``) and
    ``--compile-only`` (build for sm_90, no GPU needed); the probe adds its own."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--batches", default=",".join(map(str, batches)))
    ap.add_argument("--out", default=out)
    ap.add_argument("--compile-only", action="store_true", help="build the kernels for sm_90, no GPU needed")
    return ap


def gpu_run() -> tuple[int, dict[str, Any]]:
    """The GPU's SM count and a result that starts with the device and the versions."""
    import torch

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return sms, {"device": torch.cuda.get_device_name(), "versions": {"torch": torch.__version__, "triton": triton.__version__}}


def kept(found: dict[str, Any], name: str) -> None:
    """``found`` written to ``$OUT/name`` (after each row: a call's time limit keeps what ran)."""
    with open(os.path.join(os.environ.get("OUT", "/tmp"), name), "w") as f:
        json.dump(found, f, indent=1)
