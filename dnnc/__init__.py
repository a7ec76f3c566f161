"""dnnc: a deep-learning inference compiler for NVIDIA GPUs.

``dnnc.compile(model, example_inputs)`` returns a callable; ``.save("m.dnnc")``
writes an artifact that ``dnnc.load("m.dnnc")`` runs without compiling again.
``dnnc.CustomKernel`` declares a user's CUDA kernel to call inside a model;
``torch.compile(model, backend="dnnc")`` (``dnnc.frontend.dynamo``) and
``dnnc.jax.compile(fn, *args)`` are the other ways in.

The names are imported when first used: a process that only loads and runs an
artifact never imports the compiler (export, passes, partitioner, specs).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dnnc.errors import DnncError
from dnnc.lazy import lazy_names
from dnnc.version import __version__

if TYPE_CHECKING:
    from dnnc.api import compile, explain  # noqa: A004
    from dnnc.bucketed import BucketedModule
    from dnnc.compiled import CompiledModule
    from dnnc.kernels import Binding, CustomKernel, PushConstant
    from dnnc.loading import load

_WHERE = {
    "compile": "api",
    "explain": "api",
    "CompiledModule": "compiled",
    "BucketedModule": "bucketed",
    "load": "loading",
    "Binding": "kernels",
    "CustomKernel": "kernels",
    "PushConstant": "kernels",
}
__getattr__ = lazy_names(__name__, _WHERE)


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = [
    "Binding",
    "BucketedModule",
    "CompiledModule",
    "CustomKernel",
    "DnncError",
    "PushConstant",
    "__version__",
    "compile",
    "explain",
    "load",
]
