"""A kernel's object code per target: prebuilt files and builds from its source,
each checked against the declaration before it is used.

Paths in a declaration are absolute or relative to a base: the directory of the
IR file or of the script that declared the kernel. A loaded artifact reads them
from its own members instead (``read``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dnnc.errors import KernelBuildError, KernelDeclarationError
from dnnc.kernels.compilers import build
from dnnc.kernels.declaration import KernelDecl
from dnnc.kernels.entry_params import check_entry, cubin_entries, ptx_entries

Reader = Callable[[str], bytes]
"""Bytes of an object named by a declaration (a path, or an artifact member)."""


@dataclass(frozen=True)
class KernelObject:
    target: str
    """``sm_90``: a cubin runs on that SM major with an equal or higher minor; PTX JIT-compiles for any SM at least that."""
    kind: str  # cubin | ptx
    data: bytes
    origin: str
    """Where it came from, for logs and errors (a file, or the source and compiler)."""

    def describe(self) -> str:
        return f"{self.target} {self.kind}"


def file_reader(base: Path | None = None) -> Reader:
    def read(name: str) -> bytes:
        path = Path(name) if base is None else base / name
        try:
            return path.read_bytes()
        except OSError as e:
            raise KernelBuildError(f"object file {path} cannot be read: {e.strerror or e}") from None

    return read


def kernel_objects(decl: KernelDecl, read: Reader | None = None, base: Path | None = None) -> list[KernelObject]:
    """Every object of ``decl``: the prebuilt ones, then for each arch a cubin and PTX
    built from its source; each one's entry checked against the declaration."""
    read = read or file_reader(base)
    objects = []
    for target, name in decl.objects:
        kind = "cubin" if name.endswith(".cubin") else "ptx"
        objects.append(KernelObject(target, kind, read(name), name))
    if decl.source:
        source = Path(decl.source) if base is None else base / decl.source
        includes = [Path(d) if base is None else base / d for d in decl.include_dirs]
        for arch in decl.archs:
            for kind in ("cubin", "ptx"):
                data, how = build(source, arch, kind, decl.flags, includes, what=f"kernel {decl.name}: ")
                objects.append(KernelObject(arch, kind, data, how))
    for obj in objects:
        check_object(decl, obj)
    return objects


def check_object(decl: KernelDecl, obj: KernelObject) -> None:
    """The object's entry takes exactly the declared parameters (raises otherwise)."""
    origin = f"{obj.describe()} object {obj.origin}"
    try:
        entries = cubin_entries(obj.data) if obj.kind == "cubin" else ptx_entries(obj.data.decode(errors="replace"))
    except (ValueError, IndexError, UnicodeDecodeError, struct.error) as e:
        raise KernelDeclarationError(f"kernel {decl.name}: {origin} is not a readable {obj.kind}: {e}") from None
    check_entry(decl, entries, origin)
