"""dnnc: a deep-learning inference compiler for NVIDIA GPUs.

``dnnc.compile(model, example_inputs)`` returns a callable; ``.save("m.dnnc")``
writes an artifact that ``dnnc.load("m.dnnc")`` runs without compiling again.
"""

from dnnc.api import CompiledModule, compile, explain, load  # noqa: A004
from dnnc.errors import DnncError
from dnnc.version import __version__

__all__ = ["CompiledModule", "DnncError", "__version__", "compile", "explain", "load"]
