"""The parameters a kernel's object code actually takes, read from its PTX
``.entry`` or its cubin, checked against the declaration's calling convention
(bindings as pointers, then push constants by value) before anything launches.

A mismatch here is the bug no other tool catches: a launch with the wrong
argument list reads garbage or faults far from its cause.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING

from dnnc.errors import KernelDeclarationError

if TYPE_CHECKING:
    from dnnc.kernels.declaration import KernelDecl

_ENTRY = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)", re.S)
_PARAM = re.compile(r"\.param\s+((?:\.\w+\s+)*?)\.(\w+)\s+([\w$]+)(\[\d+\])?")


@dataclass(frozen=True)
class EntryParam:
    """One parameter: its PTX type (``u64``, ``f32`` ...; ``None`` from a cubin), its
    size in bytes and whether PTX marks it a pointer (``.ptr``)."""

    type: str | None
    size: int
    pointer: bool = False

    def describe(self) -> str:
        if self.type is None:
            return f"{self.size} bytes"
        return f".{self.type}" + (" .ptr" if self.pointer else "")


_SIZES = {"8": 1, "16": 2, "32": 4, "64": 8}


def ptx_entries(text: str) -> dict[str, list[EntryParam]]:
    """Every ``.entry`` in a PTX module with its parameters."""
    entries = {}
    for m in _ENTRY.finditer(text):
        params = []
        for p in _PARAM.finditer(m.group(2)):
            qualifiers, ptype, _, array = p.groups()
            bits = re.sub(r"\D", "", ptype) or "32"
            size = _SIZES.get(bits, 4) * (int(array[1:-1]) if array else 1)
            params.append(EntryParam(ptype, size, ".ptr" in qualifiers))
        entries[m.group(1)] = params
    return entries


def cubin_entries(data: bytes) -> dict[str, list[EntryParam]]:
    """Every kernel in a cubin (an ELF file) with its parameter sizes, from the
    ``.nv.info.<kernel>`` sections' KPARAM_INFO records."""
    if data[:4] != b"\x7fELF" or data[4] != 2:
        raise ValueError("not a 64-bit ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]

    def name(offset: int) -> str:
        end = data.index(b"\0", names_at + offset)
        return data[names_at + offset : end].decode()

    entries: dict[str, list[EntryParam]] = {}
    for sh_name, _, _, _, offset, size, *_ in sections:
        section = name(sh_name)
        if not section.startswith(".nv.info."):
            continue
        params: dict[int, int] = {}
        pos, end = offset, offset + size
        while pos + 4 <= end:
            fmt, attr, value = struct.unpack_from("<BBH", data, pos)
            pos += 4
            if fmt == 0x04:  # a record with a payload of `value` bytes
                if attr == 0x17:  # KPARAM_INFO: index, ordinal, offset, packed flags with the size
                    _, ordinal, _, packed = struct.unpack_from("<IHHI", data, pos)
                    params[ordinal] = (packed >> 18) & 0x3FFF
                pos += value
        entries[section.removeprefix(".nv.info.")] = [EntryParam(None, params[i]) for i in sorted(params)]
    return entries


def expected_params(decl: KernelDecl) -> list[tuple[str, tuple[str, ...], int, bool | None]]:
    """(what, accepted PTX types, size, pointer?) per parameter of the declared ABI."""
    out: list[tuple[str, tuple[str, ...], int, bool | None]] = [
        (f"binding {b.name!r} (a pointer)", ("u64", "b64", "s64"), 8, None) for b in decl.bindings
    ]
    for c in decl.push_constants:
        if c.type == "i32":
            out.append((f"push constant {c.name!r} (i32)", ("u32", "s32", "b32"), 4, False))
        elif c.type == "i64":
            out.append((f"push constant {c.name!r} (i64)", ("u64", "s64", "b64"), 8, False))
        else:
            out.append((f"push constant {c.name!r} (f32)", ("f32", "b32"), 4, False))
    return out


def check_entry(decl: KernelDecl, entries: dict[str, list[EntryParam]], origin: str) -> None:
    """Raise naming the object and the first parameter that differs from the declaration."""
    if decl.entry not in entries:
        names = ", ".join(sorted(entries)) or "none"
        hint = ""
        if any(re.match(rf"_Z\d+{re.escape(decl.entry)}", n) for n in entries):
            hint = f'; the kernel is C++-mangled: declare it extern "C" __global__ void {decl.entry}(...)'
        raise KernelDeclarationError(f"kernel {decl.name}: {origin} has no entry {decl.entry!r} (entries: {names}){hint}")
    params = entries[decl.entry]
    expected = expected_params(decl)
    if len(params) != len(expected):
        raise KernelDeclarationError(
            f"kernel {decl.name}: {origin} entry {decl.entry!r} takes {len(params)} parameters, the declaration "
            f"{len(expected)} (bindings {', '.join(b.name for b in decl.bindings)}"
            + (f", then push constants {', '.join(c.name for c in decl.push_constants)}" if decl.push_constants else "")
            + ")"
        )
    for i, (param, (what, types, size, pointer)) in enumerate(zip(params, expected)):
        if param.type is None:
            ok = param.size == size
        else:
            ok = param.type in types and not (pointer is False and param.pointer)
        if not ok:
            raise KernelDeclarationError(
                f"kernel {decl.name}: {origin} entry {decl.entry!r} parameter {i} is {param.describe()}, "
                f"but the declaration puts {what} there"
            )
