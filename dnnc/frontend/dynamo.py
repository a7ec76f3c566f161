"""``torch.compile(model, backend="dnnc")``: dnnc as a TorchDynamo backend.

Dynamo hands over each graph it captures with example inputs; dnnc exports and
compiles it for their shapes and device. A graph dnnc cannot take (an op without
an import rule, dynamic shapes, a training graph...) runs as Dynamo gave it, and
the reason is logged and kept in ``fallbacks``, so a model always runs. Dynamo
decides when to recompile (a new shape under ``dynamic=False``, a guard that
fails); each recompile comes back here. The module's parameters and buffers, which
Dynamo passes as graph inputs, are frozen into the compiled program (``Frozen``).

A graph with symbolic sizes (``dynamic=True``, or a shape Dynamo saw change) is
compiled for ranges of sizes (``dnnc.compile(dynamic=...)``: buckets of powers of
two, ``dynamo_shapes`` says which size is which); a call outside the range runs the
graph as Dynamo captured it.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from dnnc.errors import OutOfRangeError
from dnnc.frontend.dynamo_shapes import SIZE, STATE, TENSOR, GraphInputs, graph_inputs

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
    from dnnc import knobs

    settings = settings_for(mode, options)
    with knobs.override(**settings):
        found = graph_inputs(gm, example_inputs, module_state(gm, example_inputs))
        reason = found if isinstance(found, str) else _unsupported(example_inputs, found)
        if reason is None:
            assert isinstance(found, GraphInputs)
            try:
                run, compiled = _compiled(gm, example_inputs, found)
            except Exception as e:  # any failure runs the graph as Dynamo captured it
                reason = f"{type(e).__name__}: {e}"
            else:
                if compiled is not None:
                    compiled_graphs.append(compiled)
                return run
    _fell_back(gm, reason)
    return gm.forward


def _fell_back(gm: torch.fx.GraphModule, reason: str) -> None:
    """Record and log that ``gm`` runs as Dynamo captured it, and why."""
    ops = sum(1 for n in gm.graph.nodes if n.op == "call_function")
    fallbacks.append(GraphFallback(ops, reason))
    log.warning(
        "dnnc: a torch.compile graph of %d ops runs without dnnc: %s", ops, "; ".join(map(str.strip, reason.splitlines()))
    )


def _compiled(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], found: GraphInputs) -> tuple[Callable[..., Any], Any]:
    """The callable Dynamo calls with every graph input, and the compiled module (None
    where it is compiled on the first call: ``_Ranged``)."""
    import dnnc
    from dnnc import knobs

    tensors = [x for x, k in zip(example_inputs, found.kinds) if k != SIZE]
    device = "cuda" if any(t.is_cuda for t in tensors) else "cpu"
    user = tuple(x for x, k in zip(example_inputs, found.kinds) if k == TENSOR)
    taken = [i for i, k in enumerate(found.kinds) if k == TENSOR]
    if found.kinds == [TENSOR] * len(found.kinds):
        compiled = dnnc.compile(gm, user, device=device)
        return compiled, compiled
    state = [k == STATE for k in found.kinds]
    frozen = Frozen(
        scalars_folded(gm, example_inputs, state), {i: x for i, (x, s) in enumerate(zip(example_inputs, state)) if s}, found.sizes
    )
    if not found.ranges:
        compiled = dnnc.compile(frozen, user, device=device)
        return (lambda *args: compiled(*(args[i] for i in taken))), compiled
    return _Ranged(gm, frozen, user, device, found.ranges, taken, knobs.get()), None


class _Ranged:
    """A graph with symbolic sizes, compiled for their ranges on its first call (a
    compile with symbolic sizes inside Dynamo's own would add its guards to the frame
    Dynamo is building): the bucket of that call's sizes then, each other bucket on the
    first call that needs it, as Dynamo compiles a new shape. A call outside the
    ranges, or every call if the compile failed, runs the graph as Dynamo captured it."""

    def __init__(
        self,
        gm: torch.fx.GraphModule,
        frozen: Frozen,
        user: tuple[torch.Tensor, ...],
        device: str,
        ranges: dict[str, tuple[int, int]],
        taken: list[int],
        settings: Any,
    ):
        self.gm, self.frozen, self.device, self.ranges, self.taken, self.settings = gm, frozen, device, ranges, taken, settings
        self.examples = tuple(t.detach().clone() for t in user)
        self.compiled: Any = None
        self.failed = False
        self.warned = False

    def __call__(self, *args: Any) -> Any:
        if self.compiled is None and not self.failed:
            self._compile()
        if self.failed:
            return self.gm.forward(*args)
        try:
            return self.compiled(*(args[i] for i in self.taken))
        except OutOfRangeError as e:  # outside the compiled range: the graph as Dynamo captured it
            if not self.warned:
                self.warned = True
                log.warning("dnnc: %s; this call and others like it run without dnnc", e)
            return self.gm.forward(*args)

    def _compile(self) -> None:
        import dnnc
        from dnnc import knobs

        try:
            with knobs.override(**{f.name: getattr(self.settings, f.name) for f in dataclasses.fields(self.settings)}):
                self.compiled = dnnc.compile(
                    self.frozen, self.examples, device=self.device, dynamic=self.ranges, lazy_buckets=True
                )
        except Exception as e:
            self.failed = True
            _fell_back(self.gm, f"{type(e).__name__}: {e}")
        else:
            compiled_graphs.append(self.compiled)
        self.examples = ()


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
        flags.append(
            isinstance(name, str) and ("._parameters[" in name or "._buffers[" in name or _is_attribute_scalar(node, name))
        )
    return flags


def _is_attribute_scalar(node: torch.fx.Node, source_name: str) -> bool:
    """A float attribute of the module (a norm's ``eps``) that Dynamo passes as a 0-d
    tensor under dynamic shapes (and reads with ``.item()``)."""
    value = node.meta.get("example_value")
    return source_name.startswith(("L['self']", "L['fn']")) and isinstance(value, torch.Tensor) and value.dim() == 0


def scalars_folded(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], state: Sequence[bool]) -> torch.fx.GraphModule:
    """A copy of ``gm`` where each ``.item()`` of a frozen 0-d input is its value: a
    constant of the program, not a size export cannot trace."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    reads = [
        (user, example)
        for node, example, frozen in zip(placeholders, example_inputs, state)
        if frozen and isinstance(example, torch.Tensor) and example.dim() == 0
        for user in node.users
        if user.op == "call_method" and user.target == "item"
    ]
    if not reads:
        return gm
    graph = copy.deepcopy(gm.graph)
    by_name = {n.name: n for n in graph.nodes}
    for user, example in reads:
        copied = by_name[user.name]
        copied.replace_all_uses_with(example.item())  # type: ignore[arg-type]
        graph.erase_node(copied)
    return torch.fx.GraphModule(gm, graph)


