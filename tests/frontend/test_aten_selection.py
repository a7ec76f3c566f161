"""Running sums, positions of extremes, top-k and sorting, and RMS norm in every form
export produces (``F.rms_norm`` and ``nn.RMSNorm``, and the Llama / T5 form written
out by hand, which ``raise-ops`` makes one ``tcp.rms_norm``), numerically on the
table of tests/frontend/test_aten_numerics.py; integer outputs exactly. Inputs are
random floats (no ties) except where a case says otherwise."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dnnc.ir import tcp
from tests.compile_helpers import compile_program
from tests.frontend.test_aten_numerics import F32, Case, fn, test_aten_case


class LlamaRMSNorm(nn.Module):
    """As transformers writes it: float32 inside, the weight applied in the input's type."""

    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.rand(dim) + 0.5)
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        variance = h.pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.eps)
        return self.weight * h.to(x.dtype)


class T5LayerNorm(LlamaRMSNorm):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps)).to(self.weight.dtype)


_SPREAD = torch.randperm(45, generator=torch.Generator().manual_seed(0)).reshape(5, 9) * 4


def _distinct(a: torch.Tensor) -> torch.Tensor:
    """``a`` (5 x 9) spread over distinct integers (4 apart, shuffled), exact in every
    float type: PyTorch's top-k orders ties in no stated way, so its indices are
    compared on values without ties (random bfloat16 values tie often)."""
    return _SPREAD.to(a.dtype) + a.clamp(-1, 1)


CASES = [
    Case("cumsum", fn(lambda a: (a.cumsum(1), a.cumsum(0), a.cumsum(-1, dtype=torch.float32))), ((3, 9),)),
    Case("cumsum_positions", fn(lambda m: ((m > 0).cumsum(-1) - 1, m.long().cumsum(0))), ((2, 11),), dtypes=F32),
    Case("argmax_argmin", fn(lambda a: (a.argmax(1), a.argmin(0, keepdim=True), a.argmax(), a.argmin(keepdim=True))), ((4, 7),)),
    Case(
        "argmax_ties_and_ints",
        fn(lambda i: (i.argmax(1), i.argmin(0), (i > 3).to(torch.int32).argmax(1))),
        ((5, 8),),
        dtypes=F32,
        ints={0: 5},
    ),
    Case("max_min_with_indices", fn(lambda a: (*a.max(1), *a.min(-1, keepdim=True))), ((3, 6),)),
    Case("topk", fn(lambda a: _distinct(a).topk(3) + _distinct(a).topk(2, dim=0, largest=False)), ((5, 9),)),
    Case("sort_argsort", fn(lambda a: (*a.sort(1), *a.sort(0, descending=True), a.argsort(-1))), ((4, 6),)),
    Case("rms_norm_functional", fn(lambda a, w: (F.rms_norm(a, (8,), w, 1e-5), F.rms_norm(a, (3, 8)))), ((2, 3, 8), (8,))),
    Case("rms_norm_module", lambda: nn.RMSNorm(12), ((2, 5, 12),)),
    Case("rms_norm_llama", lambda: LlamaRMSNorm(16), ((2, 3, 16),)),
    Case("rms_norm_t5", lambda: T5LayerNorm(16), ((2, 3, 16),)),
]

PARAMS = [pytest.param(c, d, id=f"{c.name}-{str(d).removeprefix('torch.')}") for c in CASES for d in c.dtypes]


@pytest.mark.parametrize("case,dtype", PARAMS)
def test_selection_case(case: Case, dtype: torch.dtype, rng: torch.Generator) -> None:
    test_aten_case(case, dtype, rng)


@pytest.mark.parametrize("module", [nn.RMSNorm(16), LlamaRMSNorm(16), T5LayerNorm(16)], ids=["module", "llama", "t5"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_every_rms_norm_form_is_one_op(module: nn.Module, dtype: torch.dtype) -> None:
    program = compile_program(module.to(dtype), [torch.randn(2, 3, 16).to(dtype)])
    ops = [op for op in program.entry.body.walk()]
    assert sum(isinstance(op, tcp.RmsNormOp) for op in ops) == 1, program.text()
    assert not any(isinstance(op, (tcp.RsqrtOp, tcp.ReduceMeanOp)) for op in ops), program.text()
