"""Import a ``torch.export`` program (core ATen after decomposition) into tcp.

The walk is generic: placeholders become function arguments or named parameters,
every call goes through the rule table in ``dnnc.frontend.aten``. A node the rules
cannot take does not stop the walk. A constant one (``constants``: computed from
stored tensors alone) is computed by PyTorch at compile time where imported code
uses it. Any other is recorded with its reason (``problems``) and replaced by a
stand-in of its type, so the nodes after it are still checked for problems of
their own (not for the stand-in: rules decide on types and attributes only). The
import then fails with one error listing every unsupported op of the model;
``survey`` returns the same findings instead, for ``dnnc ops --check``.
"""

from __future__ import annotations

import logging
import operator
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.transforms.dead_code_elimination import region_dce

from dnnc.errors import DnncError, ExportError, UnsupportedOpError
from dnnc.frontend.aten import IGNORED, IMPORT_RULES, bind_args
from dnnc.frontend.aten.attention import SDPA_OPS
from dnnc.frontend.constants import STORED_KINDS, ConstantGraph, stored_tensor
from dnnc.frontend.emitter import BROKEN, Broken, Emitter, FoldedConstant, OpRefused, PendingParam
from dnnc.frontend.export_errors import export_error, held_torch_output
from dnnc.frontend.problems import NO_RULE, Problems, UnsupportedOp, op_name
from dnnc.frontend.source_location import locate
from dnnc.ir import tcp
from dnnc.ir.extern import KernelOp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import ENTRY, Program
from dnnc.ir.types import UnsupportedDtypeError, tensor_type
from dnnc.log import say_once

log = logging.getLogger("dnnc.export")

COMPUTED_PREFIX = "const."
"""Parameters holding constant nodes computed at compile time are named ``const.<node>``."""


def export(model: torch.nn.Module, example_inputs: Sequence[Any]) -> ExportedProgram:
    """torch.export the model, ready for the importer (``for_import``). A model export
    cannot trace is an ``ExportError`` (export's reason, the user's line); the traceback
    and what torch printed go to the debug log."""
    check_model_and_inputs(model, example_inputs)
    with torch.no_grad(), warnings.catch_warnings():
        # torch's own pytree deprecation notice, raised inside torch.export itself.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        try:
            with held_torch_output():
                ep = torch.export.export(model, tuple(example_inputs))
        except DnncError:
            raise
        except Exception as e:
            log.debug("torch.export failed", exc_info=e)
            raise export_error(e, describe_inputs(example_inputs)) from None
        return for_import(ep)


_CONSTANT_INPUTS = (bool, int, float, type(None))
"""Non-tensor example inputs export takes (as constants of the compiled program)."""


def check_model_and_inputs(model: Any, example_inputs: Sequence[Any]) -> None:
    """A model that is no module, or an example input that is no tensor (nor a number
    export bakes in), is refused here by name rather than by torch deep inside export."""
    if not isinstance(model, torch.nn.Module):
        raise ExportError(
            f"dnnc compiles a torch.nn.Module or a torch.export.ExportedProgram, got {type(model).__name__}"
            + (" (wrap a function in an nn.Module whose forward calls it)" if callable(model) else "")
        )
    leaves, _ = torch.utils._pytree.tree_flatten(tuple(example_inputs))
    for i, leaf in enumerate(leaves):
        if isinstance(leaf, (torch.Tensor, *_CONSTANT_INPUTS)):
            continue
        hint = " (convert it with torch.from_numpy)" if type(leaf).__module__ == "numpy" else ""
        raise ExportError(f"example input {i} is a {type(leaf).__name__}: dnnc takes tensors (and numbers, bools, None){hint}")


def describe_inputs(example_inputs: Sequence[Any]) -> str:
    """``[3, 3] float32, 2`` for the error of a failed export."""
    leaves, _ = torch.utils._pytree.tree_flatten(tuple(example_inputs))
    shown = [f"{list(x.shape)} {str(x.dtype).removeprefix('torch.')}" if isinstance(x, torch.Tensor) else repr(x) for x in leaves]
    return ", ".join(shown[:8]) + (", ..." if len(shown) > 8 else "")


def decompose(ep: ExportedProgram) -> ExportedProgram:
    """Lower an exported program to core ATen, the op set the import rules cover.
    Scaled dot-product attention stays whole: decomposed, it becomes the kernel of
    the export's device (cuDNN or flash on CUDA, the math form on the CPU)."""
    table = torch.export.default_decompositions()
    for op in SDPA_OPS:
        table.pop(op, None)
    return ep.run_decompositions(table)


