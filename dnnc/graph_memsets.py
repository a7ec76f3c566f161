"""A captured CUDA graph's memset nodes become kernel nodes that write the same values.

cuDNN zeroes a small workspace before some of its convolution kernels (ResNet-50's
3x3 convolutions at batch 128 on an H200: ten a call) with ``cudaMemsetAsync``, which a
capture records as a memset node. Replayed, the kernel after such a node started 5-6 us
after the memset ended, where one kernel follows another within about 1 us: those ten
stretches were most of the call's idle GPU time (``bench/compile_profile.py``'s
``timeline``). A fill kernel in the memset's place writes the same bytes and keeps the
replay on kernel nodes.

The fill kernels are PTX written here (nothing to compile: the driver loads PTX in a
millisecond), one per element size a memset node may have (1, 2, 4 bytes), each thread
writing one element of one row. The graph is changed node by node so that it is right at
every point: the fill kernel is added with the memset's dependencies, made a dependency
of the memset's dependents, and only then the memset removed; where the driver refuses a
step the graph keeps its memset.
"""

from __future__ import annotations

import ctypes
import functools
import logging
from collections.abc import Callable
from typing import Any

from dnnc.errors import KernelBuildError
from dnnc.kernels.driver import CudaError, bindings, checked, load_function

log = logging.getLogger("dnnc.gpu")

FILL_THREADS = 256
MAX_FILL_BYTES = 64 << 20
"""Larger memsets stay memset nodes: their own time dwarfs the gap after them, and the
copy engine writes large ranges faster than a one-element-per-thread kernel."""

_STORE = {1: ("u8", 0), 2: ("u16", 1), 4: ("u32", 2)}
"""Element size -> (PTX store type, log2 of the size)."""


def _fill_entry(size: int) -> str:
    kind, shift = _STORE[size]
    value = "%r1" if size == 4 else "%rs1"
    narrow = "" if size == 4 else "\tcvt.u16.u32 %rs1, %r1;\n"
    return f""".visible .entry dnnc_fill_{kind}(
\t.param .u64 p_dst,
\t.param .u64 p_pitch,
\t.param .u64 p_width,
\t.param .u32 p_value
)
{{
\t.reg .pred %p<2>;
\t.reg .b16 %rs<2>;
\t.reg .b32 %r<6>;
\t.reg .b64 %rd<10>;
\tld.param.u64 %rd1, [p_dst];
\tld.param.u64 %rd2, [p_pitch];
\tld.param.u64 %rd3, [p_width];
\tld.param.u32 %r1, [p_value];
\tmov.u32 %r2, %ctaid.x;
\tmov.u32 %r3, %ntid.x;
\tmov.u32 %r4, %tid.x;
\tcvt.u64.u32 %rd4, %r4;
\tmad.wide.u32 %rd5, %r2, %r3, %rd4;
\tsetp.ge.u64 %p1, %rd5, %rd3;
\t@%p1 bra DONE_{kind};
\tmov.u32 %r5, %ctaid.y;
\tcvt.u64.u32 %rd6, %r5;
\tmad.lo.u64 %rd7, %rd6, %rd2, %rd1;
\tshl.b64 %rd8, %rd5, {shift};
\tadd.s64 %rd9, %rd7, %rd8;
{narrow}\tst.global.{kind} [%rd9], {value};
DONE_{kind}:
\tret;
}}
"""


FILL_PTX = ".version 7.0\n.target sm_52\n.address_size 64\n\n" + "\n".join(_fill_entry(size) for size in _STORE)
"""The fill kernels: ``dnnc_fill_u8/u16/u32(dst, pitch, width, value)`` write ``value``
to ``width`` elements of row ``blockIdx.y`` (``dst + y * pitch``)."""


@functools.cache
def _fills(device: int) -> dict[int, Any]:
    """Element size -> the fill kernel's function, loaded once per device (its module
    stays loaded for the process, as the graphs that launch it may)."""
    del device  # the key: torch has made that device's primary context current
    functions = {}
    for size, (kind, _) in _STORE.items():
        _, functions[size] = load_function(FILL_PTX.encode(), f"dnnc_fill_{kind}", ptx=True)
    return functions


