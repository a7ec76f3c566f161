"""The check that a model takes a range of shapes, and where its outputs' sizes follow.

The model is exported once with the dynamic dimensions as ``torch.export`` ``Dim``s.
Export tracing symbolic sizes proves the graph is the same for every size in the
range, or fails where the model fixes one (a ``view(8, -1)``): that failure becomes
an error naming the op and the line. The exported outputs' symbolic shapes say which
output dimension is which input dimension, so a padded call's outputs can be cut back.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch.export import Dim, ExportedProgram

from dnnc.buckets import DimRange, resized
from dnnc.errors import ExportError
from dnnc.frontend.export_errors import export_error, held_torch_output
from dnnc.frontend.source_location import locate

log = logging.getLogger("dnnc.export")


def export_sizes(ranges: Mapping[str, DimRange]) -> dict[str, int]:
    """A size in each range for the symbolic export: 2 or more (export fixes sizes 0
    and 1) and different from the other dimensions' (equal sizes may be taken as one)."""
    chosen: dict[str, int] = {}
    for name, r in ranges.items():
        size = max(r.low, 2)
        while size in chosen.values() and size < r.high:
            size += 1
        chosen[name] = min(size, r.high)
    return chosen


def output_axes(
    model: torch.nn.Module, inputs: Sequence[torch.Tensor], ranges: Mapping[str, DimRange], axes: Sequence[Mapping[str, int]]
) -> list[dict[str, int]]:
    """Per tensor output: which of its dimensions is which dynamic dimension. An
    ``ExportError`` where the model fixes a dynamic dimension or computes an output
    size from one (``2 * batch``), naming the op."""
    varying = {n: r for n, r in ranges.items() if r.high > r.low}
    if not varying:
        return []  # one bucket, never padded
    sizes = export_sizes(varying)
    at = [resized(x, {n: a for n, a in ax.items() if n in varying}, sizes) for x, ax in zip(inputs, axes)]
    dims = {n: Dim(n, min=r.low, max=r.high) for n, r in varying.items()}
    shapes: tuple[Any, ...] = tuple({a: dims[n] for n, a in ax.items() if n in varying} or None for ax in axes)
    if _takes_varargs(model):  # forward(self, *inputs): export binds the inputs to one parameter
        shapes = (shapes,)
    ep = _export(model, at, shapes, sizes, varying)
    symbols = _input_symbols(ep, axes, varying)
    out: list[dict[str, int]] = []
    for index, value in enumerate(_user_output_values(ep)):
        found: dict[str, int] = {}
        for axis, d in enumerate(value.shape):
            if isinstance(d, int):
                continue
            expr = d.node.expr
            name = symbols.get(expr)
            if name is None:
                shape = [_named(d, symbols) for d in value.shape]
                raise ExportError(
                    f"dynamic shapes: output {index} has shape [{', '.join(shape)}]: dimension {axis} is {shape[axis]}; "
                    "dnnc cuts a padded call's outputs back along dimensions equal to an input's dynamic one only "
                    "(return the output unflattened, and flatten it after the call)"
                )
            found[name] = axis
        out.append(found)
    return out


def _takes_varargs(model: torch.nn.Module) -> bool:
    import inspect

    try:
        parameters = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters)


def _named(d: Any, symbols: Mapping[Any, str]) -> str:
    """A dimension as text, its symbols written as the dimensions they are (``3*batch``)."""
    if isinstance(d, int):
        return str(d)
    import sympy

    return str(d.node.expr.subs({s: sympy.Symbol(n) for s, n in symbols.items()}))


