"""``dnnc.CustomKernel``: declare a user kernel from Python.

Declaring one registers a ``torch.library`` op (``torch.ops.dnnc_user.<name>``),
so the same kernel runs in eager PyTorch (its GPU variant on CUDA tensors, its
reference on CPU tensors), traces through ``torch.export`` with a fake
implementation computed from the declaration, and is recognised by the importer,
which turns each call into an ``extern.dispatch`` of an ``extern.kernel``.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import torch

from dnnc.errors import KernelDeclarationError
from dnnc.kernels.declaration import Binding, KernelDecl, PushConstant
from dnnc.kernels.reference import run_reference, spec_of

NAMESPACE = "dnnc_user"
_library: torch.library.Library | None = None
_declared: dict[str, KernelDecl] = {}
_loaded: dict[tuple[str, str, str], Any] = {}
_eager_kernels: dict[tuple[str, torch.device], Any] = {}
"""Eager calls by kernel name and device: a name's declaration never changes in a process."""


class CustomKernel:
    """A CUDA kernel to call from a model (``kernel(a, b)``) and compile with it.

    Paths (``source``, ``objects``, ``include_dirs``) are taken relative to the file
    that declares the kernel. ``reference`` is a module-level torch function
    computing the same outputs (see ``dnnc.kernels.reference``).
    """

    def __init__(
        self,
        name: str,
        *,
        bindings: Sequence[Binding],
        block: Sequence[int],
        grid: Sequence[str | int],
        push_constants: Sequence[PushConstant] = (),
        source: str | Path | None = None,
        archs: Sequence[str] = (),
        objects: Mapping[str, str | Path] | None = None,
        entry: str | None = None,
        flags: Sequence[str] = (),
        include_dirs: Sequence[str | Path] = (),
        shared_memory: int = 0,
        reference: Callable[..., Any] | None = None,
    ):
        caller = Path(inspect.stack()[1].filename).resolve().parent

        def where(p: str | Path) -> str:
            return str(Path(p) if Path(p).is_absolute() else (caller / p).resolve())

        self.decl = KernelDecl(
            name=name,
            entry=entry or "",
            bindings=tuple(bindings),
            push_constants=tuple(push_constants),
            block=tuple(block),
            grid=tuple(grid),
            shared_memory=shared_memory,
            source=where(source) if source is not None else None,
            archs=tuple(archs),
            flags=tuple(flags),
            include_dirs=tuple(where(d) for d in include_dirs),
            objects=tuple((t, where(p)) for t, p in (objects or {}).items()),
            reference=spec_of(reference) if reference is not None else None,
        )
        if not self.decl.outputs:
            raise self.decl.fail("has no 'write' or 'readwrite' binding, so a call would compute nothing")
        self.op = _register(self.decl)

    @property
    def name(self) -> str:
        return self.decl.name

    def __call__(self, *args: Any) -> Any:
        return self.op(*args)

    def __repr__(self) -> str:
        return f"CustomKernel({self.decl.name!r}, torch.ops.{NAMESPACE}.{self.decl.name})"


def declared(name: str) -> KernelDecl | None:
    return _declared.get(name)


def _schema(decl: KernelDecl) -> str:
    args = [f"Tensor {b.name}" for b in decl.inputs] + [
        f"{'float' if c.type == 'f32' else 'int'} {c.name}" for c in decl.call_constants
    ]
    returns = "Tensor" if len(decl.outputs) == 1 else "(" + ", ".join("Tensor" for _ in decl.outputs) + ")"
    return f"{decl.name}({', '.join(args)}) -> {returns}"


def _register(decl: KernelDecl) -> Any:
    """The torch op of ``decl``; declaring the same kernel again reuses it."""
    global _library
    known = _declared.get(decl.name)
    if known is not None:
        if known != decl:
            raise KernelDeclarationError(
                f"kernel {decl.name} is declared already in this process with another declaration; give it another name"
            )
        return getattr(getattr(torch.ops, NAMESPACE), decl.name)
    if _library is None:
        _library = torch.library.Library(NAMESPACE, "FRAGMENT")
    _library.define(_schema(decl))
    name = decl.name
    _library.impl(name, lambda *a: _eager(name, a), "CUDA")
    _library.impl(name, lambda *a: _eager(name, a), "CPU")
    torch.library.register_fake(f"{NAMESPACE}::{name}", lambda *a: _fake(name, a), lib=_library)
    _declared[name] = decl
    op = getattr(getattr(torch.ops, NAMESPACE), name)
    from dnnc.frontend.aten.custom_kernels import register_import_rule

    register_import_rule(op.default, decl)
    return op


def _split(decl: KernelDecl, args: Sequence[Any]) -> tuple[list[torch.Tensor], list[int | float]]:
    n = len(decl.inputs)
    if len(args) != n + len(decl.call_constants):
        raise decl.fail(f"takes {n} tensor(s) and {len(decl.call_constants)} push constant(s), got {len(args)} arguments")
    return list(args[:n]), list(args[n:])


def _result(outputs: list[torch.Tensor]) -> Any:
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def _fake(name: str, args: Sequence[Any]) -> Any:
    decl = _declared[name]
    tensors, _ = _split(decl, args)
    symbols = decl.bind([tuple(t.shape) for t in tensors], [t.dtype for t in tensors])
    device = tensors[0].device
    return _result(
        [torch.empty(s, dtype=b.torch_dtype, device=device) for b, s in zip(decl.outputs, decl.output_shapes(symbols))]
    )


def _eager(name: str, args: Sequence[Any]) -> Any:
    decl = _declared[name]
    tensors, constants = _split(decl, args)
    device = tensors[0].device
    if device.type != "cuda":
        symbols = decl.bind([tuple(t.shape) for t in tensors], [t.dtype for t in tensors])
        decl.constant_values(symbols, constants)
        return _result([t.clone() for t in run_reference(decl, tensors, constants)])
    loaded = _eager_kernels.get((name, device))
    if loaded is None:  # objects are built or read, checked and loaded once per process and device
        loaded = _eager_kernels[(name, device)] = loaded_kernel(decl, device)
    outputs = [torch.empty(s, dtype=d, device=device) for s, d in loaded.plan(tensors, constants).out_specs]
    loaded.run(tensors, outputs, constants)
    return _result(outputs)


def loaded_kernel(decl: KernelDecl, device: torch.device, objects: Sequence[Any] | None = None) -> Any:
    """The kernel loaded on ``device``, once per process for each declaration and set of
    objects (``objects``: built or read from the declaration's paths when None)."""
    from dnnc.kernels.objects import kernel_objects
    from dnnc.kernels.runtime import LoadedKernel

    objects = kernel_objects(decl) if objects is None else objects
    digest = hashlib.sha256(b"".join(hashlib.sha256(o.data).digest() for o in objects)).hexdigest()
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:  # a module is loaded into the current GPU's context
        device = torch.device("cuda", torch.cuda.current_device())
    key = (decl.key(), digest, str(device))
    if key not in _loaded:
        _loaded[key] = LoadedKernel(decl, objects, device)
    return _loaded[key]
