"""The xDSL context with every dialect dnnc's IR may contain."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.dialects.func import Func

from dnnc.ir.cudnn import CUDNN
from dnnc.ir.extern import EXTERN
from dnnc.ir.tcp import TCP


def make_context() -> Context:
    ctx = Context()
    for dialect in (Builtin, Func, TCP, CUDNN, EXTERN):
        ctx.load_dialect(dialect)
    return ctx
