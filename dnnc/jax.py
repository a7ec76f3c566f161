"""JAX functions through dnnc: ``dnnc.jax.compile(fn, *example_args)``.

The function is lowered by ``jax.jit`` to StableHLO (MLIR's own module, no text
round trip), imported to tcp (arrays it closes over become parameters) and
compiled like any dnnc program. The result takes and returns JAX arrays,
structured like ``fn``'s, exchanged with dnnc through DLPack (no copy where the
array already lives on the device dnnc runs on).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from dnnc.api import compile_program
from dnnc.compiled import CompiledModule
from dnnc.errors import InputError
from dnnc.frontend.stablehlo import import_module


class JaxCompiled:
    """A compiled JAX function: call it with arrays shaped like the example arguments."""

    def __init__(self, module: CompiledModule, in_tree: Any, out_tree: Any):
        self.module = module
        self.in_tree = in_tree
        self.out_tree = out_tree

    @property
    def program(self) -> Any:
        return self.module.program

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import jax

        leaves, tree = jax.tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise InputError(f"arguments are structured as {tree}, but the function was compiled for {self.in_tree}")
        device = self.module.device
        tensors = []
        for leaf in leaves:
            t = torch.from_dlpack(leaf if isinstance(leaf, jax.Array) else jax.numpy.asarray(leaf))
            tensors.append(t if t.device.type == device else t.to(device))
        out = self.module(*tensors)
        outputs = list(out) if isinstance(out, tuple) else [out]
        return jax.tree_util.tree_unflatten(self.out_tree, [jax.dlpack.from_dlpack(t.contiguous()) for t in outputs])


def compile(fn: Callable[..., Any], *example_args: Any, device: str | None = None, cuda_graph: bool | None = None) -> JaxCompiled:  # noqa: A001
    """Compile ``fn`` for the shapes and dtypes of ``example_args`` (arrays or pytrees of them)."""
    import jax

    jitted = jax.jit(fn, keep_unused=True)  # every argument stays an input of the program
    lowered = jitted.lower(*example_args)
    program = import_module(lowered.compiler_ir("stablehlo"))
    return JaxCompiled(compile_program(program, device=device, cuda_graph=cuda_graph), lowered.in_tree, lowered.out_tree)