def _listed(query: Callable[..., Any], handle: Any, doing: str) -> list[Any]:
    """The nodes a listing call returns (a graph's nodes, a node's dependencies or
    dependents): a first call for the count, a second for the list, whichever shape of
    return the bindings' version gives (the list first, the count last)."""
    count = checked(query(handle), doing)
    count = count[-1] if isinstance(count, list) else count
    if not count:
        return []
    values = checked(query(handle, count), doing)
    return list(values[0])


def _add_edges(graph: Any, sources: list[Any], targets: list[Any]) -> None:
    driver = bindings()
    try:
        returned = driver.cuGraphAddDependencies(graph, sources, targets, None, len(sources))
    except TypeError:  # bindings before CUDA 13 take no edge data
        returned = driver.cuGraphAddDependencies(graph, sources, targets, len(sources))
    checked(returned, "adding graph edges")


def _kernel_params(device: int, memset: Any) -> Any | None:
    """The kernel node that writes what ``memset`` writes, or None where it stays."""
    size = int(memset.elementSize)
    width, height = int(memset.width), max(1, int(memset.height))
    if size not in _STORE or width == 0 or width * height * size > MAX_FILL_BYTES:
        return None
    params = bindings().CUDA_KERNEL_NODE_PARAMS()
    params.func = _fills(device)[size]
    params.gridDimX, params.gridDimY, params.gridDimZ = -(-width // FILL_THREADS), height, 1
    params.blockDimX, params.blockDimY, params.blockDimZ = FILL_THREADS, 1, 1
    params.sharedMemBytes = 0
    values = (int(memset.dst), int(memset.pitch) if height > 1 else 0, width, int(memset.value))
    params.kernelParams = (values, (ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint32))
    return params


def memsets_as_kernels(raw_graph: int, device: int) -> int:
    """Replaces ``raw_graph``'s memset nodes (a ``cudaGraph_t`` as an int, not yet
    instantiated) by fill kernels; the count replaced. A node the driver refuses to
    change stays a memset (logged at debug level)."""
    driver = bindings()
    graph = driver.CUgraph(raw_graph)
    memset_type = driver.CUgraphNodeType.CU_GRAPH_NODE_TYPE_MEMSET
    replaced = 0
    for node in _listed(driver.cuGraphGetNodes, graph, "listing a graph's nodes"):
        try:
            if checked(driver.cuGraphNodeGetType(node), "reading a node's type") != memset_type:
                continue
            params = _kernel_params(device, checked(driver.cuGraphMemsetNodeGetParams(node), "reading a memset"))
            if params is None:
                continue
            before = _listed(driver.cuGraphNodeGetDependencies, node, "reading a node's dependencies")
            after = _listed(driver.cuGraphNodeGetDependentNodes, node, "reading a node's dependents")
            fill = checked(driver.cuGraphAddKernelNode(graph, before, len(before), params), "adding a fill kernel")
            if after:
                _add_edges(graph, [fill] * len(after), after)
            checked(driver.cuGraphDestroyNode(node), "removing a memset node")
            replaced += 1
        except (CudaError, TypeError, ValueError, AttributeError) as e:
            log.debug("dnnc: a memset node of a CUDA graph stays a memset: %s", e)
    return replaced


def kept_graph() -> Any:
    """A ``torch.cuda.CUDAGraph`` that keeps its ``cudaGraph_t`` after capture (torch's
    ``keep_graph``) so ``instantiated`` can change it first; a plain one where this torch
    has no such option or the setting is off."""
    import torch

    from dnnc import knobs

    if knobs.get().graph_fill_kernels:
        try:
            return torch.cuda.CUDAGraph(keep_graph=True)
        except TypeError:
            pass
    return torch.cuda.CUDAGraph()


def instantiated(graph: Any) -> int:
    """Instantiates a graph from ``kept_graph`` after its memsets became fill kernels
    (``memsets_as_kernels``); the count replaced. A graph instantiated at capture is left
    as it is."""
    import torch

    raw = getattr(graph, "raw_cuda_graph", None)
    if raw is None or not getattr(graph, "instantiate", None):
        return 0
    try:
        handle = raw()
    except RuntimeError:  # instantiated at capture: no cudaGraph_t kept
        return 0
    try:
        replaced = memsets_as_kernels(int(handle), torch.cuda.current_device())
    except (CudaError, KernelBuildError) as e:
        log.debug("dnnc: a CUDA graph keeps its memset nodes: %s", e)
        replaced = 0
    graph.instantiate()
    return replaced
