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

import importlib
from typing import TYPE_CHECKING, Any

from dnnc.errors import DnncError
from dnnc.version import __version__

if TYPE_CHECKING:
    from dnnc.api import compile, explain  # noqa: A004
    from dnnc.compiled import CompiledModule
    from dnnc.kernels import Binding, CustomKernel, PushConstant
    from dnnc.loading import load

_WHERE = {
    "compile": "dnnc.api",
    "explain": "dnnc.api",
    "CompiledModule": "dnnc.compiled",
    "load": "dnnc.loading",
    "Binding": "dnnc.kernels",
    "CustomKernel": "dnnc.kernels",
    "PushConstant": "dnnc.kernels",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        value = getattr(importlib.import_module(_WHERE[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dnnc' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_WHERE])


__all__ = ["Binding", "CompiledModule", "CustomKernel", "DnncError", "PushConstant", "__version__", "compile", "explain", "load"]
