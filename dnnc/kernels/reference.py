"""A kernel's reference implementation: a torch function named in the declaration
as ``module:function`` or ``path/file.py:function``.

It takes the kernel's input tensors (``read`` and ``readwrite`` bindings, in
order) and then the caller's push constants, and returns its outputs
(``readwrite`` bindings' new values, then ``write`` ones) without mutating its
arguments. It runs the kernel on the CPU reference backend, and on a GPU where
no object fits the device.

A name in an IR file or an artifact is data, not an instruction: it resolves only
to a function this process handed to ``dnnc.CustomKernel`` (the user's own import
declared it). Importing the module or file it names, which runs its code, happens
only when the user trusts the file: ``dnnc.load(..., trust_code=True)``,
``dnnc run --trust-code`` (``load_trusted``). Artifacts name a file-based reference
by its file name only (``portable``), never by the compiling machine's path.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dnnc.errors import KernelDeclarationError

_known: dict[str, Callable[..., Any]] = {}
"""Functions handed to ``CustomKernel`` in this process, by their spec: found without importing anything."""


def spec_of(fn: Callable[..., Any]) -> str:
    """How to find ``fn`` again: ``module:qualname`` for an importable module, else
    ``/abs/path/file.py:qualname``. Remembered for this process too."""
    qualname = getattr(fn, "__qualname__", "")
    if not qualname or "<" in qualname:
        raise KernelDeclarationError(
            f"a reference implementation must be a module-level function (got {qualname or fn!r}): it is named in the IR"
        )
    module = getattr(fn, "__module__", None) or ""
    source = inspect.getsourcefile(fn)
    if source is not None and not _importable_as(module, Path(source)):
        spec = f"{Path(source).resolve()}:{qualname}"
    elif module:
        spec = f"{module}:{qualname}"
    else:
        raise KernelDeclarationError(f"reference {qualname}: neither its module nor its source file can be found")
    _known[spec] = fn
    _known.setdefault(portable(spec), fn)
    return spec


def portable(spec: str) -> str:
    """``spec`` without the directories of a file path (``/home/u/k.py:f`` ->
    ``k.py:f``): what an artifact records."""
    location, _, qualname = spec.rpartition(":")
    return f"{Path(location).name}:{qualname}" if location.endswith(".py") else spec


def _importable_as(module: str, source: Path) -> bool:
    """Whether ``import module`` from ``sys.path`` finds ``source``: a file loaded under
    another name (``__main__``, a model file, a notebook's reload) is named by its path, so
    the same function gets the same name however its file was loaded."""
    source = source.resolve()
    for entry in sys.path:
        try:
            parts = source.relative_to(Path(entry or ".").resolve()).with_suffix("").parts
        except ValueError:
            continue
        if parts and parts[-1] == "__init__":
            parts = parts[:-1]
        if ".".join(parts) == module:
            return True
    return False


def resolve(spec: str, kernel: str) -> Callable[..., Any]:
    """The function ``spec`` names, among those this process declared or trusted."""
    fn = _known.get(spec)
    if fn is None:
        raise KernelDeclarationError(
            f"kernel {kernel}: its reference {spec!r} is no function this process declared with dnnc.CustomKernel; "
            "dnnc does not import code that an IR file or artifact names. Import the module that declares the kernel "
            "first (dnnc run --import FILE.py|MODULE), or, if you trust the file, pass trust_code=True to dnnc.load "
            "(--trust-code to dnnc run)"
        )
    return fn


def load_trusted(spec: str, kernel: str) -> Callable[..., Any]:
    """Import the module or file ``spec`` names (running its code) and remember its
    function: for files the user has said they trust."""
    if spec in _known:
        return _known[spec]
    location, _, qualname = spec.rpartition(":")
    try:
        if location.endswith(".py"):
            module_name = f"_dnnc_reference_{abs(hash(location))}"
            module_spec = importlib.util.spec_from_file_location(module_name, location)
            if module_spec is None or module_spec.loader is None:
                raise ImportError(f"cannot load {location}")
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[module_name] = module
            module_spec.loader.exec_module(module)
        else:
            module = importlib.import_module(location)
        fn: Any = module
        for part in qualname.split("."):
            fn = getattr(fn, part)
    except Exception as e:
        raise KernelDeclarationError(
            f"kernel {kernel}: its reference {spec!r} cannot be loaded: {type(e).__name__}: {e}"
        ) from None
    if not callable(fn):
        raise KernelDeclarationError(f"kernel {kernel}: its reference {spec!r} is not callable")
    _known[spec] = fn
    return fn


def trust_references(program: Any) -> None:
    """Load every reference ``program``'s kernels name (``load_trusted``)."""
    from dnnc.ir import extern

    for op in program.module.walk():
        if isinstance(op, extern.KernelOp):
            decl = op.declaration()
            if decl.reference is not None:
                load_trusted(decl.reference, decl.name)


def run_reference(decl: Any, inputs: list[Any], constants: list[int | float]) -> list[Any]:
    """The reference's outputs as a list, checked against the declared count."""
    if decl.reference is None:
        raise KernelDeclarationError(f"kernel {decl.name} has no reference implementation (declare reference=...) to run it here")
    out = resolve(decl.reference, decl.name)(*inputs, *constants)
    outputs = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(outputs) != len(decl.outputs):
        raise KernelDeclarationError(
            f"kernel {decl.name}: its reference returned {len(outputs)} value(s), the declaration has {len(decl.outputs)} output(s)"
        )
    return outputs
