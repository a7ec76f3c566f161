"""Declarations and sources shared by the kernel tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from dnnc.kernels.declaration import Binding, KernelDecl, PushConstant
from dnnc.kernels.reference import spec_of
from tests.kernels import references

# The declarations below name these references; this process declares them, as a user's
# own import of their kernels would, so running a declaration imports nothing it names.
spec_of(references.mul)
spec_of(references.scale_and_sum)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_dispatch"
KERNELS_CU = EXAMPLE / "kernels.cu"

SCALE_AND_SUM_CU = r"""
// out[r, c] = x[r, c] * alpha and sums[r] = sum over c of x[r, c]; one thread per row.
extern "C" __global__ void scale_and_sum(const float* x, float* out, float* sums, int rows, int cols, float alpha) {
  int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r >= rows) return;
  float acc = 0.f;
  for (int c = 0; c < cols; ++c) {
    float v = x[r * cols + c];
    out[r * cols + c] = v * alpha;
    acc += v;
  }
  sums[r] = acc;
}
"""


def simple_mul_decl(**changes: object) -> KernelDecl:
    """The example's ``simple_mul`` built from ``kernels.cu``, with ``changes`` applied."""
    fields: dict[str, object] = {
        "name": "simple_mul",
        "bindings": (
            Binding("lhs", "f32", ("n",), "read"),
            Binding("rhs", "f32", ("n",), "read"),
            Binding("out", "f32", ("n",), "write"),
        ),
        "push_constants": (PushConstant("dim", "i32", "n"),),
        "block": (64,),
        "grid": ("ceildiv(n, 64)",),
        "source": str(KERNELS_CU),
        "archs": ("sm_80", "sm_90"),
        "reference": "tests.kernels.references:mul",
    }
    fields.update(changes)
    return KernelDecl(**fields)  # type: ignore[arg-type]


def scale_and_sum_decl(source: Path, **changes: object) -> KernelDecl:
    """Two outputs (one of a derived shape) and a push constant the caller passes."""
    fields: dict[str, object] = {
        "name": "scale_and_sum",
        "bindings": (
            Binding("x", "f32", ("rows", "cols"), "read"),
            Binding("out", "f32", ("rows", "cols"), "write"),
            Binding("sums", "f32", ("rows",), "write"),
        ),
        "push_constants": (
            PushConstant("rows", "i32", "rows"),
            PushConstant("cols", "i32", "cols"),
            PushConstant("alpha", "f32"),
        ),
        "block": (32,),
        "grid": ("ceildiv(rows, 32)",),
        "source": str(source),
        "archs": ("sm_90",),
        "reference": "tests.kernels.references:scale_and_sum",
    }
    fields.update(changes)
    return KernelDecl(**fields)  # type: ignore[arg-type]


def load_example() -> ModuleType:
    """``examples/custom_dispatch/model.py`` imported (it declares the example's kernels)."""
    spec = importlib.util.spec_from_file_location("custom_dispatch_example", EXAMPLE / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["custom_dispatch_example"] = module
    spec.loader.exec_module(module)
    return module
