"""The StableHLO and torch.compile frontends on a GPU: the suite's JAX networks
through ``dnnc.jax.compile`` against JAX's own GPU results (JAX arrays in and out
through DLPack), and ``torch.compile(backend="dnnc")`` against eager."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import torch

from dnnc.numerics import GPU_TOLERANCE, relative_error
from tests.bench.test_suite import _fresh
from tests.numerics import tf32

pytestmark = pytest.mark.gpu
jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def _float64(model: torch.nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
    """The model's answer in float64 on the CPU: the reference both sides are held to."""
    with torch.no_grad():
        return model.to("cpu", torch.float64)(*[x.double() if x.is_floating_point() else x for x in inputs])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", ["resnet50", "gpt2_block"])
def test_jax_networks_through_dnnc_match_jax(name: str, dtype: str, rng: torch.Generator) -> None:
    import dnnc.jax
    from bench.suite.jax_nets import NETS

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("this JAX has no GPU backend")
    model, inputs = _fresh(name, rng)
    fn, params = NETS[name]({k: v.detach().numpy() for k, v in model.state_dict().items()}, getattr(jnp, dtype))
    xs = [jnp.asarray(x.numpy(), getattr(jnp, dtype)) if x.is_floating_point() else jnp.asarray(x.numpy()) for x in inputs]
    f = functools.partial(fn, params)
    compiled = dnnc.jax.compile(f, *xs, device="cuda")
    got, xla = compiled(*xs), jax.jit(f)(*xs)
    assert isinstance(got, jax.Array) and got.dtype == xla.dtype
    expected = _float64(model, inputs)
    ours = relative_error(torch.from_numpy(np.array(got, np.float64)), expected)
    theirs = relative_error(torch.from_numpy(np.array(xla, np.float64)), expected)
    # the GPU tolerance (float32 runs as TF32 on tensor cores), or twice XLA's own error where that is larger
    bound = max(2 * theirs, GPU_TOLERANCE[getattr(torch, dtype)])
    assert ours <= bound, f"dnnc {ours:.2e}, XLA {theirs:.2e} against float64"
    steps = compiled.module.summary()["steps"]
    assert steps.get("cudnn", 0) + steps.get("triton", 0) > 0, steps


def test_torch_compile_with_the_dnnc_backend_matches_eager(rng: torch.Generator) -> None:
    from dnnc.frontend import dynamo

    torch._dynamo.reset()
    model, inputs = _fresh("resnet50", rng)
    model = model.eval().cuda()
    x = inputs[0].cuda()
    before = len(dynamo.compiled_graphs)
    compiled = torch.compile(model, backend="dnnc", dynamic=False)
    with torch.no_grad(), tf32(True):
        got, eager = compiled(x), model(x)
    assert len(dynamo.compiled_graphs) > before and dynamo.compiled_graphs[-1].device == "cuda"
    expected = _float64(model, inputs)
    ours, theirs = relative_error(got.cpu(), expected), relative_error(eager.cpu(), expected)
    # fifty TF32 convolutions: the GPU tolerance, or twice eager's own error in TF32 where that is larger
    assert ours <= max(2 * theirs, GPU_TOLERANCE[torch.float32]), f"dnnc {ours:.2e}, eager {theirs:.2e} against float64"


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_jax_transposed_convolutions_through_dnnc_match_jax(dtype: str, rng: torch.Generator) -> None:
    """A decoder's upsampling in JAX: ``lax.conv_transpose`` (input dilation), once with
    the kernel reversed (``stablehlo.reverse``), on the GPU against XLA's, both held to
    JAX's float32 answer on the CPU."""
    from jax import lax

    import dnnc.jax

    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("this JAX has no GPU backend")

    def decoder(x, w1, w2):
        y = jax.nn.relu(lax.conv_transpose(x, w1, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC")))
        return lax.conv_transpose(y, w2, (2, 2), "VALID", dimension_numbers=("NHWC", "HWIO", "NHWC"), transpose_kernel=True)

    shapes = [(2, 8, 8, 32), (3, 3, 32, 16), (4, 4, 8, 16)]
    host = [torch.randn(*s, generator=rng).numpy() * (0.2 if i else 1.0) for i, s in enumerate(shapes)]
    xs = [jnp.asarray(a, getattr(jnp, dtype)) for a in host]
    compiled = dnnc.jax.compile(decoder, *xs, device="cuda")
    got, xla = compiled(*xs), jax.jit(decoder)(*xs)
    assert got.shape == xla.shape and got.dtype == xla.dtype
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        expected = torch.from_numpy(np.array(jax.jit(decoder)(*[jnp.asarray(a) for a in host]), np.float64))
    ours = relative_error(torch.from_numpy(np.array(got, np.float64)), expected)
    theirs = relative_error(torch.from_numpy(np.array(xla, np.float64)), expected)
    bound = max(2 * theirs, GPU_TOLERANCE[getattr(torch, dtype)])
    assert ours <= bound, f"dnnc {ours:.2e}, XLA {theirs:.2e} against JAX in float32 on the CPU"
