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

from typing import TYPE_CHECKING, Any

from dnnc.backends.triton.emitter import CodegenError
from dnnc.backends.triton.fusion import TritonFuse
from dnnc.backends.triton.kernels import KernelSource, generate
from dnnc.backends.triton.ops import KINDS

if TYPE_CHECKING:
    from dnnc.backends.triton.launch import TritonKernel, compile_group


def __getattr__(name: str) -> Any:
    if name in ("compile_group", "TritonKernel"):
        from dnnc.backends.triton import launch

        return getattr(launch, name)
    raise AttributeError(name)


__all__ = ["KINDS", "CodegenError", "KernelSource", "TritonFuse", "TritonKernel", "compile_group", "generate"]
