"""The cuDNN backend on a GPU: each pattern in f32/f16/bf16 against a float64
reference of the same weights, conv variants, a graph with no engine that falls
back, CUDA graph capture, and ResNet-50 in fp16.

Tolerances: ``dnnc.numerics.GPU_TOLERANCE`` (f32 2e-3 for TF32 tensor cores,
f16 2e-3, bf16 1.6e-2), normwise relative error.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import dnnc
from dnnc import knobs
from tests.numerics import assert_matches

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def every_pattern_to_cudnn():
    """These tests are about the cuDNN backend, so every pattern it accepts goes to it
    (the ``greedy`` policy), whatever the partitioner would prefer at these sizes."""
    with knobs.override(partition="greedy"):
        yield


DTYPES = [torch.float32, torch.float16, torch.bfloat16]


class ConvEpilogue(nn.Module):
    def __init__(self, cin: int, cout: int, act: str, residual: bool, **conv: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, **conv)  # type: ignore[arg-type]
        self.act, self.residual = act, residual

    def forward(self, x: torch.Tensor, r: torch.Tensor | None = None) -> torch.Tensor:
        y = self.conv(x)
        if r is not None:
            y = y + r
        return {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "relu6": F.relu6, "none": lambda t: t, "sigmoid": torch.sigmoid}[
            self.act
        ](y)


class LinearEpilogue(nn.Module):
    def __init__(self, k: int, n: int, act: str):
        super().__init__()
        self.lin, self.act = nn.Linear(k, n), act

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.lin(x)
        return {"relu": F.relu, "gelu": lambda t: F.gelu(t, approximate="tanh"), "none": lambda t: t}[self.act](y)


def _reference(model: nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
    """float64 on the CPU with the same (rounded) weights and inputs."""
    ref = model.to("cpu", torch.float64)
    with torch.no_grad():
        return ref(*[x.to("cpu", torch.float64) for x in inputs])


def _check(model: nn.Module, inputs: list[torch.Tensor], dtype: torch.dtype, expect_cudnn: int = 1) -> dnnc.CompiledModule:
    model = model.eval().to("cuda", dtype)
    inputs = [x.to("cuda", dtype) for x in inputs]
    compiled = dnnc.compile(model, inputs, device="cuda")
    out = compiled(*inputs)
    summary = compiled.summary()  # type: ignore[union-attr]
    assert summary["steps"].get("cudnn", 0) >= expect_cudnn, summary
    assert_matches(out, _reference(model, inputs).to(dtype), dtype, gpu=True)
    return compiled


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("act", ["relu", "gelu", "silu", "relu6", "sigmoid"])
def test_conv_bias_activation(act: str, dtype: torch.dtype, rng: torch.Generator) -> None:
    model = ConvEpilogue(32, 64, act, False, kernel_size=3, padding=1)
    _check(model, [torch.randn(4, 32, 20, 20, generator=rng)], dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_conv_bias_residual_relu(dtype: torch.dtype, rng: torch.Generator) -> None:
    model = ConvEpilogue(64, 64, "relu", True, kernel_size=1)
    x, r = torch.randn(2, 64, 14, 14, generator=rng), torch.randn(2, 64, 14, 14, generator=rng)
    compiled = _check(model, [x, r], dtype)
    assert "conv_bias_add_relu" in compiled.ir


@pytest.mark.parametrize(
    ("cin", "cout", "conv"),
    [
        (3, 20, {"kernel_size": 7, "stride": 2, "padding": 3}),  # odd channels, the stem
        (36, 20, {"kernel_size": 1}),  # channels not multiples of 8
        (16, 16, {"kernel_size": 3, "padding": 2, "dilation": 2}),
        (32, 32, {"kernel_size": 3, "stride": 2, "padding": 1, "groups": 32}),  # depthwise
        (8, 24, {"kernel_size": (1, 3), "padding": (0, 1)}),
    ],
    ids=["stem-c3", "odd-36-20", "dilation", "depthwise", "1x3"],
)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_conv_variants(cin: int, cout: int, conv: dict, dtype: torch.dtype, rng: torch.Generator) -> None:
    model = ConvEpilogue(cin, cout, "relu", False, **conv)
    compiled = dnnc.compile(
        model.eval().to("cuda", dtype), [torch.randn(2, cin, 17, 19, generator=rng).to("cuda", dtype)], device="cuda"
    )
    x = torch.randn(2, cin, 17, 19, generator=rng)
    out = compiled(x.to("cuda", dtype))
    assert_matches(out, _reference(model, [x.to(dtype)]).to(dtype), dtype, gpu=True)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("act", ["relu", "gelu", "none"])
def test_matmul_bias_activation(act: str, dtype: torch.dtype, rng: torch.Generator) -> None:
    _check(LinearEpilogue(96, 200, act), [torch.randn(37, 96, generator=rng)], dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=str)
def test_layernorm(dtype: torch.dtype, rng: torch.Generator) -> None:
    model = nn.LayerNorm(256)
    with torch.no_grad():
        model.weight.uniform_(0.5, 1.5, generator=rng)
        model.bias.uniform_(-0.5, 0.5, generator=rng)
    model = model.eval().to("cuda", dtype)
    x = torch.randn(8, 33, 256, generator=rng).to("cuda", dtype)
    compiled = dnnc.compile(model, [x], device="cuda")
    assert_matches(compiled(x), _reference(model, [x]).to(dtype), dtype, gpu=True)


NO_ENGINE = """builtin.module {
  func.func @forward(%x: tensor<2x8x8x16xf16>, %w: tensor<16x3x3x16xf16>) -> tensor<2x8x8x16xf16> {
    %y = cudnn.graph(%x, %w) {result_strides = [strided<[1024, 1, 128, 16]>]} : (tensor<2x8x8x16xf16>, tensor<16x3x3x16xf16>) -> tensor<2x8x8x16xf16> {
    ^bb0(%X: tensor<2x16x8x8xf16, strided<[1024, 1, 128, 16]>>, %W: tensor<16x16x3x3xf16, strided<[144, 1, 48, 16]>>):
      %r = cudnn.pointwise %X {mode = "relu"} : tensor<2x16x8x8xf16, strided<[1024, 1, 128, 16]>> -> tensor<2x16x8x8xf16>
      %c = cudnn.conv_fprop %r, %W {pre_padding = array<i64: 1, 1>, post_padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>} : (tensor<2x16x8x8xf16>, tensor<16x16x3x3xf16, strided<[144, 1, 48, 16]>>) -> tensor<2x16x8x8xf16>
      cudnn.return %c : tensor<2x16x8x8xf16>
    }
    func.return %y : tensor<2x8x8x16xf16>
  }
}"""


def test_graph_without_engine_falls_back(rng: torch.Generator) -> None:
    """A pointwise op before a conv has no fp16 engine on Hopper: the executor
    runs the graph as torch ops, logs why, and the result is still right."""
    from dnnc.ir.params import ParamStore
    from dnnc.ir.program import Program
    from dnnc.ir.text import parse_ir
    from dnnc.runtime.gpu_executor import GpuExecutor

    program = Program(parse_ir(NO_ENGINE), ParamStore())
    executor = GpuExecutor(program, "cuda")
    x, w = torch.randn(2, 8, 8, 16, generator=rng).half(), torch.randn(16, 3, 3, 16, generator=rng).half()
    (y,) = executor.run([x.cuda(), w.cuda()])
    expected = F.conv2d(F.relu(x.double().permute(0, 3, 1, 2)), w.double().permute(0, 3, 1, 2), padding=1).permute(0, 2, 3, 1)
    assert_matches(y, expected.half(), torch.float16, gpu=True)
    major = torch.cuda.get_device_capability()[0]
    if major == 9:
        assert executor.summary()["fallbacks"], "expected no fp16 engine for relu -> conv on sm_90"


def test_cuda_graph_capture(rng: torch.Generator) -> None:
    model = ConvEpilogue(64, 64, "relu", True, kernel_size=3, padding=1).eval().cuda().half()
    x, r = (torch.randn(4, 64, 28, 28, generator=rng).cuda().half() for _ in range(2))
    compiled = dnnc.compile(model, [x, r], device="cuda")
    expected = compiled(x, r)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        compiled(x, r)  # warm up on the capture stream
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = compiled(x, r)
    x.copy_(torch.randn(4, 64, 28, 28, generator=rng).cuda().half())
    graph.replay()
    torch.cuda.synchronize()
    assert_matches(captured, compiled(x, r), torch.float16, gpu=True)
    assert not torch.equal(captured, expected)


def test_resnet50_fp16_matches_eager() -> None:
    """Every convolution in a cuDNN graph; the result as close to float64 as
    PyTorch's own fp16 eager run is (within a factor of 2)."""
    from dnnc.models import resnet50
    from tests.runtime.test_gpu_models import assert_as_close_as_eager

    model, (x,) = resnet50(batch=8)
    model = model.half()
    x = x.half()
    with torch.no_grad():
        expected = model.double()(x.double())
        model = model.half().cuda()
        eager = model(x.cuda()).cpu()
    compiled = dnnc.compile(model, [x.cuda()], device="cuda")
    summary = compiled.summary()  # type: ignore[union-attr]
    assert summary["steps"]["cudnn"] >= 50 and not summary["fallbacks"], summary
    assert_as_close_as_eager(compiled(x.cuda()), eager, expected, torch.float16)


