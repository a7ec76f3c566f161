"""cuDNN graphs raised back to tcp (for graphs cuDNN has no engine for) compute
what the graphs computed: every graph of each program lowered by the cuDNN stage
is raised, and the reference backend gives the same results before and after."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from dnnc import knobs
from dnnc.backends.cudnn.raising import RaiseError, raise_graph
from dnnc.backends.reference import ReferenceExecutor
from dnnc.ir import cudnn
from dnnc.ir.types import shape_of
from dnnc.passes import parse_passes
from dnnc.pipeline import CUDNN_STAGE, run_passes, to_canonical_tcp
from tests.numerics import assert_matches


class SqueezeExcite(nn.Module):
    """efficientnet's block: 1x1 convolutions on a 1x1 map."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(16, 24, 3, padding=1)
        self.reduce, self.expand = nn.Conv2d(24, 6, 1), nn.Conv2d(6, 24, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.conv(x))
        s = torch.sigmoid(self.expand(torch.relu(self.reduce(x.mean((2, 3), keepdim=True)))))
        return x * s


class Residual(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1, self.c2 = nn.Conv2d(8, 8, 3, padding=1), nn.Conv2d(8, 8, 1)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.clamp(self.c1(x), 0.0, 6.0)
        return self.dw(torch.relu(self.c2(y) + x))


class Mlp(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(12), nn.Linear(12, 20), nn.Linear(20, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(nn.functional.gelu(self.fc1(self.norm(x))))


CASES = {
    "squeeze_excite": (SqueezeExcite, (2, 16, 5, 5)),
    "residual_depthwise": (Residual, (1, 8, 7, 6)),
    "mlp_layernorm": (Mlp, (2, 5, 12)),
}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_raised_graphs_compute_the_same(name: str, dtype: torch.dtype, rng: torch.Generator) -> None:
    make, shape = CASES[name]
    with torch.random.fork_rng():
        torch.manual_seed(rng.initial_seed())
        model = make().eval().to(dtype)
    x = torch.randn(shape, generator=rng).to(dtype)
    program = to_canonical_tcp(model, (x,))
    run_passes(program, parse_passes(CUDNN_STAGE))
    graphs = [op for op in program.entry.body.block.ops if isinstance(op, cudnn.GraphOp)]
    assert graphs, "the cuDNN stage outlined nothing"
    expected = ReferenceExecutor(program).run([x])
    for graph in graphs:
        results = [shape_of(r) for r in graph.outputs]
        new_ops = raise_graph(graph)
        assert new_ops and shape_of(new_ops[-1].results[0]) == results[-1]
    program.module.verify()
    assert not any(isinstance(op, cudnn.GraphOp) for op in program.entry.body.walk())
    (got,) = ReferenceExecutor(program).run([x])
    assert_matches(got, expected[0], torch.float32)


def test_a_partial_view_is_refused_and_the_graph_kept() -> None:
    from dnnc.ir.text import parse_ir

    ir = """func.func @forward(%x: tensor<4x6xf32>) -> tensor<1x2x3xf32> {
  %y = cudnn.graph(%x) {result_strides = [strided<[6, 3, 1]>]} : (tensor<4x6xf32>) -> tensor<1x2x3xf32> {
  ^bb0(%a: tensor<1x2x3xf32, strided<[6, 3, 1]>>):
    %r = cudnn.pointwise %a {mode = "exp"} : tensor<1x2x3xf32, strided<[6, 3, 1]>> -> tensor<1x2x3xf32>
    cudnn.return %r : tensor<1x2x3xf32>
  }
  func.return %y : tensor<1x2x3xf32>
}"""
    module = parse_ir(ir, "partial")
    (graph,) = [op for op in module.walk() if isinstance(op, cudnn.GraphOp)]
    with pytest.raises(RaiseError, match="reads part of"):
        raise_graph(graph)
    assert graph.parent is not None
    module.verify()


def test_raised_sdpa_is_one_attention_op(rng: torch.Generator) -> None:
    """A cudnn.sdpa graph (from tcp.attention) raised back is tcp.attention again."""
    from dnnc.ir import tcp

    q, k, v = (torch.randn(1, 2, 9, 16, generator=rng).half() for _ in range(3))
    fn = lambda a, b, c: nn.functional.scaled_dot_product_attention(a, b, c, is_causal=True)  # noqa: E731
    program = to_canonical_tcp(_Fn(fn), (q, k, v))
    with knobs.override(cudnn_attention=True):  # tcp.attention goes to cuDNN only when asked
        run_passes(program, parse_passes("cudnn-attention,lower-cudnn"))
    (graph,) = [op for op in program.entry.body.block.ops if isinstance(op, cudnn.GraphOp)]
    expected = ReferenceExecutor(program).run([q, k, v])
    raise_graph(graph)
    assert sum(isinstance(op, tcp.AttentionOp) for op in program.entry.body.walk()) == 1
    (got,) = ReferenceExecutor(program).run([q, k, v])
    # float16 outputs of two float32 computations in another order: one float16 rounding apart
    assert_matches(got, expected[0], torch.float16)


class _Fn(nn.Module):
    def __init__(self, fn) -> None:  # type: ignore[no-untyped-def]
        super().__init__()
        self.fn = fn

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        return self.fn(*args)
