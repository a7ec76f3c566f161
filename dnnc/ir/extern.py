"""The ``extern`` dialect: user kernels declared in the IR and dispatched from it.

``extern.kernel @name {...}`` sits at module level (like IREE's
``hal.executable.source``) and carries the whole declaration
(``dnnc.kernels.declaration.KernelDecl``): bindings, push constants, block, grid
formulas, objects per target or a source to build them from, and an optional
reference implementation. ``extern.dispatch @name(%a, %b) {constants = [...]}``
runs it on tensors (like ``flow.dispatch``): its operands are the kernel's
``read`` and ``readwrite`` bindings, its results the ``readwrite`` ones (the
updated inputs, tied) and then the ``write`` ones, and ``constants`` holds the
push constants the caller passes. The verifier checks every dispatch against its
kernel: types, shape symbols, the grid against CUDA's limits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    TensorType,
    f32,
    i32,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    prop_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import Pure, SymbolOpInterface, SymbolTable
from xdsl.utils.exceptions import VerifyException

from dnnc.errors import KernelDeclarationError
from dnnc.ir.types import describe, shape_of, tensor_type

if TYPE_CHECKING:
    from dnnc.kernels.declaration import KernelDecl

_DECL_FIELDS = (
    "entry",
    "bindings",
    "push_constants",
    "block",
    "grid",
    "shared_memory",
    "source",
    "archs",
    "flags",
    "include_dirs",
    "objects",
    "reference",
)


def _to_attr(value: Any) -> Attribute:
    if isinstance(value, str):
        return StringAttr(value)
    if isinstance(value, bool):
        raise TypeError("booleans are not used in kernel declarations")
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, Mapping):
        return DictionaryAttr({k: _to_attr(v) for k, v in value.items() if v is not None})
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            return DenseArrayBase.from_list(i64, list(value))
        return ArrayAttr([_to_attr(v) for v in value])
    raise TypeError(f"cannot store {value!r} in a kernel declaration")


def _from_attr(attr: Attribute) -> Any:
    if isinstance(attr, StringAttr):
        return attr.data
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, DictionaryAttr):
        return {k: _from_attr(v) for k, v in attr.data.items()}
    if isinstance(attr, DenseArrayBase):
        return [int(v) for v in attr.get_values()]
    if isinstance(attr, ArrayAttr):
        return [_from_attr(v) for v in attr.data]
    raise TypeError(f"unexpected attribute {attr} in a kernel declaration")


@irdl_op_definition
class KernelOp(IRDLOperation):
    """A user kernel; its attributes are the declaration (see the module docstring)."""

    name = "extern.kernel"
    sym_name = prop_def(SymbolNameConstraint())
    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name attr-dict"

    def __init__(self, decl: KernelDecl):
        data = decl.to_json()
        attrs = {k: _to_attr(data[k]) for k in _DECL_FIELDS if data.get(k) not in (None, [], {}, "", 0) or k in ("block", "grid")}
        super().__init__(properties={"sym_name": StringAttr(decl.name)}, attributes=attrs)

    @property
    def kernel_name(self) -> str:
        return self.sym_name.data

    def declaration(self) -> KernelDecl:
        """The ``KernelDecl`` this op states (parsed again on each call: ops are mutable)."""
        from dnnc.kernels.declaration import KernelDecl

        try:
            data = {k: _from_attr(v) for k, v in self.attributes.items()}
        except TypeError as e:
            raise KernelDeclarationError(f"kernel {self.kernel_name}: {e}") from None
        return KernelDecl.from_json({"name": self.kernel_name, **data})

    def verify_(self) -> None:
        unknown = sorted(set(self.attributes) - set(_DECL_FIELDS))
        if unknown:
            raise VerifyException(
                f"{self.name} @{self.kernel_name}: unknown attribute {unknown[0]!r} (known: {', '.join(_DECL_FIELDS)})"
            )
        try:
            self.declaration()
        except KernelDeclarationError as e:
            raise VerifyException(f"{self.name}: {e}") from None


@irdl_op_definition
class DispatchOp(IRDLOperation):
    """Runs kernel ``@kernel`` on its operands; see the module docstring."""

    name = "extern.dispatch"
    kernel = prop_def(SymbolRefAttr)
    constants = prop_def(ArrayAttr)
    args = var_operand_def(TensorType)
    outputs = var_result_def(TensorType)
    traits = traits_def(Pure())  # tensors in, tensors out: an unused dispatch is dead
    irdl_options = (ParsePropInAttrDict(),)
    assembly_format = "$kernel `(` $args `)` attr-dict `:` functional-type($args, $outputs)"

    def __init__(self, kernel: str, args: list[SSAValue], constants: list[Attribute], result_types: list[TensorType]):
        super().__init__(
            operands=[args],
            result_types=[result_types],
            properties={"kernel": SymbolRefAttr(kernel), "constants": ArrayAttr(constants)},
        )

    @property
    def kernel_name(self) -> str:
        return self.kernel.root_reference.data

    def kernel_op(self) -> KernelOp | None:
        found = SymbolTable.lookup_symbol(self, self.kernel_name)
        return found if isinstance(found, KernelOp) else None

    def declaration(self) -> KernelDecl:
        """The declaration of the kernel this dispatches (raises if the module has none)."""
        kernel = self.kernel_op()
        if kernel is None:
            raise KernelDeclarationError(f"{self.name}: no extern.kernel @{self.kernel_name} in the module")
        return kernel.declaration()

    def constant_values(self) -> list[int | float]:
        return [float(c.value.data) if isinstance(c, FloatAttr) else int(c.value.data) for c in self.constants.data]  # type: ignore[attr-defined]

    def verify_(self) -> None:
        top = self.get_toplevel_object()
        if not isinstance(top, ModuleOp):
            return  # being built; checked once it is in a module
        try:
            decl = self.declaration()
        except KernelDeclarationError as e:  # its message names this op already
            raise VerifyException(str(e)) from None
        try:
            expected = dispatch_result_types(decl, [a.type for a in self.args], self.constant_values())
        except KernelDeclarationError as e:
            raise VerifyException(f"{self.name}: {e}") from None
        results = [r.type for r in self.outputs]
        if results != expected:
            got = ", ".join(describe(t) for t in results) or "none"
            want = ", ".join(describe(t) for t in expected) or "none"
            raise VerifyException(f"{self.name}: kernel {decl.name}: results are {got}, but the declaration gives {want}")


def dispatch_result_types(decl: KernelDecl, arg_types: list[Any], constants: list[int | float]) -> list[TensorType]:
    """The result types of a call of ``decl`` on tensors of these types with these caller
    constants; raises if the call does not fit (bindings, grid limits, constant ranges)."""
    from dnnc.ir.types import element_from_name, torch_dtype

    symbols = decl.bind([shape_of(t) for t in arg_types], [torch_dtype(t.element_type) for t in arg_types])
    decl.grid_for(symbols)
    decl.constant_values(symbols, constants)
    return [tensor_type(s, element_from_name(b.dtype)) for b, s in zip(decl.outputs, decl.output_shapes(symbols))]


def constant_attrs(decl: KernelDecl, values: list[int | float]) -> list[Attribute]:
    """The caller's push-constant values as typed attributes, in declared order."""
    types = {"i32": i32, "i64": i64}
    return [
        FloatAttr(float(v), f32) if c.type == "f32" else IntegerAttr(int(v), types[c.type])
        for c, v in zip(decl.call_constants, values)
    ]


EXTERN = Dialect("extern", [KernelOp, DispatchOp], [])
