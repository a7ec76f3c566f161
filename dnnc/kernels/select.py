"""Which of a kernel's objects a GPU runs: the best cubin for its SM, else PTX
that the driver JIT-compiles, else the kernel's reference implementation.

A cubin for ``sm_XY`` runs on SM ``X.Z`` with ``Z >= Y`` (same major); an
arch-specific one (``sm_90a``) on that SM only. PTX for ``compute_XY`` runs on
any SM at least ``XY``. Within each kind the highest target wins, because it
can use the most of the device.
"""

from __future__ import annotations

from collections.abc import Sequence

from dnnc.kernels.declaration import target_capability
from dnnc.kernels.objects import KernelObject


def runs_on(obj: KernelObject, capability: int) -> bool:
    target, specific = target_capability(obj.target)
    if specific:
        return target == capability
    if obj.kind == "cubin":
        return target // 10 == capability // 10 and target <= capability
    return target <= capability


def ranked(objects: Sequence[KernelObject], capability: int) -> list[KernelObject]:
    """The objects that can run on SM ``capability`` (90 for sm_90), best first:
    cubins before PTX, higher targets first."""
    fitting = [o for o in objects if runs_on(o, capability)]
    return sorted(fitting, key=lambda o: (o.kind != "cubin", -target_capability(o.target)[0], not target_capability(o.target)[1]))


def describe_objects(objects: Sequence[KernelObject]) -> str:
    return ", ".join(o.describe() for o in objects) or "none"
