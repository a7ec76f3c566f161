"""How the IR says that cuDNN runs a group: its ops outlined as a
``tcp.isolated_group {backend = "cudnn", kind}`` (``lower-cudnn`` turns it into a
``cudnn.graph``), carrying a tuning spec's plan when one chose it."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation

from dnnc.backends.interface import GROUP_BACKEND_ATTR, GROUP_KIND_ATTR, SPEC_PLAN_ATTR
from dnnc.ir import cudnn
from dnnc.ir.outline import outline


def mark_group(ops: Sequence[Operation], kind: str, number: int, plan: str | None = None) -> None:
    """``ops`` in program order, the last one's result the group's; ``number`` is unused
    (a cuDNN group is its own op)."""
    members = list(ops)
    attrs = {GROUP_BACKEND_ATTR: "cudnn", GROUP_KIND_ATTR: kind}
    if plan is not None:
        attrs[SPEC_PLAN_ATTR] = plan
    outline(members, [members[-1].results[0]], attrs)


def not_lowered(ops: Sequence[Operation]) -> str | None:
    """Why a marked group is not a ``cudnn.graph`` after lowering (None: it is one)."""
    if any(isinstance(op, cudnn.GraphOp) for op in ops):
        return None
    return "lower-cudnn kept the group in tcp (see the dnnc.cudnn log)"
