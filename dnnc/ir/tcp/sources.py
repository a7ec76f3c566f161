"""Ops that produce values from nothing: named parameters, splat constants, iota.

Weights never live in the IR: ``tcp.param @name`` stands for a tensor stored beside
it (safetensors), as IREE's named parameters do. Constants are splats only, so the
text stays small; anything larger is a parameter.
"""

from __future__ import annotations

from xdsl.dialects.builtin import FloatAttr, IntegerAttr, SymbolRefAttr, TensorType
from xdsl.irdl import irdl_op_definition, prop_def, result_def, traits_def
from xdsl.traits import ConstantLike, Pure

from dnnc.ir.attrs import int_attr, scalar
from dnnc.ir.tcp.base import TcpOp, fail
from dnnc.ir.types import SUPPORTED_ELEMENT_TYPES, describe, element_name, is_float, is_integer


def _check_supported(op: str, t: TensorType) -> None:
    if t.element_type not in SUPPORTED_ELEMENT_TYPES:
        raise fail(op, f"unsupported element type in {t}")


@irdl_op_definition
class ParamOp(TcpOp):
    """The named parameter ``name`` (a weight or buffer stored beside the IR).

    Its value comes from the program's parameter store; the store's tensor must have
    exactly this shape and element type.
    """

    name = "tcp.param"
    sym_name = prop_def(SymbolRefAttr, prop_name="name")
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "$name attr-dict `:` type($result)"

    def __init__(self, param_name: str, result_type: TensorType):
        super().__init__(properties={"name": SymbolRefAttr(param_name)}, result_types=[result_type])

    @property
    def param_name(self) -> str:
        return self.sym_name.root_reference.data

    def verify_(self) -> None:
        _check_supported(self.name, self.result.type)


@irdl_op_definition
class ConstantOp(TcpOp):
    """A tensor whose every element is ``value`` (a float for float types, an integer
    otherwise), rounded to the element type (0.1 in an f16 constant is f16's 0.1)."""

    name = "tcp.constant"
    value = prop_def(FloatAttr | IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, value: FloatAttr | IntegerAttr, result_type: TensorType):
        super().__init__(properties={"value": value}, result_types=[result_type])

    @property
    def scalar(self) -> float | int | bool:
        return scalar(self.value)

    def verify_(self) -> None:
        t = self.result.type
        _check_supported(self.name, t)
        if is_float(t.element_type) != isinstance(self.value, FloatAttr):
            kind = "a float" if is_float(t.element_type) else "an integer"
            raise fail(self.name, f"a {element_name(t.element_type)} constant needs {kind} value, got {self.value}")


@irdl_op_definition
class IotaOp(TcpOp):
    """A rank-1 tensor holding ``start + i * step`` for i = 0, 1, ... (torch.arange)."""

    name = "tcp.iota"
    start = prop_def(IntegerAttr)
    step = prop_def(IntegerAttr)
    result = result_def(TensorType)
    traits = traits_def(Pure(), ConstantLike())
    assembly_format = "attr-dict `:` type($result)"

    def __init__(self, start: int, step: int, result_type: TensorType):
        super().__init__(properties={"start": int_attr(start), "step": int_attr(step)}, result_types=[result_type])

    def verify_(self) -> None:
        t = self.result.type
        if len(t.get_shape()) != 1 or not (is_integer(t.element_type) or is_float(t.element_type)):
            raise fail(self.name, f"result must be a rank-1 integer or float tensor, got {describe(t)}")
        if scalar(self.step) == 0:
            raise fail(self.name, "step must not be zero")
