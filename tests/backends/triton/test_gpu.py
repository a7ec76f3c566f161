"""GPU-only: the generated kernels against PyTorch on CUDA, launched on the current
stream and inside a CUDA graph capture."""

from __future__ import annotations

import pytest
import torch

from dnnc.backends.reference.interpreter import ReferenceExecutor
from dnnc.backends.triton import TritonFuse, compile_group
from dnnc.ir import tcp
from dnnc.ir.types import element_of, shape_of, torch_dtype
from dnnc.pipeline import run_passes
from tests.backends.triton.cases import CASES, Case
from tests.backends.triton.helpers import run_with_triton
from tests.numerics import assert_matches

pytestmark = pytest.mark.gpu
DTYPES = {"f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16}


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_kernels_match_pytorch_on_cuda(case: Case, dtype: str, rng: torch.Generator) -> None:
    program = case.program(dtype)
    inputs = case.inputs(program, rng)
    expected = ReferenceExecutor(program).run(inputs)  # PyTorch ops on the CPU, float32
    run_passes(program, [TritonFuse()])
    actual, _ = run_with_triton(program, inputs, "cuda")
    for a, e in zip(actual, expected):
        assert a.is_cuda
        assert_matches(a.cpu(), e, DTYPES[dtype] if e.is_floating_point() else None)


def test_launch_is_capturable_in_a_cuda_graph(rng: torch.Generator) -> None:
    case = next(c for c in CASES if c.name == "masked_softmax")
    program = case.program("f16")
    run_passes(program, [TritonFuse()])
    group = next(op for op in program.entry.body.walk() if isinstance(op, tcp.IsolatedGroupOp))
    kernel = compile_group(group, torch.device("cuda"))
    assert kernel.backend == "triton"
    by_arg = dict(zip(program.entry.body.block.args, case.inputs(program, rng)))
    inputs = [by_arg[c].cuda() for c in group.captures]
    outputs = [torch.empty(shape_of(r), dtype=torch_dtype(element_of(r)), device="cuda") for r in group.outputs]
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        kernel.launch(inputs, outputs)
    stream.synchronize()
    eager = [o.clone() for o in outputs]
    graph = torch.cuda.CUDAGraph()
    for o in outputs:
        o.zero_()
    with torch.cuda.graph(graph):
        kernel.launch(inputs, outputs)
    graph.replay()
    torch.cuda.synchronize()
    for o, e in zip(outputs, eager):
        assert torch.equal(o, e)
