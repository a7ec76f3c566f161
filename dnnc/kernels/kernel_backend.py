"""User kernels as the executor and the artifact see them (``KernelBackend``).

An ``extern.dispatch`` runs its declaration's kernel, loaded once per declaration and
device, with the constants of the call. At compile time the objects come from the
declaration's files (built from source where it names one); loading an artifact
reads them from the artifact's own members, which ``embed_user_kernels`` wrote, so
loading builds nothing. Off a GPU a dispatch runs its reference implementation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from xdsl.ir import Operation

from dnnc.backends.interface import BuildContext, GroupKernel, KernelBackend
from dnnc.errors import ArtifactError
from dnnc.ir import extern


def build(op: Operation, ordinal: int | None, context: BuildContext) -> GroupKernel:
    from dnnc.kernels.objects import kernel_objects

    assert isinstance(op, extern.DispatchOp)
    recorded = context.recorded
    if recorded is None:
        return extern_kernel(op, context, lambda decl: kernel_objects(decl, base=context.base_dir))

    def read(name: str) -> bytes:
        if name not in recorded.files:
            raise ArtifactError(f"user kernel {op.kernel_name}: the artifact has no member {name!r}")
        return recorded.files[name]

    return extern_kernel(op, context, lambda decl: kernel_objects(decl, read=read))


def extern_kernel(op: extern.DispatchOp, context: BuildContext, objects: Callable[[Any], Any]) -> GroupKernel:
    """The dispatch's kernel loaded on the device with its constants."""
    from dnnc.kernels.custom import loaded_kernel
    from dnnc.kernels.runtime import ExternKernel

    decl = op.declaration()
    return ExternKernel(loaded_kernel(decl, context.device, objects(decl)), op.constant_values())


USER_KERNELS = KernelBackend(
    "extern",
    takes=lambda op: isinstance(op, extern.DispatchOp),
    build=build,
    gpu_only=True,
)
