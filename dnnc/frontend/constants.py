"""The constant part of an exported graph, and its values computed by PyTorch.

Much of a real model never sees its inputs: causal masks built from ``arange``,
position ids, rotary sin/cos tables, token-type buffers, index arithmetic. A node
is *constant* when every tensor it reads is: stored tensors (parameters, buffers,
lifted constants) and nodes computed from them alone; an op that reads no tensor
(``arange``, ``full``, ``zeros``) is constant unless it draws random numbers.

The importer imports constant nodes like any other where it can (the fold-params
pass folds parameter-only code later, within its growth limits). Where it cannot,
the node's value is computed here, by running the graph's own ATen ops on the real
stored tensors, once per node, and becomes a parameter.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator

import torch
import torch.fx
from torch._ops import OpOverload
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind

STORED_KINDS = (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)


def stored_tensor(ep: ExportedProgram, target: str) -> object:
    """A parameter, buffer or lifted constant of the program by its name (non-persistent
    buffers and constants live in ``ep.constants``)."""
    tensor = ep.state_dict.get(target)
    return ep.constants.get(target) if tensor is None else tensor


class ConstantGraph:
    def __init__(self, ep: ExportedProgram):
        stored = {s.arg.name: s.target for s in ep.graph_signature.input_specs if s.kind in STORED_KINDS}
        self._order = {node: i for i, node in enumerate(ep.graph.nodes)}
        self._values: dict[torch.fx.Node, object] = {}
        self._constant: set[torch.fx.Node] = set()
        for node in ep.graph.nodes:
            if node.op == "placeholder" and node.name in stored:
                tensor = stored_tensor(ep, stored[node.name])
                if isinstance(tensor, torch.Tensor):
                    self._values[node] = tensor
                    self._constant.add(node)
            elif node.op == "call_function" and _pure(node.target) and all(a in self._constant for a in node.all_input_nodes):
                self._constant.add(node)

    def is_constant(self, node: torch.fx.Node) -> bool:
        return node in self._constant

    def evaluate(self, node: torch.fx.Node) -> object:
        """The node's value, computed by PyTorch; every node it depends on is computed once."""
        if node not in self._constant:
            raise ValueError(f"{node.name} depends on the model's inputs; it has no compile-time value")
        with torch.no_grad():
            for needed in self._uncomputed(node):
                args, kwargs = torch.fx.node.map_arg((needed.args, needed.kwargs), self._values.__getitem__)
                self._values[needed] = needed.target(*args, **kwargs)  # type: ignore[operator]
        return self._values[node]

    def _uncomputed(self, node: torch.fx.Node) -> Iterator[torch.fx.Node]:
        """``node`` and the nodes it depends on that have no value yet, in graph order
        (collected without recursion: constant chains can be thousands of nodes long)."""
        found: set[torch.fx.Node] = set()
        stack = [node]
        while stack:
            n = stack.pop()
            if n in found or n in self._values:
                continue
            found.add(n)
            stack.extend(n.all_input_nodes)
        return iter(sorted(found, key=self._order.__getitem__))


def _pure(target: object) -> bool:
    """An op whose result depends on its arguments alone: no mutation, no random draw."""
    if target is operator.getitem:
        return True
    if not isinstance(target, OpOverload):
        return False
    return not target._schema.is_mutable and torch.Tag.nondeterministic_seeded not in target.tags
