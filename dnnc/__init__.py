"""dnnc: a deep-learning inference compiler for NVIDIA GPUs.

``dnnc.compile(model, example_inputs)`` returns a callable. Today programs run on
the CPU reference backend; GPU backends (cuDNN, Triton) plug into the same
pipeline.
"""

from dnnc.api import CompiledModule, compile, explain  # noqa: A004
from dnnc.errors import DnncError
from dnnc.version import __version__

__all__ = ["CompiledModule", "DnncError", "__version__", "compile", "explain"]
