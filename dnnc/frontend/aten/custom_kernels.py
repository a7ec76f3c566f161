"""Import rules for user kernels: a call of ``torch.ops.dnnc_user.<name>`` becomes
an ``extern.dispatch`` of its ``extern.kernel`` (added to the module once)."""

from __future__ import annotations

from typing import Any

from torch._ops import OpOverload

from dnnc.errors import KernelDeclarationError
from dnnc.frontend.aten.registry import IMPORT_RULES
from dnnc.frontend.emitter import Emitter
from dnnc.ir.extern import DispatchOp, constant_attrs, dispatch_result_types


def register_import_rule(target: OpOverload, decl: Any) -> None:
    def rule(em: Emitter, **args: Any) -> Any:
        inputs = [em.value(args[b.name]) for b in decl.inputs]
        constants = [args[c.name] for c in decl.call_constants]
        try:
            types = dispatch_result_types(decl, [v.type for v in inputs], constants)
        except KernelDeclarationError as e:
            em.unsupported(str(e))
        op = DispatchOp(decl.name, inputs, constant_attrs(decl, constants), types)
        em.emit(op)
        em.kernels[decl.name] = decl
        return op.results[0] if len(op.results) == 1 else tuple(op.results)

    IMPORT_RULES[target] = rule