def test_plan_rebuilt_from_record_without_timing(tmp_path, rng: torch.Generator) -> None:
    """The second build of the same graph takes the recorded engine and knobs from
    the plan cache (no timing) and computes the same result; the compiled program's
    kernel record names that engine and those knobs."""
    from dnnc import knobs
    from dnnc.backends.cudnn.runtime import build_kernel
    from dnnc.ir import cudnn as dialect

    model = ConvEpilogue(32, 32, "relu", False, kernel_size=3, padding=1).eval().cuda().half()
    x = torch.randn(2, 32, 16, 16, generator=rng).cuda().half()
    with knobs.override(cache_dir=tmp_path, autotune=True):
        compiled = dnnc.compile(model, [x], device="cuda")
        kernels = compiled.kernels()  # type: ignore[union-attr]
        graph, kernel = next((op, k) for op, k in kernels.items() if isinstance(op, dialect.GraphOp))
        record = kernel.record()["plan"]
        assert {"engine", "knobs"} <= set(record)
        first = build_kernel(graph, torch.device("cuda"))
        second = build_kernel(graph, torch.device("cuda"))
    assert first.rebuilt and second.rebuilt, "the tuned plan should have been cached by the compile"
    assert second.plan.engine == record["engine"] and second.plan.knobs == record["knobs"]
    assert_matches(compiled(x), _reference(model, [x]).half(), torch.float16, gpu=True)


