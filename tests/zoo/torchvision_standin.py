"""timm without torchvision: a stand-in for the tests on a CPU build of PyTorch.

timm imports torchvision at module level (data transforms, ``FrozenBatchNorm2d``),
but none of its model code runs it. Beside the CPU ``torch==2.13.0`` the PyPI
torchvision wheels fail to load (they are built against a CUDA torch), so the
CPU tests import timm with every ``torchvision.*`` module answered by a stand-in
whose names are placeholder classes that refuse to be used. The stand-in exists
only while timm is imported: afterwards ``torchvision`` is not importable (and
transformers, which checks for it, sees it absent). Where torchvision loads (the
GPU image), timm is imported as usual.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any


class _PlaceholderType(type):
    def __getattr__(cls, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _PlaceholderType(name, (_Placeholder,), {})


class _Placeholder(metaclass=_PlaceholderType):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(f"{type(self).__name__} is a torchvision stand-in (torchvision is not installed)")


class _StandinModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _PlaceholderType(name, (_Placeholder,), {})


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname == "torchvision" or fullname.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _StandinModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _forget_torchvision() -> None:
    for name in [n for n in sys.modules if n == "torchvision" or n.startswith("torchvision.")]:
        del sys.modules[name]


def import_timm() -> Any:
    """``timm``, imported with the real torchvision where it loads, else with the stand-in."""
    if "timm" in sys.modules:
        return sys.modules["timm"]
    try:
        import timm
        import torchvision  # noqa: F401

        return timm
    except Exception:  # torchvision missing, or a wheel that does not load beside this torch
        _forget_torchvision()
    finder = _Finder()
    sys.meta_path.insert(0, finder)
    try:
        import timm
    finally:
        sys.meta_path.remove(finder)
        _forget_torchvision()
    return timm