def for_import(ep: ExportedProgram) -> ExportedProgram:
    """The program as exported where the importer takes every op of it as it stands
    (``imports_as_exported``), else decomposed to core ATen. Decomposing re-traces the
    whole graph: most of export's time, for ops most models spell as a handful of
    composites (conv2d, linear, batch_norm, in-place activations) that have rules too."""
    return ep if imports_as_exported(ep) else decompose(ep)


def imports_as_exported(ep: ExportedProgram) -> bool:
    """Whether every op of the graph has an import rule (an in-place op: its functional
    form's, where computing a new value instead is exact, ``_functional_in_place``) and
    the graph writes no buffer or input."""
    if any(spec.kind != OutputKind.USER_OUTPUT for spec in ep.graph_signature.output_specs):
        return False
    order = {n: i for i, n in enumerate(ep.graph.nodes)}
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem or node.target in IGNORED:
            continue
        target = rule_target(node, order)  # a mutable op with a rule of its own (training batch norm) is decomposed
        if not isinstance(target, torch._ops.OpOverload) or target._schema.is_mutable or target not in IMPORT_RULES:
            return False
    return True


def rule_target(node: torch.fx.Node, order: dict[torch.fx.Node, int]) -> Any:
    """The op whose import rule takes ``node``: its own target, or for an in-place op
    without a rule of its own, its functional form where reading it so is exact
    (``_functional_in_place``); None for an in-place op that cannot be read so."""
    target = node.target
    functional = functional_of(target)
    if functional is None or target in IMPORT_RULES:
        return target
    return functional if _functional_in_place(node, order) else None