def test_runtime_compiled_plans_are_built_in_workers_and_travel_serialized(tmp_path, rng: torch.Generator) -> None:
    """A residual convolution that only runtime-compiled engines take (cuDNN 9.19 on
    Hopper) is tuned on plans built in worker processes and deserialized; the compile
    caches and its artifact records the chosen plan serialized, and both the warm
    build and the artifact's load deserialize it instead of building it. All compute
    the reference's result."""
    from dnnc.backends.cudnn.prebuilt import prebuilt_for
    from dnnc.backends.cudnn.runtime import build_kernel
    from dnnc.backends.cudnn.signature import graph_signature
    from dnnc.ir import cudnn as dialect

    model = ConvEpilogue(64, 64, "relu", True, kernel_size=1).eval().cuda().half()
    x, r = (torch.randn(8, 64, 28, 28, generator=rng).cuda().half() for _ in range(2))
    with knobs.override(cache_dir=tmp_path / "cache", autotune=True):
        compiled = dnnc.compile(model, [x, r], device="cuda")
        graph, kernel = next((op, k) for op, k in compiled.kernels().items() if isinstance(op, dialect.GraphOp))  # type: ignore[union-attr]
        assert "conv_bias_add_relu" in compiled.ir
        assert len(prebuilt_for(graph_signature(graph))) >= 2, "its runtime-compiled plans were built in workers"
        assert kernel.plan.serialized is not None and kernel.plan.timed >= 2
        warm = build_kernel(graph, torch.device("cuda"))
    assert warm.rebuilt and warm.deserialized and warm.plan.name == kernel.plan.name
    expected = _reference(model, [x, r]).half()  # (turns the model's weights to float64)
    assert_matches(compiled(x, r), expected, torch.float16, gpu=True)
    loaded = dnnc.load(compiled.save(tmp_path / "residual.dnnc"), device="cuda")
    loaded_kernel = next(k for op, k in loaded.kernels().items() if isinstance(op, dialect.GraphOp))  # type: ignore[union-attr]
    assert loaded_kernel.deserialized and loaded_kernel.plan.name == kernel.plan.name
    assert_matches(loaded(x, r), expected, torch.float16, gpu=True)


