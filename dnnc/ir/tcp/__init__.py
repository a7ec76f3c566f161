"""The tcp dialect (Tensor Compute Primitives): dnnc's hardware-independent ops.

Every op documents its semantics in its docstring; the reference backend
(``dnnc.backends.reference``) implements exactly that and is the oracle for every
other backend.
"""

from xdsl.ir import Dialect

from dnnc.ir.tcp.base import TcpOp
from dnnc.ir.tcp.elementwise import *  # noqa: F403
from dnnc.ir.tcp.elementwise import BINARY_OPS, ELEMENTWISE_OPS, UNARY_OPS
from dnnc.ir.tcp.group import GROUP_OPS, IsolatedGroupOp, YieldOp
from dnnc.ir.tcp.nn import *  # noqa: F403
from dnnc.ir.tcp.nn import NN_OPS
from dnnc.ir.tcp.reduction import REDUCTION_OPS, ReduceMaxOp, ReduceMeanOp, ReduceOp, ReduceSumOp
from dnnc.ir.tcp.shape import *  # noqa: F403
from dnnc.ir.tcp.shape import SHAPE_OPS
from dnnc.ir.tcp.sources import ConstantOp, IotaOp, ParamOp

SOURCE_OPS = (ParamOp, ConstantOp, IotaOp)
ALL_OPS = (*SOURCE_OPS, *ELEMENTWISE_OPS, *SHAPE_OPS, *NN_OPS, *REDUCTION_OPS, *GROUP_OPS)

TCP = Dialect("tcp", list(ALL_OPS), [])

__all__ = [
    "ALL_OPS",
    "BINARY_OPS",
    "SHAPE_OPS",
    "TCP",
    "UNARY_OPS",
    "ConstantOp",
    "IotaOp",
    "IsolatedGroupOp",
    "ParamOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceOp",
    "ReduceSumOp",
    "TcpOp",
    "YieldOp",
]
