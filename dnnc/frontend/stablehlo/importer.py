"""StableHLO to tcp: the walk over ``func.func @main``.

Arguments become the program's inputs, ``func.call`` is inlined, every other op
goes through the rule table (``rules.py``). Constants that are not splats become
named parameters, so weights closed over by a JAX function are stored beside
the IR like PyTorch's. An op with no rule stops the import, naming the op and its
location (the user's Python line, as JAX records it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region, SSAValue
from xdsl.utils.exceptions import VerifyException

from dnnc.errors import DnncError, UnsupportedOpError
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.params import ParamStore
from dnnc.ir.program import ENTRY, Program
from dnnc.ir.types import element_from_name, tensor_type

_ELEMENTS = {"f32", "f16", "bf16", "i64", "i32", "i1"}


def _mlir() -> tuple[Any, Any]:
    try:
        from jaxlib.mlir import ir
        from jaxlib.mlir.dialects import chlo, stablehlo
    except ImportError as e:
        raise DnncError(f"importing StableHLO needs jaxlib's MLIR bindings ('pip install jax'): {e}") from None
    return ir, (stablehlo, chlo)


def read_module(source: str | bytes | Path) -> Any:
    """An MLIR module from StableHLO text, MLIR bytecode or a portable (VHLO) artifact,
    or from a file holding one of them."""
    ir, (stablehlo, _) = _mlir()
    name = "<string>"
    if isinstance(source, Path):
        name = str(source)
        try:
            source = source.read_bytes()
        except OSError as e:
            raise DnncError(f"StableHLO file {name} cannot be read: {e.strerror or e}") from None
    context = _context()
    with context:
        if isinstance(source, bytes) and not source.lstrip().startswith((b"module", b"func", b"#", b"//")):
            try:  # a portable artifact (jax.export): versioned VHLO, upgraded to this StableHLO
                return stablehlo.deserialize_portable_artifact(context, source)
            except Exception:
                pass  # plain MLIR bytecode, parsed below
        try:
            return ir.Module.parse(source)
        except Exception as e:  # MLIR's own diagnostics name the line and column
            raise DnncError(f"{name}: cannot parse StableHLO: {e}") from None


def _context() -> Any:
    """An MLIR context with every dialect JAX emits (func, stablehlo, chlo, sdy ...):
    JAX's own, so whatever its lowering writes parses."""
    try:
        from jax._src.interpreters.mlir import make_ir_context
    except ImportError as e:
        raise DnncError(f"importing StableHLO needs JAX's MLIR context ('pip install jax'): {e}") from None
    return make_ir_context()


def import_stablehlo(source: str | bytes | Path) -> Program:
    return import_module(read_module(source))


def import_module(module: Any) -> Program:
    """A tcp program from a parsed StableHLO module (its ``main`` function)."""
    ir, _ = _mlir()
    funcs = {
        ir.StringAttr(op.attributes["sym_name"]).value: op for op in module.body.operations if op.operation.name == "func.func"
    }
    main = funcs.get("main") or next((f for n, f in funcs.items() if "public" in str(f.attributes)), None)
    if main is None:
        raise UnsupportedOpError(f"the StableHLO module has no func.func @main (functions: {', '.join(funcs) or 'none'})")
    body = main.regions[0].blocks[0]
    input_types = [_tensor_type(a.type, f"argument {i} of @main", None) for i, a in enumerate(body.arguments)]
    block = Block(arg_types=input_types)
    importer = Importer(block, funcs)
    outputs = importer.run_block(body, list(block.args))
    block.add_op(func.ReturnOp(*outputs))
    fn = func.FuncOp(ENTRY, (input_types, [v.type for v in outputs]), Region(block))
    return Program(ModuleOp([fn]), importer.params)


def _tensor_type(t: Any, what: str, op: Any) -> Any:
    from jaxlib.mlir import ir

    try:
        ranked = ir.RankedTensorType(t)
    except (ValueError, TypeError):
        _fail(op, f"{what} is {t}; dnnc takes ranked tensors with static shapes")
    element = str(ranked.element_type)
    if element not in _ELEMENTS or not ranked.has_static_shape:
        _fail(op, f"{what} is {t}; dnnc takes static shapes of {', '.join(sorted(_ELEMENTS))}")
    return tensor_type(list(ranked.shape), element_from_name(element))


def location(op: Any) -> str:
    """The user's frame JAX recorded in an op's location, else the whole location."""
    text = str(op.location)
    frames = re.findall(r'"([^"]+)":(\d+):(\d+)', text)
    user = [f for f in frames if not f[0].startswith("<")] or frames
    return f"{user[0][0]}:{user[0][1]}" if user else text


def _fail(op: Any, reason: str) -> NoReturn:
    where = f"\n  at {location(op)}" if op is not None else ""
    name = op.operation.name if op is not None else "StableHLO"
    raise UnsupportedOpError(f"{name}: {reason}{where}")


class Importer(TcpBuilder):
    """Builds tcp at the end of a block while walking StableHLO blocks."""

    def __init__(self, block: Block, funcs: dict[str, Any]):
        super().__init__(TcpBuilder.at_end(block).insert_point)
        self.funcs = funcs
        self.params = ParamStore()
        self.op: Any = None

    def fail(self, reason: str) -> NoReturn:
        _fail(self.op, reason)

    def type_of(self, value: Any, what: str = "result") -> Any:
        return _tensor_type(value.type, what, self.op)

    def run_block(self, body: Any, args: Sequence[SSAValue]) -> list[SSAValue]:
        from dnnc.frontend.stablehlo.rules import RULES

        values: dict[Any, SSAValue] = dict(zip(body.arguments, args))
        for op in body.operations:
            self.op = op
            name = op.operation.name
            operands = [values[v] for v in op.operands]
            if name in ("func.return", "stablehlo.return"):
                return operands
            if name == "func.call":
                callee = op.attributes["callee"]
                target = self.funcs.get(str(callee).lstrip("@"))
                if target is None:
                    self.fail(f"calls {callee}, which the module does not define")
                results = self.run_block(target.regions[0].blocks[0], operands)
            else:
                rule = RULES.get(name)
                if rule is None:
                    self.fail("dnnc has no import rule for this op")
                try:
                    results = rule(self, op, operands)
                except VerifyException as e:
                    self.fail(f"cannot express as tcp: {e}")
            for r, v in zip(op.results, results, strict=True):
                expected = self.type_of(r)
                if v.type != expected:
                    self.fail(f"imported as {v.type}, but StableHLO says {expected}")
                values[r] = v
        self.fail("block has no return")