@pytest.mark.parametrize("plans", [1, 3])
def test_tuning_times_as_many_runtime_compiled_plans_as_asked(plans: int, tmp_path, rng: torch.Generator) -> None:
    """A residual convolution only runtime-compiled engines take is tuned on the first
    ``knobs.runtime_compiled_plans`` of them (its other plans are not built), and
    computes the reference's result."""
    from dnnc.ir import cudnn as dialect

    model = ConvEpilogue(64, 64, "relu", True, kernel_size=1).eval().cuda().half()
    x, r = (torch.randn(8, 64, 28, 28, generator=rng).cuda().half() for _ in range(2))
    with knobs.override(cache_dir=tmp_path, autotune=True, runtime_compiled_plans=plans):
        compiled = dnnc.compile(model, [x, r], device="cuda")
    kernel = next(k for op, k in compiled.kernels().items() if isinstance(op, dialect.GraphOp))  # type: ignore[union-attr]
    assert kernel.plan.timed == plans
    assert_matches(compiled(x, r), _reference(model, [x, r]).half(), torch.float16, gpu=True)


@pytest.mark.parametrize("name", ["gpt2_block", "vit_block"])
def test_attention_as_one_sdpa_graph(name: str) -> None:
    """With ``cudnn_attention`` on, attention runs as one cuDNN SDPA graph (no
    fallback) and the model still matches eager as closely as eager fp16 does."""
    from dnnc import knobs
    from tests.runtime.test_gpu_models import _run

    with knobs.override(cudnn_attention=True):
        compiled, _, _ = _run(name, "cudnn,triton", torch.float16)
    summary = compiled.summary()  # type: ignore[union-attr]
    assert not summary["fallbacks"], summary
    assert "cudnn.sdpa" in compiled.ir


def test_attention_written_out_over_512_keys_is_one_sdpa_graph_by_default() -> None:
    """The BERT layer spells attention out (scores divided by sqrt(head dim), softmax,
    weighted sum): over 512 keys it runs as one cuDNN SDPA graph with the default
    settings and matches eager as closely as eager fp16 does."""
    from dnnc.models.bert import bert_layer
    from tests.runtime.test_gpu_models import assert_as_close_as_eager

    model, (x,) = bert_layer(batch=1, seq=512)
    model = model.eval().half()
    with torch.no_grad():
        expected = model.double()(x.double())
        model = model.cuda().half()
        eager = model(x.cuda().half()).cpu()
    compiled = dnnc.compile(model, (x.cuda().half(),), device="cuda")
    assert "cudnn.sdpa" in compiled.ir and not compiled.summary()["fallbacks"]
    assert_as_close_as_eager(compiled(x.cuda().half()), eager, expected, torch.float16)
