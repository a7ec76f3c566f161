"""What a user kernel is, in one typed record: its bindings, push constants,
block, grid, and where its code comes from.

The calling convention (ABI) is the one the kernel's ``extern "C"`` entry must
have: every binding in declared order as a pointer, then every push constant in
declared order by value. Bindings are tensors: ``read`` ones are inputs,
``write`` ones are outputs the runtime allocates, ``readwrite`` ones are inputs
updated in place (in the IR an input whose updated value is a result, tied to
it). Shapes are written over symbols (``["n"]``); an input's symbols are bound by
the tensors passed, outputs' dims, the grid and push constants are formulas over
them. Everything is checked when the kernel is declared, not at its first launch.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from dnnc.cache import content_key
from dnnc.errors import KernelDeclarationError
from dnnc.ir.types import UnsupportedDtypeError, element_from_name, torch_dtype
from dnnc.kernels.formula import Formula, parse_formula

ACCESSES = ("read", "readwrite", "write")
CONSTANT_TYPES = ("i32", "i64", "f32")
_RANGES = {"i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1)}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_TARGET = re.compile(r"^sm_(\d+)(a?)$")

# Limits every NVIDIA GPU dnnc targets (sm_75 and newer) shares; the loaded
# function's own limits (registers, shared memory) are checked again on the device.
MAX_BLOCK = (1024, 1024, 64)
MAX_THREADS_PER_BLOCK = 1024
MAX_GRID = (2**31 - 1, 65535, 65535)


@dataclass(frozen=True)
class Binding:
    """A tensor the kernel reads and/or writes: ``Binding("out", "f32", ["n"], "write")``."""

    name: str
    dtype: str
    shape: tuple[int | str, ...]
    access: str = "read"

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(self.shape))

    @property
    def torch_dtype(self) -> torch.dtype:
        return torch_dtype(element_from_name(self.dtype))

    def describe(self) -> str:
        return f"{self.dtype}[{', '.join(str(d) for d in self.shape)}]"


@dataclass(frozen=True)
class PushConstant:
    """A scalar passed by value: ``value`` is a formula over shape symbols (``"n"``),
    or None when the caller passes it."""

    name: str
    type: str
    value: str | int | None = None


def target_capability(target: str) -> tuple[int, bool]:
    """``sm_90`` -> (90, False); ``sm_90a`` -> (90, True): arch-specific code runs on that SM only."""
    m = _TARGET.match(target)
    if m is None:
        raise KernelDeclarationError(f"target {target!r}: expected sm_<capability> such as sm_80 or sm_90a")
    return int(m.group(1)), bool(m.group(2))


@dataclass(frozen=True)
class KernelDecl:
    name: str
    bindings: tuple[Binding, ...]
    block: tuple[int, ...]
    grid: tuple[str, ...]
    """Blocks per axis, formulas over shape symbols (``ceildiv(n, 64)``); missing axes are 1."""
    push_constants: tuple[PushConstant, ...] = ()
    entry: str = ""
    """The ``extern "C"`` symbol in the object code (default: ``name``)."""
    shared_memory: int = 0
    """Dynamic shared memory per block, in bytes."""
    source: str | None = None
    """A ``.cu`` file compiled for every target in ``archs`` (cubin) plus PTX."""
    archs: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    include_dirs: tuple[str, ...] = ()
    objects: tuple[tuple[str, str], ...] = ()
    """Prebuilt objects, (target, path) pairs; the kind comes from the extension (.cubin or .ptx)."""
    reference: str | None = None
    """``module:function`` or ``path/file.py:function``: a torch implementation that runs
    where no object fits the device, and on the CPU reference backend."""
    _formulas: dict[str, Formula] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "entry", self.entry or self.name)
        object.__setattr__(self, "bindings", tuple(self.bindings))
        object.__setattr__(self, "push_constants", tuple(self.push_constants))
        object.__setattr__(self, "block", tuple(int(b) for b in self.block) + (1,) * (3 - len(self.block)))
        object.__setattr__(self, "grid", tuple(str(g) for g in self.grid) + ("1",) * (3 - len(self.grid)))
        for name in ("archs", "flags", "include_dirs"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        objects = self.objects.items() if isinstance(self.objects, Mapping) else self.objects
        object.__setattr__(self, "objects", tuple(sorted((str(t), str(p)) for t, p in objects)))
        self._validate()

    # Checks ------------------------------------------------------------------------------

    def fail(self, message: str) -> KernelDeclarationError:
        return KernelDeclarationError(f"kernel {self.name}: {message}")

    def _validate(self) -> None:
        if not _IDENT.match(self.name):
            raise KernelDeclarationError(f"kernel name {self.name!r} must be an identifier")
        if not self.bindings:
            raise self.fail("declares no bindings")
        names = [b.name for b in self.bindings] + [c.name for c in self.push_constants]
        for n in names:
            if not _IDENT.match(n):
                raise self.fail(f"binding or constant name {n!r} must be an identifier")
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise self.fail(f"{dupes[0]!r} is declared twice")
        bound: set[str] = set()
        for b in self.inputs:
            self._check_binding(b)
            for d in b.shape:
                if isinstance(d, str):
                    if not _IDENT.match(d):
                        raise self.fail(
                            f"input binding {b.name!r}: dim {d!r} must be an integer or a symbol (formulas are for outputs)"
                        )
                    bound.add(d)
        for b in self.bindings:
            if b.access == "write":
                self._check_binding(b)
                for i, d in enumerate(b.shape):
                    if isinstance(d, str):
                        self._formula(d, f"binding {b.name!r} dim {i}", bound)
        for c in self.push_constants:
            if c.type not in CONSTANT_TYPES:
                raise self.fail(f"push constant {c.name!r}: type {c.type!r} is not one of {', '.join(CONSTANT_TYPES)}")
            if c.value is not None:
                if c.type == "f32":
                    raise self.fail(f"push constant {c.name!r}: an f32 constant is passed by the caller (value=None)")
                self._formula(c.value, f"push constant {c.name!r}", bound)
        if len(self.block) != 3 or len(self.grid) != 3:
            raise self.fail(f"block and grid take at most 3 dims, got block {list(self.block)} and grid {list(self.grid)}")
        for axis, (b, limit) in enumerate(zip(self.block, MAX_BLOCK)):
            if not 1 <= b <= limit:
                raise self.fail(f"block dim {'xyz'[axis]} is {b}; CUDA allows 1..{limit}")
        threads = self.block[0] * self.block[1] * self.block[2]
        if threads > MAX_THREADS_PER_BLOCK:
            raise self.fail(f"block {list(self.block)} has {threads} threads; CUDA allows {MAX_THREADS_PER_BLOCK} per block")
        for axis, g in enumerate(self.grid):
            self._formula(g, f"grid[{axis}]", bound)
        if self.shared_memory < 0:
            raise self.fail(f"shared_memory must be >= 0 bytes, got {self.shared_memory}")
        if not self.source and not self.objects:
            raise self.fail("needs a source (.cu) or prebuilt objects per target")
        for target, path in self.objects:
            self._target(target)
            if not (path.endswith(".cubin") or path.endswith(".ptx")):
                raise self.fail(f"object for {target} is {path!r}: expected a .cubin or .ptx file")
        for arch in self.archs:
            self._target(arch)
        if self.source and not self.archs:
            raise self.fail("a source needs the archs to build it for, e.g. archs=('sm_80', 'sm_90')")

    def _target(self, target: str) -> None:
        try:
            target_capability(target)
        except KernelDeclarationError as e:
            raise self.fail(str(e)) from None

    def _check_binding(self, b: Binding) -> None:
        if b.access not in ACCESSES:
            raise self.fail(f"binding {b.name!r}: access {b.access!r} is not one of {', '.join(ACCESSES)}")
        try:
            element_from_name(b.dtype)
        except UnsupportedDtypeError as e:
            raise self.fail(f"binding {b.name!r}: {e}") from None
        for d in b.shape:
            if isinstance(d, bool) or not isinstance(d, (int, str)) or (isinstance(d, int) and d < 0):
                raise self.fail(f"binding {b.name!r}: dim {d!r} must be a non-negative integer or a symbol")

    def _formula(self, text: str | int, what: str, bound: set[str]) -> Formula:
        f = self._formulas.get(str(text))
        if f is None:
            f = parse_formula(text, f"kernel {self.name}: {what}")
            self._formulas[str(text)] = f
        unbound = sorted(f.symbols - bound)
        if unbound:
            have = ", ".join(sorted(bound)) or "none"
            raise self.fail(f"{what}: {text!r} uses {', '.join(unbound)}, which no input binding's shape binds (bound: {have})")
        return f

    # Views -------------------------------------------------------------------------------

    @property
    def inputs(self) -> tuple[Binding, ...]:
        """Bindings passed in: ``read`` and ``readwrite``, in declared order."""
        return tuple(b for b in self.bindings if b.access != "write")

    @property
    def outputs(self) -> tuple[Binding, ...]:
        """Bindings handed back: ``readwrite`` (updated inputs) and ``write``, in declared order."""
        return tuple(b for b in self.bindings if b.access != "read")

    @property
    def call_constants(self) -> tuple[PushConstant, ...]:
        """Push constants the caller passes (no formula)."""
        return tuple(c for c in self.push_constants if c.value is None)

    def key(self) -> str:
        """Content key of everything that changes what the kernel computes or how it is built."""
        return content_key({"declaration": self.to_json()})

    # Binding a call ----------------------------------------------------------------------

    def bind(self, shapes: Sequence[Sequence[int]], dtypes: Sequence[torch.dtype]) -> dict[str, int]:
        """The symbols the input tensors bind; raises naming the binding that does not fit."""
        if len(shapes) != len(self.inputs):
            raise self.fail(f"takes {len(self.inputs)} tensor(s) ({', '.join(b.name for b in self.inputs)}), got {len(shapes)}")
        symbols: dict[str, int] = {}
        origin: dict[str, str] = {}
        for b, shape, dtype in zip(self.inputs, shapes, dtypes):
            got = f"{list(shape)} {str(dtype).removeprefix('torch.')}"
            if dtype != b.torch_dtype:
                raise self.fail(f"binding {b.name!r} is declared {b.describe()}, got a tensor of {got}")
            if len(shape) != len(b.shape):
                raise self.fail(f"binding {b.name!r} is declared {b.describe()} (rank {len(b.shape)}), got {got}")
            for d, size in zip(b.shape, shape):
                if isinstance(d, int):
                    if d != size:
                        raise self.fail(f"binding {b.name!r} is declared {b.describe()}, got {got}")
                elif d in symbols and symbols[d] != size:
                    raise self.fail(
                        f"binding {b.name!r} is declared {b.describe()}: {d} is {symbols[d]} (from {origin[d]!r}), got {got}"
                    )
                else:
                    symbols[d] = int(size)
                    origin.setdefault(d, b.name)
        return symbols

    def output_shapes(self, symbols: Mapping[str, int]) -> list[tuple[int, ...]]:
        shapes = []
        for b in self.outputs:
            dims = tuple(d if isinstance(d, int) else self._formulas.get(d) or parse_formula(d, b.name) for d in b.shape)
            shape = tuple(d if isinstance(d, int) else d(symbols) for d in dims)
            if any(d < 0 for d in shape):
                raise self.fail(f"binding {b.name!r} {b.describe()} evaluates to negative dims {list(shape)}")
            shapes.append(shape)
        return shapes

    def grid_for(self, symbols: Mapping[str, int]) -> tuple[int, int, int]:
        grid = tuple(self._formulas[str(g)](symbols) for g in self.grid)
        for axis, (g, limit) in enumerate(zip(grid, MAX_GRID)):
            if not 1 <= g <= limit:
                shown = ", ".join(f"{k}={v}" for k, v in sorted(symbols.items()))
                raise self.fail(f"grid {list(grid)} for {shown}: dim {'xyz'[axis]} must be 1..{limit} ({self.grid[axis]!r})")
        return grid  # type: ignore[return-value]

    def constant_values(self, symbols: Mapping[str, int], given: Sequence[int | float]) -> list[int | float]:
        """Every push constant's value in declared order: formulas evaluated, the rest from ``given``."""
        if len(given) != len(self.call_constants):
            names = ", ".join(c.name for c in self.call_constants) or "none"
            raise self.fail(f"takes {len(self.call_constants)} push constant(s) from the caller ({names}), got {len(given)}")
        supplied = iter(given)
        values: list[int | float] = []
        for c in self.push_constants:
            v = self._formulas[str(c.value)](symbols) if c.value is not None else next(supplied)
            if c.type == "f32":
                if not isinstance(v, (int, float)) or isinstance(v, bool):
                    raise self.fail(f"push constant {c.name!r} is f32, got {v!r}")
                values.append(float(v))
                continue
            if isinstance(v, bool) or not isinstance(v, int):
                raise self.fail(f"push constant {c.name!r} is {c.type}, got {v!r} (an integer is expected)")
            lo, hi = _RANGES[c.type]
            if not lo <= v <= hi:
                raise self.fail(f"push constant {c.name!r} = {v} does not fit in {c.type}")
            values.append(v)
        return values

    # Serialisation -----------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "entry": self.entry,
            "bindings": [{"name": b.name, "dtype": b.dtype, "shape": list(b.shape), "access": b.access} for b in self.bindings],
            "push_constants": [{"name": c.name, "type": c.type, "value": c.value} for c in self.push_constants],
            "block": list(self.block),
            "grid": [str(g) for g in self.grid],
            "shared_memory": self.shared_memory,
            "source": self.source,
            "archs": list(self.archs),
            "flags": list(self.flags),
            "include_dirs": list(self.include_dirs),
            "objects": _objects_json(self.objects),
            "reference": self.reference,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> KernelDecl:
        try:
            return cls(
                name=data["name"],
                entry=data.get("entry") or "",
                bindings=tuple(
                    Binding(b["name"], b["dtype"], tuple(b["shape"]), b.get("access", "read")) for b in data["bindings"]
                ),
                push_constants=tuple(PushConstant(c["name"], c["type"], c.get("value")) for c in data.get("push_constants", ())),
                block=tuple(data["block"]),
                grid=tuple(data["grid"]),
                shared_memory=int(data.get("shared_memory", 0)),
                source=data.get("source"),
                archs=tuple(data.get("archs", ())),
                flags=tuple(data.get("flags", ())),
                include_dirs=tuple(data.get("include_dirs", ())),
                objects=tuple(
                    (t, p)
                    for t, paths in dict(data.get("objects", {})).items()
                    for p in ([paths] if isinstance(paths, str) else paths)
                ),
                reference=data.get("reference"),
            )
        except (KeyError, TypeError, ValueError) as e:
            raise KernelDeclarationError(
                f"kernel {data.get('name', '?')}: malformed declaration ({type(e).__name__}: {e})"
            ) from None


def _objects_json(objects: tuple[tuple[str, str], ...]) -> dict[str, str | list[str]]:
    """Target -> path, or a list of paths where a target has several (a cubin and PTX)."""
    by_target: dict[str, list[str]] = {}
    for target, path in objects:
        by_target.setdefault(target, []).append(path)
    return {t: paths[0] if len(paths) == 1 else paths for t, paths in by_target.items()}
