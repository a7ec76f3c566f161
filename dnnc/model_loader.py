"""Models named on the command line: ``path/to/file.py:factory`` or
``package.module:factory``; the factory returns ``(model, example_inputs)``."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from dnnc.errors import ModelLoadError


def load_factory(spec: str) -> tuple[Callable[..., Any], str]:
    location, sep, name = spec.rpartition(":")
    if not sep or not location or not name:
        raise ModelLoadError(f"model {spec!r}: expected path/to/file.py:factory or package.module:factory")
    module = import_user_code(location)
    factory = getattr(module, name, None)
    if not callable(factory):
        raise ModelLoadError(f"{location} has no function {name!r}")
    return factory, name


def import_user_code(location: str) -> Any:
    """Import a file (``path/to/file.py``) or module (``package.module``) the user
    named on the command line; its errors are ``ModelLoadError``."""
    if location.endswith(".py") or "/" in location:
        path = Path(location)
        if not path.is_file():
            raise ModelLoadError(f"model file {path} does not exist")
        module_name = f"_dnnc_model_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(module_name, path)
        assert module_spec is not None and module_spec.loader is not None
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[module_name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as e:
            raise ModelLoadError(f"model file {path} failed to import{_where(e)}: {type(e).__name__}: {e}") from e
    else:
        try:
            module = importlib.import_module(location)
        except ImportError as e:
            raise ModelLoadError(f"cannot import module {location!r}: {e}") from None
    return module


def parse_kwargs(pairs: tuple[str, ...]) -> dict[str, Any]:
    """``key=value`` pairs; values are Python literals when they parse as one."""
    kwargs: dict[str, Any] = {}
    for pair in pairs:
        key, sep, text = pair.partition("=")
        if not sep:
            raise ModelLoadError(f"factory argument {pair!r}: expected key=value")
        try:
            kwargs[key] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            kwargs[key] = text
    return kwargs


def load_model(spec: str, kwargs: dict[str, Any] | None = None) -> tuple[torch.nn.Module, tuple[Any, ...], str]:
    factory, name = load_factory(spec)
    kwargs = kwargs or {}
    params = inspect.signature(factory).parameters
    unknown = [k for k in kwargs if k not in params and not any(p.kind == p.VAR_KEYWORD for p in params.values())]
    if unknown:
        raise ModelLoadError(f"factory {name} takes no argument {unknown[0]!r} (it takes: {', '.join(params) or 'none'})")
    try:
        result = factory(**kwargs)
    except Exception as e:
        raise ModelLoadError(f"factory {name} failed{_where(e)}: {type(e).__name__}: {e}") from e
    if not (isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], torch.nn.Module)):
        raise ModelLoadError(f"factory {name} must return (model, example_inputs), got {type(result).__name__}")
    model, inputs = result
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    return model.eval(), tuple(inputs), name


def _where(error: BaseException) -> str:
    """The innermost frame of the user's failing code, for the one-line message."""
    frames = traceback.extract_tb(error.__traceback__)
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
