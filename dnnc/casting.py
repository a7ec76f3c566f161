"""A model and its example inputs in another floating dtype: ``dnnc compile --dtype``
and ``dnnc.compile(dtype=...)`` take the same names and cast the same tensors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from dnnc.errors import DnncError

FLOAT_DTYPES: dict[str, torch.dtype] = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}
"""The dtypes a model may be cast to, by name."""


def float_dtype(dtype: str | torch.dtype) -> torch.dtype:
    """``dtype`` by name or as a torch dtype, one of ``FLOAT_DTYPES``."""
    found = FLOAT_DTYPES.get(dtype) if isinstance(dtype, str) else dtype
    if found not in FLOAT_DTYPES.values():
        shown = repr(dtype) if isinstance(dtype, str) else str(dtype)
        raise DnncError(f"dtype={shown}: expected one of {', '.join(FLOAT_DTYPES)} or a torch floating dtype")
    return found


def cast_inputs(inputs: Iterable[Any], dtype: torch.dtype) -> tuple[Any, ...]:
    """The floating tensors among ``inputs`` in ``dtype``; everything else as it is."""
    return tuple(x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in inputs)
