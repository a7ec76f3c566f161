"""``torch.compile(model, backend="dnnc")``: dnnc as a TorchDynamo backend.

Dynamo hands over each graph it captures with example inputs; dnnc exports and
compiles it for their shapes and device. A graph dnnc cannot take (an op without
an import rule, dynamic shapes, a training graph...) runs as Dynamo gave it, and
the reason is logged and kept in ``fallbacks``, so a model always runs. Dynamo
decides when to recompile (a new shape under ``dynamic=False``, a guard that
fails); each recompile comes back here. The module's parameters and buffers, which
Dynamo passes as graph inputs, are frozen into the compiled program (``Frozen``). With dynamic shapes, a graph whose
inputs carry symbolic sizes falls back: pass ``dynamic=False`` for a static
compile per shape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

log = logging.getLogger("dnnc.dynamo")


@dataclass(frozen=True)
class GraphFallback:
    """A captured graph dnnc did not compile, and why."""

    ops: int
    reason: str


fallbacks: list[GraphFallback] = []
compiled_graphs: list[Any] = []
"""The ``CompiledModule`` of every graph dnnc compiled in this process (for inspection)."""


MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"cuda_graph": True},
    "max-autotune": {"cuda_graph": True, "measure_autotune": True, "runtime_compiled_plans": 64},
    "max-autotune-no-cudagraphs": {"cuda_graph": False, "measure_autotune": True, "runtime_compiled_plans": 64},
}
"""torch.compile's ``mode`` as dnnc settings: dnnc replays CUDA graphs by default;
``max-autotune`` also tunes every candidate the partitioner times alone and builds every
runtime-compiled cuDNN plan among the first the heuristics give (a longer compile)."""


def settings_for(mode: str | None, options: dict[str, Any] | None) -> dict[str, Any]:
    """The dnnc settings (``knobs``) a ``torch.compile(mode=..., options=...)`` asks for:
    the mode's, then ``options`` by setting name. An unknown mode or setting is a
    ``DnncError`` naming the known ones."""
    from dnnc import knobs
    from dnnc.errors import DnncError

    if mode is not None and mode not in MODES:
        raise DnncError(f"torch.compile(backend='dnnc'): unknown mode {mode!r}; dnnc knows {', '.join(MODES)}")
    settings = dict(MODES[mode or "default"])
    knobs.check_names(options or {}, "torch.compile(backend='dnnc')")
    settings.update(options or {})
    return settings


def dnnc_backend(
    gm: torch.fx.GraphModule, example_inputs: Sequence[Any], *, mode: str | None = None, options: dict[str, Any] | None = None
) -> Callable[..., Any]:
    """The backend Dynamo calls, with torch.compile's ``mode`` and ``options`` if given."""
    import dnnc
    from dnnc import knobs

    settings = settings_for(mode, options)
    reason = _unsupported(example_inputs)
    if reason is None:
        tensors = list(example_inputs)
        device = "cuda" if any(t.is_cuda for t in tensors) else "cpu"
        state = module_state(gm, tensors)
        try:
            with knobs.override(**settings):
                if any(state):
                    frozen = Frozen(gm, {i: t for i, (t, s) in enumerate(zip(tensors, state)) if s})
                    user = tuple(t for t, s in zip(tensors, state) if not s)
                    compiled = dnnc.compile(frozen, user, device=device)
                else:
                    compiled = dnnc.compile(gm, tuple(tensors), device=device)
        except Exception as e:  # any failure runs the graph as Dynamo captured it
            reason = f"{type(e).__name__}: {e}"
        else:
            compiled_graphs.append(compiled)
            if not any(state):
                return compiled
            return lambda *args: compiled(*(a for a, s in zip(args, state) if not s))
    ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    fallbacks.append(GraphFallback(ops, reason))
    log.warning(
        "dnnc: a torch.compile graph of %d ops runs without dnnc: %s", ops, "; ".join(map(str.strip, reason.splitlines()))
    )
    return gm.forward


def module_state(gm: torch.fx.GraphModule, example_inputs: Sequence[Any]) -> list[bool]:
    """Which graph inputs are the module's parameters and buffers: Dynamo lifts them into
    inputs (each placeholder's source names where it came from). All False where that
    cannot be told."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return [False] * len(example_inputs)
    flags = []
    for node in placeholders:
        source = getattr(node.meta.get("grapharg"), "source", None)
        name = getattr(source, "name", "")
        name = name() if callable(name) else name
        flags.append(isinstance(name, str) and ("._parameters[" in name or "._buffers[" in name))
    return flags


class Frozen(torch.nn.Module):
    """A captured graph with the module's parameters and buffers held as its own
    buffers, called with the other inputs only: exported so, they are constants dnnc
    folds (BatchNorm into the convolution before it) and uploads once, as Inductor's
    freezing does. Changing the model's weights after the compile is not seen (call
    ``torch._dynamo.reset()`` to compile again)."""

    def __init__(self, gm: torch.fx.GraphModule, constants: dict[int, torch.Tensor]):
        super().__init__()
        self.graph_module = gm
        self.count = len([n for n in gm.graph.nodes if n.op == "placeholder"])
        self.constant_positions = sorted(constants)
        for i, t in constants.items():
            self.register_buffer(f"constant_{i}", t.detach())

    def forward(self, *user: torch.Tensor) -> Any:
        given = iter(user)
        args = [getattr(self, f"constant_{i}") if i in self.constant_positions else next(given) for i in range(self.count)]
        return self.graph_module(*args)


def _unsupported(example_inputs: Sequence[Any]) -> str | None:
    for i, x in enumerate(example_inputs):
        if not isinstance(x, torch.Tensor):
            return f"input {i} is {type(x).__name__} (dynamic shapes?); use torch.compile(..., dynamic=False)"
        if any(not isinstance(d, int) for d in x.shape):
            return f"input {i} has symbolic sizes {list(x.shape)}; use torch.compile(..., dynamic=False)"
        if x.requires_grad and torch.is_grad_enabled():
            return f"input {i} requires grad; dnnc compiles inference graphs (use torch.no_grad())"
    return None


def register() -> None:
    """Make ``backend="dnnc"`` known to Dynamo. An installed dnnc is found through its
    ``torch_dynamo_backends`` entry point without this; from a source tree, importing
    this module registers it. (``import dnnc`` alone does not import Dynamo: that
    would load Triton and more into every program that uses dnnc.)"""
    from torch._dynamo import list_backends, register_backend

    if "dnnc" not in list_backends(exclude_tags=()):
        register_backend(dnnc_backend, name="dnnc")


register()
