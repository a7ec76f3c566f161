"""The Triton backend: fuses tcp ops into groups and generates a Triton kernel per group.

* ``fusion``: the ``triton-fuse`` pass (groups of tcp ops -> ``tcp.isolated_group``);
* ``ops``: which ops are index arithmetic and which anchor a kernel kind;
* ``layout``: which axis a group's loads are contiguous along (tiled transposes);
* ``emitter`` / ``kernels``: readable Triton source per kernel kind;
* ``configs``: a few launch configs per kind;
* ``compiler``: ``triton.compile`` for an explicit target, content-keyed cache;
* ``launch``: ``compile_group`` -> a ``GroupKernel`` launched on the current stream.

Kinds: pointwise, transpose, reduce, softmax, layer_norm, pool, matmul, conv2d; every tcp op that
survives canonicalization is covered (``batch_norm`` as index arithmetic). Triton itself
is imported only by ``compiler``/``launch`` (on first use of ``compile_group``), so the
pass registry does not pay for it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.fusion import PART_ATTR, TritonFuse, fusion_groups
from dnnc.backends.triton.kernels import GroupInfo, KernelSource, generate
from dnnc.backends.triton.ops import KINDS, kind_of
from dnnc.backends.triton.skeleton import INDEX_FLAG, gathers
from dnnc.lazy import lazy_names

if TYPE_CHECKING:
    from dnnc.backends.triton.launch import TritonKernel, compile_group

PUBLIC = {
    "compile_group": "launch",
    "TritonKernel": "launch",
    "precompile_groups": "launch",
    "spec_or_candidates": "launch",
    "config_problem": "configs",
    "candidate_configs": "configs:candidates",
    "interpreting": "compiler",
    "is_triton_group": "marking",
    "mark_group": "marking",
    "not_lowered": "marking",
    "precompile_lowered": "marking",
    "KERNEL_BACKEND": "kernel_backend:TRITON",
}
"""The surface the other stages use beyond the names imported above; ``launch`` and
``compiler`` import Triton itself, so they load on first use."""
__getattr__ = lazy_names(__name__, PUBLIC)

__all__ = [
    "INDEX_FLAG",
    "KERNEL_BACKEND",
    "KINDS",
    "PART_ATTR",
    "CodegenError",
    "GroupInfo",
    "KernelSource",
    "TritonFuse",
    "TritonKernel",
    "candidate_configs",
    "compile_group",
    "config_problem",
    "fusion_groups",
    "gathers",
    "generate",
    "interpreting",
    "is_triton_group",
    "kind_of",
    "mark_group",
    "not_lowered",
    "precompile_groups",
    "precompile_lowered",
    "spec_or_candidates",
]
