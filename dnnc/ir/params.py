"""The parameter store: named tensors kept beside the IR in a safetensors file."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from dnnc.errors import ParamError


class ParamStore(Mapping[str, torch.Tensor]):
    """Name -> CPU tensor. Values are never aliased views of the model's tensors
    once saved, and lookups of a missing name say which names exist."""

    def __init__(self, tensors: Mapping[str, torch.Tensor] | None = None):
        self._tensors: dict[str, torch.Tensor] = dict(tensors or {})

    def __getitem__(self, name: str) -> torch.Tensor:
        try:
            return self._tensors[name]
        except KeyError:
            held = sorted(self._tensors)
            shown = ", ".join(held[:8]) + (", ..." if len(held) > 8 else "")
            raise ParamError(f"parameter @{name} is not in the store (it holds {len(held)}: {shown or 'nothing'})") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tensors

    def __iter__(self) -> Iterator[str]:
        return iter(self._tensors)

    def __len__(self) -> int:
        return len(self._tensors)

    def add(self, name: str, value: torch.Tensor) -> None:
        """Stored on the CPU whatever device the model was on: compile-time folding
        and saving work there; executors upload what they need."""
        self._tensors[name] = value.detach().cpu()

    def fresh_name(self, base: str) -> str:
        """A name not in the store, derived from ``base``."""
        if base not in self._tensors:
            return base
        i = 1
        while f"{base}.{i}" in self._tensors:
            i += 1
        return f"{base}.{i}"

    def keep_only(self, names: Iterable[str]) -> None:
        keep = set(names)
        self._tensors = {k: v for k, v in self._tensors.items() if k in keep}

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self._tensors.values())

    def save(self, path: str | Path) -> None:
        # safetensors refuses shared storage and non-contiguous tensors: store copies.
        save_file({k: v.detach().contiguous().clone() for k, v in self._tensors.items()}, str(path))

    @classmethod
    def load(cls, path: str | Path) -> ParamStore:
        path = Path(path)
        if not path.is_file():
            raise ParamError(f"parameter file {path} does not exist")
        try:
            return cls(load_file(str(path)))
        except (SafetensorError, OSError, ValueError) as e:
            raise ParamError(f"parameter file {path} is not a readable safetensors file: {e}") from None
