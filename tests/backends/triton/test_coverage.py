"""Every tcp op has a generated kernel: each is either index arithmetic that any
Triton kernel evaluates in place, or the anchor of a kernel kind. Nothing is left
to the torch stopgap on the GPU."""

from __future__ import annotations

from dnnc.backends.triton.ops import ANCHORS, INDEX_OPS, KIND_OF_ANCHOR, KINDS
from dnnc.ir import tcp

NOT_COMPUTE = (tcp.ParamOp, tcp.IsolatedGroupOp, tcp.YieldOp)
"""Weights (uploaded once), and the group structure itself."""


def test_every_tcp_op_has_a_triton_role() -> None:
    missing = [op.name for op in tcp.ALL_OPS if not issubclass(op, (*INDEX_OPS, *ANCHORS, *NOT_COMPUTE))]
    assert not missing, f"tcp ops with no Triton kernel: {missing}"


def test_every_anchor_names_a_kind() -> None:
    assert all(KIND_OF_ANCHOR.get(a) in KINDS for a in ANCHORS)
