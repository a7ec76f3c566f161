"""What the GPU executor needs from a backend's compiled group.

A backend compiles one group (a ``tcp.isolated_group`` or a ``cudnn.graph``) into a
``GroupKernel``. The executor owns memory: it allocates every output as a
contiguous (row-major) tensor of the op's result type and hands it to ``launch``,
so kernels never allocate, never synchronize and can be captured in a CUDA graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import torch


class GroupKernel(Protocol):
    backend: str
    """Which backend runs it: ``cudnn``, ``triton`` or ``torch`` (the stopgap)."""

    def launch(self, inputs: Sequence[torch.Tensor], outputs: Sequence[torch.Tensor]) -> None:
        """Enqueue the work on the current torch stream; write results into ``outputs``."""
        ...


GROUP_BACKEND_ATTR = "backend"
"""Attribute on ``tcp.isolated_group`` naming the backend that takes it (a string)."""

GROUP_KIND_ATTR = "kind"
"""Attribute on ``tcp.isolated_group`` naming the pattern or kernel kind (a string)."""
SPEC_PLAN_ATTR = "dnnc.plan"
"""On an outlined cuDNN group: the plan (``PlanRecord`` JSON: engine, knobs, tag) a
tuning spec chose; ``lower-cudnn`` moves it onto the ``cudnn.graph``, which is then
built from it without tuning."""
SPEC_CONFIG_ATTR = "dnnc.triton_config"
"""On an op: the Triton config (JSON) a tuning spec chose for the kernel that holds it
(used as is, not tuned)."""
SITE_ATTR = "dnnc.site"
"""What a tuning spec would match at a cuDNN-rootable op, and the decision-record group
that runs it (JSON, ``partition.spec_facts.site_json``): on an outlined cuDNN group (carried to its
``cudnn.graph``) or on the root op inside a Triton group. ``dnnc tune`` reads it back
from the built program to write records."""


def group_attr(op: object, name: str) -> str | None:
    """A string attribute of a group or graph op (``backend``, ``kind``), or None."""
    from xdsl.dialects.builtin import StringAttr

    attr = getattr(op, "attributes", {}).get(name)
    return attr.data if isinstance(attr, StringAttr) else None