def _export(
    model: torch.nn.Module,
    inputs: Sequence[torch.Tensor],
    shapes: tuple[Any, ...],
    sizes: Mapping[str, int],
    ranges: Mapping[str, DimRange],
) -> ExportedProgram:
    with torch.no_grad(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        try:
            with held_torch_output():
                return torch.export.export(model, tuple(inputs), dynamic_shapes=shapes)
        except Exception as e:
            log.debug("symbolic export failed", exc_info=e)
            fixed = _fixing_op(model, inputs, sizes)
            ranges_text = ", ".join(r.text() for r in ranges.values())
            if fixed is not None:
                raise ExportError(
                    f"dynamic {ranges_text}: the model fixes a dynamic size at {fixed}; a range needs sizes taken from "
                    "the input (x.view(x.shape[0], -1) rather than x.view(8, -1))"
                ) from None
            error = export_error(e)
            raise ExportError(f"dynamic {ranges_text}: {error}") from None


def _fixing_op(model: torch.nn.Module, inputs: Sequence[torch.Tensor], sizes: Mapping[str, int]) -> str | None:
    """The first op of the model, exported for these inputs, that takes one of the
    dynamic sizes as a constant argument (a reshape to a literal shape): the op and
    its line. None where export fails here too or no op does."""
    try:
        with torch.no_grad(), held_torch_output():
            ep = torch.export.export(model, tuple(inputs))
    except Exception:
        return None
    values = {v: n for n, v in sizes.items()}
    for node in ep.graph.nodes:
        if node.op != "call_function":
            continue
        constants = [a for a in _flat_args(node.args) if isinstance(a, int) and not isinstance(a, bool)]
        hit = next((values[c] for c in constants if c in values), None)
        if hit is None or not _reshapes(node):
            continue
        where = locate(node)
        name = getattr(node.target, "__name__", str(node.target))
        shown = f"{name}({', '.join(map(str, constants))}) ({hit} = {sizes[hit]} in this export)"
        return f"{shown}, {where.brief()}" if where is not None else shown
    return None


def _reshapes(node: torch.fx.Node) -> bool:
    name = str(getattr(node.target, "__name__", node.target))
    return any(k in name for k in ("view", "reshape", "expand", "repeat", "split", "full", "zeros", "ones", "empty", "arange"))


def _flat_args(args: Any) -> list[Any]:
    out = []
    for a in args:
        if isinstance(a, (list, tuple)):
            out.extend(_flat_args(a))
        else:
            out.append(a)
    return out


def _input_symbols(ep: ExportedProgram, axes: Sequence[Mapping[str, int]], ranges: Mapping[str, DimRange]) -> dict[Any, str]:
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    symbols: dict[Any, str] = {}
    for name, ax in zip(ep.graph_signature.user_inputs, axes):
        value = placeholders[name].meta.get("val")
        for dim, axis in ax.items():
            if dim in ranges and value is not None and not isinstance(value.shape[axis], int):
                symbols[value.shape[axis].node.expr] = dim
    return symbols


def _user_output_values(ep: ExportedProgram) -> list[Any]:
    output = next(n for n in ep.graph.nodes if n.op == "output")
    by_name = {getattr(a, "name", None): a for a in output.args[0]}
    values = []
    for name in ep.graph_signature.user_outputs:
        node = by_name.get(name)
        value = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
        if isinstance(value, torch.Tensor):
            values.append(value)
    return values


def symbolic_sizes(ep: ExportedProgram) -> dict[Any, set[int]]:
    """Each symbolic size of the program's user inputs -> the input dimensions it is
    at; empty where the inputs are static."""
    placeholders = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    where: dict[Any, set[int]] = {}
    for name in ep.graph_signature.user_inputs:
        value = placeholders[name].meta.get("val")
        for axis, d in enumerate(getattr(value, "shape", ())):
            if not isinstance(d, int) and not d.node.expr.is_number:
                where.setdefault(d.node.expr, set()).add(axis)
    return where


def exported_ranges(ep: ExportedProgram) -> dict[str, tuple[int, int]]:
    """The dnnc ranges of a program exported with ``Dim``s: a symbol at dimension 0 of
    the user inputs is the batch, at dimension 1 the sequence, each over its range
    constraint. Empty where the program's inputs are static."""
    from dnnc.buckets import dimension_at

    ranges: dict[str, tuple[int, int]] = {}
    for symbol, axes in symbolic_sizes(ep).items():
        name = dimension_at(axes)
        if name is None or name in ranges:
            raise ExportError(
                f"the exported program's dynamic size {symbol} is at dimension(s) {sorted(axes)}; dnnc's ranges are "
                "batch (dimension 0 of every input) and seq (dimension 1)"
            )
        bounds = ep.range_constraints.get(symbol)
        upper = getattr(bounds, "upper", None)
        if bounds is None or not getattr(upper, "is_Integer", False):  # torch's int_oo is no Integer
            raise ExportError(f"the exported program's {name} ({symbol}) has no upper bound: export with Dim({name!r}, max=...)")
        ranges[name] = (max(int(bounds.lower), 1), int(upper))
    return ranges
