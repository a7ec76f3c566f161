"""Names a package offers without importing the modules that define them until one
is used (PEP 562): a backend's public surface stays cheap to import, and a process
that never builds a cuDNN graph never imports the code that would."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``where`` maps a public name to
    ``"module"`` (the same name there) or ``"module:attr"``, relative to ``package``."""

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where[name].partition(":")
        return getattr(importlib.import_module(f"{package}.{module}"), attr or name)

    return __getattr__
