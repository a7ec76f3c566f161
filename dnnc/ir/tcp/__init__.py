"""The tcp dialect (Tensor Compute Primitives): dnnc's hardware-independent ops.

Every op documents its semantics in its docstring; the reference backend
(``dnnc.backends.reference``) implements exactly that and is the oracle for every
other backend.
"""

from xdsl.ir import Dialect

from dnnc.ir.tcp.attention import ATTENTION_OPS, AttentionOp
from dnnc.ir.tcp.base import TcpOp
from dnnc.ir.tcp.elementwise import (
    BINARY_OPS,
    ELEMENTWISE_OPS,
    UNARY_OPS,
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    ClampOp,
    CompareOp,
    DivOp,
    ErfOp,
    ExpOp,
    GeluOp,
    LogicalAndOp,
    LogicalNotOp,
    LogicalOrOp,
    LogOp,
    MaximumOp,
    MinimumOp,
    MulOp,
    NegOp,
    PowOp,
    RsqrtOp,
    SelectOp,
    SigmoidOp,
    SiluOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOp,
)
from dnnc.ir.tcp.group import GROUP_OPS, IsolatedGroupOp, YieldOp
from dnnc.ir.tcp.nn import (
    NN_OPS,
    AvgPool2dOp,
    BatchMatmulOp,
    BatchNormOp,
    Conv2dOp,
    LayerNormOp,
    MatmulOp,
    MaxPool2dOp,
    SoftmaxOp,
)
from dnnc.ir.tcp.reduction import REDUCTION_OPS, ReduceMaxOp, ReduceMeanOp, ReduceOp, ReduceSumOp
from dnnc.ir.tcp.shape import SHAPE_OPS, BroadcastOp, ConcatOp, GatherOp, PadOp, ReshapeOp, SliceOp, TransposeOp
from dnnc.ir.tcp.sources import ConstantOp, IotaOp, ParamOp

SOURCE_OPS = (ParamOp, ConstantOp, IotaOp)
ALL_OPS = (*SOURCE_OPS, *ELEMENTWISE_OPS, *SHAPE_OPS, *NN_OPS, *REDUCTION_OPS, *ATTENTION_OPS, *GROUP_OPS)

TCP = Dialect("tcp", list(ALL_OPS), [])

__all__ = [
    "ALL_OPS",
    "ATTENTION_OPS",
    "BINARY_OPS",
    "SHAPE_OPS",
    "SOURCE_OPS",
    "TCP",
    "UNARY_OPS",
    "AbsOp",
    "AddOp",
    "AttentionOp",
    "AvgPool2dOp",
    "BatchMatmulOp",
    "BatchNormOp",
    "BinaryOp",
    "BroadcastOp",
    "CastOp",
    "ClampOp",
    "CompareOp",
    "ConcatOp",
    "ConstantOp",
    "Conv2dOp",
    "DivOp",
    "ErfOp",
    "ExpOp",
    "GatherOp",
    "GeluOp",
    "IotaOp",
    "IsolatedGroupOp",
    "LayerNormOp",
    "LogOp",
    "LogicalAndOp",
    "LogicalNotOp",
    "LogicalOrOp",
    "MatmulOp",
    "MaxPool2dOp",
    "MaximumOp",
    "MinimumOp",
    "MulOp",
    "NegOp",
    "PadOp",
    "ParamOp",
    "PowOp",
    "ReduceMaxOp",
    "ReduceMeanOp",
    "ReduceOp",
    "ReduceSumOp",
    "ReshapeOp",
    "RsqrtOp",
    "SelectOp",
    "SigmoidOp",
    "SiluOp",
    "SliceOp",
    "SoftmaxOp",
    "SqrtOp",
    "SubOp",
    "TanhOp",
    "TcpOp",
    "TransposeOp",
    "UnaryOp",
    "YieldOp",
]
