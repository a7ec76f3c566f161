"""dnnc: a deep-learning inference compiler for NVIDIA GPUs.

``dnnc.compile(model, example_inputs)`` returns a callable; ``.save("m.dnnc")``
writes an artifact that ``dnnc.load("m.dnnc")`` runs without compiling again.
``dnnc.CustomKernel`` declares a user's CUDA kernel to call inside a model;
``torch.compile(model, backend="dnnc")`` (``dnnc.frontend.dynamo``) and
``dnnc.jax.compile(fn, *args)`` are the other ways in.
"""

from dnnc.api import CompiledModule, compile, explain, load  # noqa: A004
from dnnc.errors import DnncError
from dnnc.kernels import Binding, CustomKernel, PushConstant
from dnnc.version import __version__

__all__ = ["Binding", "CompiledModule", "CustomKernel", "DnncError", "PushConstant", "__version__", "compile", "explain", "load"]
