"""Import a ``torch.export`` program (core ATen after decomposition) into tcp.

The walk is generic: placeholders become function arguments or named parameters,
every call goes through the rule table in ``dnnc.frontend.aten``, and an op with no
rule stops the import with its name and the user's source line.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Sequence
from typing import Any

import torch
import torch.fx
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue

from dnnc.errors import UnsupportedOpError
from dnnc.frontend.aten import IGNORED, IMPORT_RULES, bind_args
from dnnc.frontend.emitter import Emitter, PendingParam
from dnnc.ir.extern import KernelOp
from dnnc.ir.params import ParamStore
from dnnc.ir.program import ENTRY, Program
from dnnc.ir.types import UnsupportedDtypeError, tensor_type


def export(model: torch.nn.Module, example_inputs: Sequence[Any]) -> ExportedProgram:
    """torch.export the model and decompose it to core ATen."""
    with torch.no_grad(), warnings.catch_warnings():
        # torch's own pytree deprecation notice, raised inside torch.export itself.
        warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
        ep = torch.export.export(model, tuple(example_inputs))
        return decompose(ep)


def decompose(ep: ExportedProgram) -> ExportedProgram:
    """Lower an exported program to core ATen, the op set the import rules cover."""
    return ep.run_decompositions()


def import_program(ep: ExportedProgram) -> Program:
    signature = ep.graph_signature
    user_inputs = [s.arg.name for s in signature.input_specs if s.kind == InputKind.USER_INPUT]
    stored = {
        s.arg.name: s.target
        for s in signature.input_specs
        if s.kind in (InputKind.PARAMETER, InputKind.BUFFER, InputKind.CONSTANT_TENSOR)
    }
    for spec in signature.output_specs:
        if spec.kind != OutputKind.USER_OUTPUT:
            raise UnsupportedOpError(
                f"the model writes its buffer {spec.target} while running ({spec.kind.name}), as BatchNorm does in "
                "training mode; dnnc compiles inference graphs without side effects: call model.eval() first"
            )

    nodes = {n.name: n for n in ep.graph.nodes}
    input_types = []
    for name in user_inputs:
        val = nodes[name].meta.get("val")
        if not isinstance(val, torch.Tensor):
            raise UnsupportedOpError(f"input {name!r} is {type(val).__name__}; dnnc takes tensors only")
        try:
            input_types.append(tensor_type(val.shape, val.dtype))
        except UnsupportedDtypeError as e:
            raise UnsupportedOpError(f"input {name!r}: {e}") from None

    block = Block(arg_types=input_types)
    em = Emitter(block, ParamStore())
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
            _import_call(em, node)
        elif node.op == "output":
            outputs = [_output_value(em, v) for v in node.args[0]]
        else:
            em.unsupported(f"fx node kind {node.op!r}")

    block.add_op(func.ReturnOp(*outputs))
    fn = func.FuncOp(ENTRY, (input_types, [v.type for v in outputs]), Region(block))
    kernels = [KernelOp(decl) for decl in em.kernels.values()]
    return Program(ModuleOp([*kernels, fn]), em.params)


def _import_call(em: Emitter, node: torch.fx.Node) -> None:
    target = node.target
    if target in IGNORED:
        return
    if target is operator.getitem:
        source, index = node.args
        em.values[node] = em.values[source][index]  # type: ignore[index]
        return
    rule = IMPORT_RULES.get(target)  # type: ignore[arg-type]
    if rule is None:
        em.unsupported("dnnc has no import rule for this op")
    result = rule(em, **bind_args(target, node.args, node.kwargs))  # type: ignore[arg-type]
    if isinstance(result, SSAValue) and result.name_hint is None and result.owner is not None:
        result.name_hint = _hint(node.name)
    em.values[node] = result


def _output_value(em: Emitter, arg: object) -> SSAValue:
    if not isinstance(arg, torch.fx.Node):
        raise UnsupportedOpError(f"the model returns {arg!r}; dnnc programs return tensors only")
    return em.value(arg)


def _stored_tensor(ep: ExportedProgram, target: str, placeholder: str) -> object:
    tensor = ep.state_dict.get(target)
    if tensor is None:
        tensor = ep.constants.get(target)
    if not isinstance(tensor, torch.Tensor):
        raise UnsupportedOpError(f"{placeholder} ({target}) is not a tensor")
    return PendingParam(target, tensor)


def _input_kind(signature: Any, name: str) -> str:
    return next((s.kind.name for s in signature.input_specs if s.arg.name == name), "unknown")


def _hint(name: str) -> str:
    return name.replace("-", "_")
