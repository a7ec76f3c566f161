"""The importer's builder: values of fx nodes, scalars as constants, and errors
that point at the user's source line. Op construction itself is TcpBuilder's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

import torch
import torch.fx
from xdsl.dialects.builtin import TensorType, f32
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from dnnc import knobs
from dnnc.errors import UnsupportedOpError
from dnnc.frontend.source_location import locate
from dnnc.ir import tcp
from dnnc.ir.builder import TcpBuilder
from dnnc.ir.params import ParamStore
from dnnc.ir.types import UnsupportedDtypeError, element_type, tensor_type


@dataclass(frozen=True)
class Unavailable:
    """An output of a multi-result ATen op that dnnc does not compute (e.g. the
    indices of max_pool2d_with_indices); using it is an import error."""

    what: str


@dataclass(frozen=True)
class PendingParam:
    """A stored tensor not referenced yet; it becomes a ``tcp.param`` at first use,
    so parameters appear next to the code that needs them."""

    name: str
    tensor: torch.Tensor


@dataclass(frozen=True)
class FoldedConstant:
    """A constant node (computed from stored tensors only) that the import rules
    cannot express, for ``reason``. ``compute`` evaluates it with PyTorch; that
    happens at first use by imported code, and the value becomes the parameter
    ``name``. A constant used only by other folded constants is never computed alone."""

    name: str
    reason: str
    compute: Callable[[], object]


@dataclass(frozen=True)
class Broken:
    """The value of a node that could not be imported and has no stand-in (no static
    tensor type). Its problem is reported once, at that node; nodes that use the
    value are skipped, not reported again."""


BROKEN = Broken()


class OpRefused(UnsupportedOpError):
    """A node (its op, or these arguments of it) that cannot be imported, and why."""

    def __init__(self, node: torch.fx.Node | None, reason: str):
        op = str(node.target) if node is not None else "<graph>"
        where = locate(node) if node is not None else None
        super().__init__(f"{op}: {reason}" + (f"\n  at {where}" if where else ""))
        self.node = node
        self.reason = reason


@dataclass(frozen=True)
class Checkpoint:
    """What the emitter has built so far, to undo a rule that refused halfway."""

    last_op: Operation | None
    params: frozenset[str]
    kernels: frozenset[str]


def narrows(dtype: torch.dtype) -> bool:
    """Whether values of ``dtype`` are computed in float32 here (float64, ``knobs.float64``)."""
    return dtype == torch.float64 and knobs.get().float64 == "float32"


class Emitter(TcpBuilder):
    def __init__(self, block: Block, params: ParamStore):
        super().__init__(TcpBuilder.at_end(block).insert_point)
        self.block = block
        self.params = params
        self.values: dict[torch.fx.Node, object] = {}
        self.node: torch.fx.Node | None = None
        self._param_values: dict[str, SSAValue] = {}
        self.kernels: dict[str, object] = {}
        """User kernels dispatched so far (``KernelDecl`` by name): declared in the module."""
        self.narrowed: list[torch.fx.Node | None] = []
        """The nodes whose float64 values are computed in float32 (``element``)."""

    # Errors ---------------------------------------------------------------------------

    def unsupported(self, reason: str, node: torch.fx.Node | None = None) -> NoReturn:
        """Refuse the node (or ``node``, the argument at fault), naming the ATen op and
        where the user's code called it. The importer collects these over the model."""
        raise OpRefused(node or self.node, reason)

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(self.block.last_op, frozenset(self._param_values), frozenset(self.kernels))

    def rollback(self, to: Checkpoint) -> None:
        """Erase what was built since ``to`` (latest first, so no erased op has uses)."""
        while self.block.last_op is not to.last_op:
            last = self.block.last_op
            assert last is not None
            self.block.erase_op(last)
        added = set(self._param_values) - to.params
        for name in added:
            del self._param_values[name]
        self.params.keep_only(set(self.params) - added)
        for name in set(self.kernels) - to.kernels:
            del self.kernels[name]

    def build(self, op_type: type[tcp.TcpOp], operands: Sequence[SSAValue | Sequence[SSAValue]], **props: Attribute) -> SSAValue:
        try:
            return super().build(op_type, operands, **props)
        except VerifyException as e:
            self.unsupported(f"cannot express as {op_type.name}: {e}")

    def typed(self, op_type: type[Operation], operands: Sequence[SSAValue], result: TensorType) -> SSAValue:
        try:
            return super().typed(op_type, operands, result)
        except VerifyException as e:
            self.unsupported(str(e))

    def broadcast_to(self, v: SSAValue, shape: Sequence[int]) -> SSAValue:
        try:
            return super().broadcast_to(v, shape)
        except VerifyException as e:
            self.unsupported(str(e))

    # Values of the exported graph -------------------------------------------------------

    def value(self, arg: object) -> SSAValue:
        """The tcp value of a tensor argument (an fx node or a value built already)."""
        if isinstance(arg, SSAValue):
            return arg
        if not isinstance(arg, torch.fx.Node):
            self.unsupported(f"expected a tensor argument, got {arg!r}")
        v = self.values[arg]
        if isinstance(v, FoldedConstant):
            v = self.values[arg] = self._computed(arg, v)
        if isinstance(v, PendingParam):
            v = self.param(v.name, v.tensor)
        if isinstance(v, Unavailable):
            self.unsupported(f"uses {v.what}, which dnnc does not compute", arg)
        if isinstance(v, Broken):
            self.unsupported("uses a value that could not be imported", arg)
        if not isinstance(v, SSAValue):
            self.unsupported(f"expected a tensor argument, got {type(v).__name__}")
        return v

    def _computed(self, node: torch.fx.Node, folded: FoldedConstant) -> PendingParam:
        """A folded constant's value, computed now, as a parameter to be."""
        try:
            tensor = folded.compute()
        except Exception as e:  # PyTorch running the model's own op on stored tensors
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            self.unsupported(f"{folded.reason}; computing it at compile time failed: {type(e).__name__}: {first}", node)
        if not isinstance(tensor, torch.Tensor):
            self.unsupported(f"{folded.reason}; its compile-time value is {type(tensor).__name__}, not a tensor", node)
        if not narrows(tensor.dtype):  # else a float32 parameter
            try:
                tensor_type(tensor.shape, tensor.dtype)
            except UnsupportedDtypeError as e:
                self.unsupported(f"{folded.reason}; its compile-time value cannot be a parameter: {e}", node)
        return PendingParam(folded.name, tensor)

    def meta(self, arg: object) -> torch.Tensor:
        val = arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None
        if not isinstance(val, torch.Tensor):
            self.unsupported("has no static tensor metadata (dynamic shapes are not supported)")
        if not all(isinstance(d, int) for d in val.shape):
            self.unsupported(
                f"has a data-dependent or symbolic shape {list(val.shape)} (as boolean-mask indexing gives); "
                "dnnc compiles static shapes"
            )
        return val

    def element(self, dtype: torch.dtype, node: torch.fx.Node | None = None) -> Attribute:
        """The element type a value the model computes in ``dtype`` has here: float64 is
        computed in float32 where ``knobs.float64`` says so (the node is remembered in
        ``narrowed``); a dtype dnnc has no type for refuses the node."""
        if narrows(dtype):
            self.narrowed.append(node or self.node)
            return f32
        try:
            return element_type(dtype)
        except UnsupportedDtypeError as e:
            self.unsupported(str(e), node)

    def result_type(self, node: torch.fx.Node | None = None) -> TensorType:
        val = self.meta(node or self.node)
        return TensorType(self.element(val.dtype, node), list(val.shape))

    def param(self, name: str, tensor: torch.Tensor) -> SSAValue:
        if name not in self._param_values:
            if narrows(tensor.dtype):
                tensor = tensor.float()  # a stored or computed float64 tensor, used in float32
                self.narrowed.append(self.node)
            try:
                t = tensor_type(tensor.shape, tensor.dtype)
            except UnsupportedDtypeError as e:
                raise UnsupportedOpError(f"parameter {name}: {e}") from None
            self.params.add(name, tensor)
            self._param_values[name] = self.emit(tcp.ParamOp(name, t))
        return self._param_values[name]

    def operand(self, arg: object, shape: Sequence[int], element: Attribute) -> SSAValue:
        """A tensor or Python scalar argument as a value of exactly this shape and type."""
        if isinstance(arg, (bool, int, float)):
            return self.constant(arg, shape, element)
        return self.broadcast_to(self.cast(self.value(arg), element), shape)

    def promoted_element(self, a: object, b: object) -> Attribute:
        """The element type PyTorch computes ``a <op> b`` in (tensors or scalars)."""
        ma = self.meta(a) if isinstance(a, torch.fx.Node) else a
        mb = self.meta(b) if isinstance(b, torch.fx.Node) else b
        return self.element(torch.result_type(ma, mb))  # type: ignore[arg-type]
