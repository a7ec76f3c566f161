"""How dnnc compares a result with a reference: normwise relative error over the
finite elements, NaN and infinities in the same places, integers exactly, and one
stated tolerance per dtype. Used by ``dnnc compile --check`` and by the tests.

    float32   1e-5   (same float32 arithmetic, another order of rounding)
    float16   2e-3   (one rounding of the result: 2^-11 ~ 4.9e-4, plus input effects)
    bfloat16  1.6e-2 (one rounding: 2^-8 ~ 3.9e-3)

On the GPU, float32 matmuls and convolutions may run on tensor cores in TF32
(10-bit mantissa, as PyTorch's cuDNN convolutions do by default), so float32
results there are held to ``GPU_TOLERANCE`` instead: 2e-3.
"""

from __future__ import annotations

import torch

TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2, torch.float64: 1e-12}
GPU_TOLERANCE = {**TOLERANCE, torch.float32: 2e-3}


def relative_error(actual: torch.Tensor, expected: torch.Tensor) -> float:
    """``||actual - expected|| / ||expected||`` over the elements where ``expected`` is finite."""
    a, e = actual.double(), expected.double()
    finite = torch.isfinite(e)
    diff = (a[finite] - e[finite]).norm()
    scale = e[finite].norm()
    return float(diff / scale) if scale > 0 else float(diff)


def mismatch(
    actual: torch.Tensor,
    expected: torch.Tensor,
    dtype: torch.dtype | None = None,
    tolerances: dict[torch.dtype, float] = TOLERANCE,
) -> str | None:
    """Why ``actual`` does not match ``expected`` within ``dtype``'s tolerance, or None."""
    if tuple(actual.shape) != tuple(expected.shape):
        return f"shape {list(actual.shape)} != {list(expected.shape)}"
    if not expected.is_floating_point():
        if actual.dtype != expected.dtype:
            return f"dtype {actual.dtype} != {expected.dtype}"
        return None if torch.equal(actual, expected) else "integer/boolean values differ"
    a, e = actual.double(), expected.double()
    for name, where in (("NaNs", torch.isnan), ("+inf", torch.isposinf), ("-inf", torch.isneginf)):
        if not torch.equal(where(a), where(e)):
            return f"{name} in different places"
    dtype = dtype or actual.dtype
    err = relative_error(a, e)
    if err > tolerances[dtype]:
        return f"relative error {err:.3e} exceeds the {dtype} tolerance {tolerances[dtype]:.1e}"
    return None
