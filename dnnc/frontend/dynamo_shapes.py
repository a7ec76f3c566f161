"""Which inputs of a graph Dynamo captured with dynamic shapes are which: the
module's state, sizes (Dynamo passes each symbolic size as an input of its own) and
the user's tensors, and the dnnc range each symbolic size is.

A symbol at dimension 0 of every user tensor is the batch, one at dimension 1 of
every user tensor of rank 2 or more the sequence (``buckets.AXES``); their ranges run
from 2 (Dynamo compiles sizes 0 and 1 apart) to ``knobs.dynamic_batch_max`` /
``dynamic_seq_max`` (or the example's size where larger). Any other symbolic size
makes the graph one dnnc does not take, with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dnnc.buckets import AXES, MIN_RANK, dimension_at

STATE, SIZE, TENSOR = "state", "size", "tensor"


@dataclass
class GraphInputs:
    kinds: list[str]
    """Per graph input: ``state`` (a parameter or buffer), ``size`` or ``tensor``."""
    sizes: dict[int, tuple[int, int]] = field(default_factory=dict)
    """Size input -> (the graph input that has it, its dimension)."""
    ranges: dict[str, tuple[int, int]] = field(default_factory=dict)
    """The dnnc ranges of the symbolic sizes (empty: the graph is static)."""


def graph_inputs(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], state: Sequence[bool]) -> GraphInputs | str:
    """The graph's inputs sorted out, or why dnnc does not take the graph."""
    from dnnc import knobs

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return f"the graph has {len(placeholders)} inputs but Dynamo gave {len(example_inputs)} examples"
    kinds: list[str] = []
    where: dict[Any, set[tuple[int, int]]] = {}  # symbol -> (graph input, dimension) it is found at
    size_symbols: dict[int, Any] = {}
    for i, (node, example, is_state) in enumerate(zip(placeholders, example_inputs, state)):
        value = node.meta.get("example_value", example)
        if isinstance(example, (torch.SymInt, int)) and not isinstance(example, bool):
            kinds.append(SIZE)
            expr = value.node.expr if isinstance(value, torch.SymInt) else None
            if expr is None or not expr.is_Symbol:
                return f"input {i} is a size computed as {value}; dnnc takes sizes that are input dimensions"
            size_symbols[i] = expr
            continue
        if not isinstance(example, torch.Tensor):
            return f"input {i} is {type(example).__name__}; dnnc takes tensors and sizes"
        kinds.append(STATE if is_state else TENSOR)
        shape = getattr(value, "shape", example.shape)
        for dim, d in enumerate(shape):
            if isinstance(d, torch.SymInt) and not d.node.expr.is_number:
                expr = d.node.expr
                if not expr.is_Symbol:
                    return f"input {i} has a dimension computed as {d} (shape {list(shape)}); dnnc takes plain symbolic sizes"
                if is_state:
                    return f"input {i} (the module's state) has symbolic shape {list(shape)}"
                where.setdefault(expr, set()).add((i, dim))
    names: dict[Any, str] = {}
    for symbol, places in where.items():
        dims = {d for _, d in places}
        name = dimension_at(dims)
        if name is None or name in names.values():
            shown = ", ".join(f"dimension {d} of input {i}" for i, d in sorted(places))
            return f"symbolic size {symbol} at {shown}; dnnc's ranges are {', '.join(f'{n} (dimension {a})' for n, a in AXES.items())}"
        names[symbol] = name
    for symbol, name in names.items():
        holders = {i for i, _ in where[symbol]}
        for i, kind in enumerate(kinds):
            tensor = example_inputs[i]
            if kind == TENSOR and tensor.dim() >= MIN_RANK[name] and i not in holders:
                return f"input {i} (shape {list(tensor.shape)}) has a fixed {name} beside inputs whose {name} is symbolic"
    sizes = {}
    for i, symbol in size_symbols.items():
        if symbol not in names:
            return f"input {i} is the size {symbol}, which no input tensor has"
        sizes[i] = min(where[symbol])
    settings = knobs.get()
    high_end = {"batch": settings.dynamic_batch_max, "seq": settings.dynamic_seq_max}
    ranges = {}
    for symbol, name in names.items():
        i, dim = min(where[symbol])
        ranges[name] = (2, max(high_end[name], example_inputs[i].shape[dim]))
    return GraphInputs(kinds, sizes, ranges)