class Frozen(torch.nn.Module):
    """A captured graph with the module's parameters and buffers held as its own
    buffers, called with the other tensor inputs only: exported so, they are constants
    dnnc folds (BatchNorm into the convolution before it) and uploads once, as
    Inductor's freezing does. Changing the model's weights after the compile is not
    seen (call ``torch._dynamo.reset()`` to compile again). ``sizes``: the graph's size
    inputs (dynamic shapes), each read off a dimension of a tensor input."""

    def __init__(
        self, gm: torch.fx.GraphModule, constants: dict[int, torch.Tensor], sizes: dict[int, tuple[int, int]] | None = None
    ):
        super().__init__()
        self.graph_module = gm
        self.count = len([n for n in gm.graph.nodes if n.op == "placeholder"])
        self.constant_positions = sorted(constants)
        self.sizes = dict(sizes or {})
        for i, t in constants.items():
            self.register_buffer(f"constant_{i}", t.detach())

    def forward(self, *user: torch.Tensor) -> Any:
        given = iter(user)
        args: list[Any] = [
            getattr(self, f"constant_{i}") if i in self.constant_positions else None if i in self.sizes else next(given)
            for i in range(self.count)
        ]
        for i, (holder, dim) in self.sizes.items():
            args[i] = args[holder].shape[dim]
        return self.graph_module(*args)


def _unsupported(example_inputs: Sequence[Any], found: GraphInputs) -> str | None:
    for i, (x, kind) in enumerate(zip(example_inputs, found.kinds)):
        if kind != SIZE and x.requires_grad and torch.is_grad_enabled():
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
