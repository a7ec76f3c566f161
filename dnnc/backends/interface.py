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