def functional_of(target: Any) -> Any:
    """``aten.relu.default`` for ``aten.relu_.default`` (the same overload without the
    trailing underscore); None for an op that is not such an in-place form."""
    if not isinstance(target, torch._ops.OpOverload):
        return None
    namespace, _, name = target._schema.name.partition("::")
    if namespace != "aten" or not name.endswith("_") or name.startswith("_"):
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def _functional_in_place(node: torch.fx.Node, order: dict[torch.fx.Node, int]) -> bool:
    """Whether an in-place op may be read as its functional form: it writes its first
    argument only, and neither that value nor any value the write reaches through it
    (the input of a view or of an earlier in-place op it came from) is read after it,
    or is an input, parameter or buffer of the graph."""
    schema = node.target._schema  # type: ignore[union-attr]
    written = [a for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    if [a.name for a in written] != [schema.arguments[0].name] or not node.args:
        return False
    value = node.args[0]
    while True:
        if not isinstance(value, torch.fx.Node) or value.op != "call_function":
            return False
        if any(order[user] > order[node] for user in value.users if user is not node):
            return False
        producer = value.target
        if not isinstance(producer, torch._ops.OpOverload):
            return False  # a part of a multi-output op (split): its siblings are not followed
        shares = producer._schema.is_mutable or any(r.alias_info is not None for r in producer._schema.returns)
        if not shares:
            return True
        value = value.args[0]  # a view of it or an in-place op on it: the write reaches it too


def import_program(ep: ExportedProgram) -> Program:
    """The tcp program of an exported program (``for_import``); ``UnsupportedOpError``
    lists every op it cannot take. A program imported as exported whose composite ops
    a rule refuses is decomposed and imported again, so the error names core ATen ops."""
    _, imported = _imported(ep)
    if imported.problems:
        raise imported.problems.error()
    return imported.program


def _imported(ep: ExportedProgram) -> tuple[ExportedProgram, _Import]:
    """The program imported, and the form it was imported from: as given, or decomposed
    where a composite op's rule refused it (so the problems name core ATen ops)."""
    imported = _Import(ep)
    if imported.problems and _has_composites(ep):
        ep = decompose(ep)
        imported = _Import(ep)
    return ep, imported


def _has_composites(ep: ExportedProgram) -> bool:
    """Whether the graph has ops that decomposing would rewrite (it was not decomposed)."""
    core = torch.export.default_decompositions()
    return any(n.op == "call_function" and (n.target in core or functional_of(n.target) is not None) for n in ep.graph.nodes)


@dataclass(frozen=True)
class Survey:
    """What importing a program found."""

    ops: Counter[str]
    """Every ATen op of the program, with how often it occurs."""
    unsupported: list[UnsupportedOp]
    """The ops (and reasons) the import refuses."""
    computed: Counter[str]
    """Constant ops no rule takes, computed by PyTorch at compile time instead."""


def survey(ep: ExportedProgram) -> Survey:
    """Import the program as ``import_program`` does, reporting instead of failing."""
    ep, imported = _imported(ep)
    ops = Counter(
        op_name(n)
        for n in ep.graph.nodes
        if n.op == "call_function" and n.target is not operator.getitem and n.target not in IGNORED
    )
    return Survey(ops, imported.problems.summary(), imported.computed)


class _Import:
    """One walk over the exported graph, in order; the results are its attributes."""

    def __init__(self, ep: ExportedProgram):
        self.ep = ep
        self.problems = Problems()
        self.constants = ConstantGraph(ep)
        self.folded: dict[str, torch.fx.Node] = {}
        signature = ep.graph_signature
        user_inputs = [s.arg.name for s in signature.input_specs if s.kind == InputKind.USER_INPUT]
        stored = {s.arg.name: s.target for s in signature.input_specs if s.kind in STORED_KINDS}
        for spec in signature.output_specs:
            if spec.kind != OutputKind.USER_OUTPUT:
                raise UnsupportedOpError(_side_effect(ep, spec))

        nodes = {n.name: n for n in ep.graph.nodes}
        self.order = {n: i for i, n in enumerate(ep.graph.nodes)}
        input_types = []
        for name in user_inputs:
            val = nodes[name].meta.get("val")
            if not isinstance(val, torch.Tensor):
                raise UnsupportedOpError(f"input {name!r} is {type(val).__name__}; dnnc takes tensors only")
            if not all(isinstance(d, int) for d in val.shape):
                raise UnsupportedOpError(
                    f"input {name!r} has a symbolic shape {list(val.shape)}; dnnc compiles one static shape per program "
                    "(export without dynamic dims)"
                )
            try:
                input_types.append(tensor_type(val.shape, val.dtype))
            except UnsupportedDtypeError as e:
                raise UnsupportedOpError(f"input {name!r}: {e}") from None

        block = Block(arg_types=input_types)
        em = self.em = Emitter(block, ParamStore())
        for name, arg in zip(user_inputs, block.args):
            arg.name_hint = _hint(name)
            em.values[nodes[name]] = arg

        outputs: list[SSAValue] = []
        for node in ep.graph.nodes:
            em.node = node
            if node.op == "placeholder":
                if node.name in stored:
                    em.values[node] = _stored_tensor(ep, stored[node.name], node.name)
                elif node.name not in user_inputs:
                    raise UnsupportedOpError(f"input {node.name!r} of kind {_input_kind(signature, node.name)} is not supported")
            elif node.op == "call_function":
                self._import_call(node)
            elif node.op == "output":
                outputs = [v for v in map(self._output_value, node.args[0]) if v is not None]
            elif node.op == "get_attr":  # a subgraph of a control-flow op: that op is what is refused
                em.values[node] = getattr(ep.graph_module, str(node.target), None)
            else:
                self._refused(node, OpRefused(node, f"fx node kind {node.op!r}"))

        if em.narrowed and not self.problems:
            _say_narrowed(em.narrowed)
        block.add_op(func.ReturnOp(*outputs))
        fn = func.FuncOp(ENTRY, (input_types, [v.type for v in outputs]), Region(block))
        region_dce(fn.body)  # what only folded constants used (they are computed without it)
        kernels = [KernelOp(decl) for decl in em.kernels.values()]
        self.program = Program(ModuleOp([*kernels, fn]), em.params)
        self.program.prune_params()

    @property
    def computed(self) -> Counter[str]:
        """The folded constants the program uses, by op."""
        return Counter(op_name(node) for name, node in self.folded.items() if name in self.program.params)

    def _import_call(self, node: torch.fx.Node) -> None:
        em = self.em
        target = node.target
        if target in IGNORED:
            return
        if any(isinstance(em.values.get(a), Broken) for a in node.all_input_nodes):
            em.values[node] = BROKEN  # an input without a stand-in, its problem reported already
            return
        if target is operator.getitem:
            source, index = node.args
            value = em.values[source]  # type: ignore[index]
            em.values[node] = self._fold(node, value.reason) if isinstance(value, FoldedConstant) else value[index]  # type: ignore[index]
            return
        checkpoint = em.checkpoint()
        try:
            target = rule_target(node, self.order)
            if target is None:
                em.unsupported("an in-place op whose input is read again or shared (decomposing functionalizes it)")
            rule = IMPORT_RULES.get(target)  # type: ignore[arg-type]
            if rule is None:
                em.unsupported(NO_RULE)
            result = rule(em, **bind_args(target, node.args, node.kwargs))  # type: ignore[arg-type]
        except UnsupportedOpError as e:
            em.rollback(checkpoint)
            refused = e if isinstance(e, OpRefused) else OpRefused(node, str(e))
            if self.constants.is_constant(node):
                em.values[node] = self._fold(node, refused.reason)
            else:
                self._refused(node, refused)
            return
        if isinstance(result, SSAValue) and result.name_hint is None and result.owner is not None:
            result.name_hint = _hint(node.name)
        em.values[node] = result

    def _fold(self, node: torch.fx.Node, reason: str) -> FoldedConstant:
        name = self.em.params.fresh_name(COMPUTED_PREFIX + node.name)
        self.folded[name] = node
        return FoldedConstant(name, reason, lambda: self.constants.evaluate(node))

    def _refused(self, node: torch.fx.Node, refused: OpRefused) -> None:
        """Record the problem at the node at fault (the node, or an input it cannot use)."""
        culprit = refused.node or node
        self.problems.add(culprit, refused.reason)
        for n in dict.fromkeys((culprit, node)):
            self.em.values[n] = self._stand_in(n.name, n.meta.get("val"))

    def _stand_in(self, name: str, val: object) -> object:
        """A value of the refused node's type (its outputs' types), for the nodes that use
        it; broken where the type is unknown or not dnnc's, and its users are skipped.
        The program is never run: the import fails."""
        if isinstance(val, (tuple, list)):
            return tuple(self._stand_in(f"{name}.{i}", v) for i, v in enumerate(val))
        if not isinstance(val, torch.Tensor) or not all(isinstance(d, int) for d in val.shape):
            return BROKEN
        try:
            return self.em.emit(tcp.ParamOp(f"unimported.{name}", tensor_type(val.shape, val.dtype)))
        except UnsupportedDtypeError:
            return BROKEN

    def _output_value(self, arg: object) -> SSAValue | None:
        if not isinstance(arg, torch.fx.Node):
            raise UnsupportedOpError(f"the model returns {arg!r}; dnnc programs return tensors only")
        if isinstance(self.em.values.get(arg), Broken):
            return None
        val = arg.meta.get("val")
        if isinstance(val, torch.Tensor) and val.dtype == torch.float64:
            self._refused(
                arg,
                OpRefused(
                    arg, "the model returns a float64 tensor; dnnc's programs return float32 at most (cast it with .float())"
                ),
            )
            return None
        try:
            return self.em.value(arg)
        except OpRefused as e:
            self._refused(arg, e)
            return None


def _say_narrowed(nodes: list[torch.fx.Node | None]) -> None:
    """Once per process and place: how many of the model's ops compute in float32 where
    it asked for float64, and where the first is."""
    named = [n for n in dict.fromkeys(nodes) if n is not None]
    where = next((w for w in map(locate, named) if w), None)
    say_once(
        f"dnnc: {len(named)} ops the model computes in float64 run in float32"
        + (f" (first at {where})" if where else "")
        + "; DNNC_FLOAT64=refuse makes that an import error"
    )


def _stored_tensor(ep: ExportedProgram, target: str, placeholder: str) -> object:
    tensor = stored_tensor(ep, target)
    if not isinstance(tensor, torch.Tensor):
        raise UnsupportedOpError(f"{placeholder} ({target}) is not a tensor")
    return PendingParam(target, tensor)


def _input_kind(signature: Any, name: str) -> str:
    return next((s.kind.name for s in signature.input_specs if s.arg.name == name), "unknown")


def _hint(name: str) -> str:
    return name.replace("-", "_")


def _side_effect(ep: ExportedProgram, spec: Any) -> str:
    """What a graph with a side effect writes, and where: dnnc compiles inference
    graphs without side effects."""
    from dnnc.frontend.source_location import locate

    producer = next((n for n in ep.graph.nodes if n.name == getattr(spec.arg, "name", None)), None)
    where = locate(producer) if producer is not None else None
    at = f" (at {where.brief()})" if where is not None else ""
    if spec.kind == OutputKind.BUFFER_MUTATION:
        what = (
            f"the model writes its buffer {spec.target!r} while running{at}: BatchNorm in training mode does "
            "(call model.eval() first), as do running counters and caches updated in place"
        )
    elif spec.kind == OutputKind.USER_INPUT_MUTATION:
        what = f"the model writes its input {spec.target!r} in place{at}: compute a new tensor instead (x = x + y, not x.add_(y))"
    elif spec.kind == OutputKind.TOKEN:
        what = f"the model has an op with side effects{at} (export threads an effect token through it)"
    else:
        what = f"the model's graph has an output of kind {spec.kind.name} ({spec.target!r}){at}"
    return f"{what}; dnnc compiles inference graphs without side effects"
