"""StableHLO into dnnc on the CPU: JAX networks (the suite's ResNet-50, MobileNetV2,
GPT-2 block and BERT layer written in jax.lax) and single ops lowered by jax.jit,
imported and run on the reference backend against JAX's own results; text,
bytecode and portable-artifact files; ``dnnc.jax.compile``; the CLI; errors."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")
from jax import lax  # noqa: E402

import dnnc.jax  # noqa: E402
from bench.suite import jax_nets  # noqa: E402
from dnnc.backends.reference import ReferenceExecutor  # noqa: E402
from dnnc.cli import main  # noqa: E402
from dnnc.errors import DnncError, UnsupportedOpError  # noqa: E402
from dnnc.frontend.stablehlo import import_module, import_stablehlo  # noqa: E402
from dnnc.pipeline import run_stage  # noqa: E402

F32 = 1e-5  # relative error against JAX in float32: same math, another summation order
I64 = 0


def _rel(got: np.ndarray, want: np.ndarray) -> float:
    want = np.asarray(want, np.float64)
    return float(np.abs(np.asarray(got, np.float64) - want).max() / max(np.abs(want).max(), 1e-30))


def _run(fn, *args) -> tuple[list[torch.Tensor], list[np.ndarray]]:
    """Import ``fn`` lowered for ``args``, canonicalize, run on the reference backend; and JAX's answer."""
    program = import_module(jax.jit(fn).lower(*args).compiler_ir("stablehlo"))
    run_stage(program, "canonical-stablehlo")
    got = ReferenceExecutor(program).run([torch.from_numpy(np.array(a)) for a in args])
    want = fn(*args)
    return got, [np.asarray(w) for w in (want if isinstance(want, (tuple, list)) else [want])]


def _random(rng: torch.Generator, *shape: int) -> jax.Array:
    return jnp.asarray(torch.randn(*shape, generator=rng).numpy())


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v2", "gpt2_block", "bert_layer"])
def test_jax_networks_match_jax(name: str, rng: torch.Generator) -> None:
    """The suite's networks at small sizes, weights closed over (they become parameters)."""
    from tests.bench.test_suite import _fresh

    model, inputs = _fresh(name, rng)
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    fn, params = jax_nets.NETS[name](sd, jnp.float32)
    got, want = _run(functools.partial(fn, params), *(jnp.asarray(x.numpy()) for x in inputs))
    assert _rel(got[0].numpy(), want[0]) < F32


@pytest.mark.parametrize("name", ["resnet50", "gpt2_block", "bert_layer"])
def test_jax_networks_canonicalize_like_the_pytorch_models(name: str, rng: torch.Generator) -> None:
    """After sink-transposes and raise-ops the JAX programs have the PyTorch models'
    ops: convolutions not split from their epilogues by NHWC transposes, softmax and
    layer norm as one op each (JAX writes them out in steps)."""
    from collections import Counter

    from dnnc.pipeline import to_canonical_tcp
    from tests.bench.test_suite import _fresh

    model, inputs = _fresh(name, rng)
    fn, params = jax_nets.NETS[name]({k: v.detach().numpy() for k, v in model.state_dict().items()}, jnp.float32)
    lowered = jax.jit(functools.partial(fn, params)).lower(*(jnp.asarray(x.numpy()) for x in inputs))
    program = import_module(lowered.compiler_ir("stablehlo"))
    run_stage(program, "canonical-stablehlo")
    ops = Counter(op.name for op in program.entry.body.block.ops)
    torch_ops = Counter(op.name for op in to_canonical_tcp(model.eval(), tuple(inputs)).entry.body.block.ops)
    for op in ("tcp.conv2d", "tcp.clamp", "tcp.max_pool2d", "tcp.softmax", "tcp.layer_norm", "tcp.batch_matmul"):
        assert ops[op] == torch_ops[op], op
    if name == "resnet50":
        assert ops["tcp.transpose"] <= 1  # only where the NHWC network pools over H and W


def _conv(x, w):
    return jax.nn.relu(lax.conv_general_dilated(x, w, (2, 2), [(1, 1), (0, 1)], dimension_numbers=("NHWC", "HWIO", "NHWC")))


def _conv_nchw_grouped(x, w):
    return lax.conv_general_dilated(
        x, w, (1, 1), "SAME", rhs_dilation=(2, 2), dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=2
    )


def _conv_transpose(x, w):
    """Flax's ConvTranspose: input dilation by the stride, padding after it."""
    return lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _conv_transpose_flipped_valid(x, w):
    """PyTorch's gradient form: the kernel reversed (``stablehlo.reverse``), VALID
    padding, unequal strides and a dilated kernel."""
    return lax.conv_transpose(
        x, w, (2, 3), "VALID", rhs_dilation=(1, 2), dimension_numbers=("NCHW", "OIHW", "NCHW"), transpose_kernel=True
    )


def _conv_cropped_dilated_input(x, w):
    """Input dilation with a negative padding: the input cropped."""
    return lax.conv_general_dilated(
        x, w, (1, 1), [(-1, 2), (1, -2)], lhs_dilation=(3, 2), dimension_numbers=("NCHW", "OIHW", "NCHW")
    )


def _max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 3, 3, 1), (1, 2, 2, 1), [(0, 0), (1, 1), (1, 1), (0, 0)])


def _sum_pool(x):
    return lax.reduce_window(x, 0.0, lax.add, (1, 1, 2, 2), (1, 1, 2, 2), "VALID")


def _attention(q, k):
    s = jnp.einsum("bhqd,bhkd->bhqk", q, k) / 2.0
    mask = jnp.tril(jnp.ones((s.shape[-1], s.shape[-1]), bool))
    return jax.nn.softmax(jnp.where(mask, s, -1e9), axis=-1)


def _mlp(a, w):
    return jax.nn.gelu(a @ w, approximate=False).sum(-1) + jnp.mean(a, axis=0).max() - a.min()


def _shapes(a, b):
    return (
        jnp.concatenate([a[:, 1:3], jnp.clip(b, -0.5, 0.5)], axis=1),
        jnp.pad(a, ((1, 0), (0, 2))),
        (a > b).astype(jnp.float32) + jnp.all(a > -1, axis=1, keepdims=True),
        jnp.broadcast_to(a[:, None, :], (4, 3, 4)).transpose(2, 0, 1) * jnp.arange(3.0),
        jnp.exp(a) + jnp.log(jnp.abs(b) + 1) + jnp.tanh(a) * jax.nn.sigmoid(b) + jnp.sqrt(jnp.abs(a)) + lax.rsqrt(b * b + 1),
    )


@pytest.mark.parametrize(
    ("fn", "shapes"),
    [
        (_conv, [(2, 9, 9, 3), (3, 3, 3, 8)]),
        (_conv_nchw_grouped, [(2, 4, 9, 9), (6, 2, 3, 3)]),
        (_conv_transpose, [(2, 5, 6, 3), (3, 3, 3, 4)]),
        (_conv_transpose_flipped_valid, [(2, 4, 5, 3), (4, 4, 3, 2)]),
        (_conv_cropped_dilated_input, [(1, 2, 4, 5), (3, 2, 2, 3)]),
        (_max_pool, [(2, 9, 9, 3)]),
        (_sum_pool, [(2, 3, 8, 6)]),
        (_attention, [(2, 3, 5, 4), (2, 3, 5, 4)]),
        (_mlp, [(6, 4), (4, 5)]),
        (_shapes, [(4, 4), (4, 4)]),
    ],
    ids=[
        "conv-nhwc",
        "conv-nchw-grouped-dilated",
        "conv-transpose-same",
        "conv-transpose-flipped-valid",
        "conv-input-dilation-cropped",
        "max-pool",
        "sum-pool",
        "attention",
        "mlp",
        "shape-and-elementwise",
    ],
)
def test_ops_match_jax(fn, shapes: list[tuple[int, ...]], rng: torch.Generator) -> None:
    got, want = _run(fn, *(_random(rng, *s) for s in shapes))
    for g, w in zip(got, want, strict=True):
        assert _rel(g.numpy(), w) < F32


def test_embedding_lookups_match_jax(rng: torch.Generator) -> None:
    table = _random(rng, 10, 4)
    ids = jnp.asarray(torch.randint(0, 10, (2, 3), generator=rng).numpy().astype(np.int32))
    for fn in (lambda t, i: jnp.take(t, i, axis=0) * 2, lambda t, i: t[i[0]]):
        got, want = _run(fn, table, ids)
        assert _rel(got[0].numpy(), want[0]) == I64  # a lookup copies rows exactly


def test_closed_over_arrays_become_parameters(rng: torch.Generator) -> None:
    w = _random(rng, 16, 8)
    program = import_module(jax.jit(lambda x: x @ w).lower(_random(rng, 2, 16)).compiler_ir("stablehlo"))
    (param,) = program.param_ops()
    assert tuple(program.params[param.param_name].shape) == (16, 8)
    assert torch.equal(program.params[param.param_name], torch.from_numpy(np.array(w)))


def test_dnnc_jax_compile_takes_and_returns_jax_arrays(rng: torch.Generator) -> None:
    def fn(params, x):
        h = jnp.tanh(x @ params["w"] + params["b"])
        return {"h": h, "total": h.sum()}

    params = {"w": _random(rng, 8, 4), "b": _random(rng, 4)}
    x = _random(rng, 3, 8)
    compiled = dnnc.jax.compile(fn, params, x, device="cpu")
    fresh = _random(rng, 3, 8)
    got, want = compiled(params, fresh), fn(params, fresh)
    assert isinstance(got["h"], jax.Array) and set(got) == {"h", "total"}
    # the sum's rounding is relative to its terms' magnitudes, not to the sum (they cancel)
    scale = float(np.abs(np.asarray(want["h"], np.float64)).sum())
    assert _rel(got["h"], want["h"]) < F32 and abs(float(got["total"]) - float(want["total"])) < F32 * scale
    with pytest.raises(DnncError, match="expected shape \\[3, 8\\], got \\[2, 8\\]"):
        compiled(params, _random(rng, 2, 8))


def test_text_bytecode_and_portable_files_import(tmp_path: Path, rng: torch.Generator) -> None:
    from jax import export

    x = _random(rng, 2, 9, 9, 3)
    w = _random(rng, 3, 3, 3, 8)
    lowered = jax.jit(_conv).lower(x, w)
    text = tmp_path / "conv.mlir"
    text.write_text(lowered.as_text())
    bytecode = tmp_path / "conv.mlirbc"
    with bytecode.open("wb") as f:
        lowered.compiler_ir("stablehlo").operation.write_bytecode(f)
    portable = tmp_path / "conv.portable.mlirbc"  # what jax.export stores: versioned, portable StableHLO
    portable.write_bytes(export.export(jax.jit(_conv))(x, w).mlir_module_serialized)
    want = np.asarray(_conv(x, w))
    for path in (text, bytecode, portable):
        program = import_stablehlo(path)
        got = ReferenceExecutor(program).run([torch.from_numpy(np.array(x)), torch.from_numpy(np.array(w))])
        assert _rel(got[0].numpy(), want) < F32, path


def test_dnnc_compile_takes_a_stablehlo_file(tmp_path: Path, rng: torch.Generator) -> None:
    x, w = _random(rng, 2, 9, 9, 3), _random(rng, 3, 3, 3, 8)
    source = tmp_path / "conv.mlir"
    source.write_text(jax.jit(_conv).lower(x, w).as_text())
    artifact = tmp_path / "conv.dnnc"
    result = CliRunner().invoke(main, ["compile", str(source), "--device", "cpu", "-o", str(artifact)])
    assert result.exit_code == 0, result.output
    assert "matches the reference backend" in result.output
    loaded = dnnc.load(artifact)
    got = loaded(torch.from_numpy(np.array(x)), torch.from_numpy(np.array(w)))
    assert _rel(got.numpy(), np.asarray(_conv(x, w))) < F32


def test_window_reversal_flips_the_kernel(tmp_path: Path, rng: torch.Generator) -> None:
    """``window_reversal`` (JAX writes none; other producers do) reverses the kernel along
    the spatial axes it names: here the first, as convolving with ``w`` flipped there."""

    def conv(x, w):
        return lax.conv_general_dilated(x, w, (1, 1), [(1, 0), (0, 1)], dimension_numbers=("NCHW", "OIHW", "NCHW"))

    x, w = _random(rng, 1, 2, 4, 5), _random(rng, 3, 2, 2, 3)
    text = jax.jit(conv).lower(x, w).as_text()
    assert "reverse = [false, false]" in text
    source = tmp_path / "reversed.mlir"
    source.write_text(text.replace("reverse = [false, false]", "reverse = [true, false]"))
    program = import_stablehlo(source)
    run_stage(program, "canonical-stablehlo")
    got = ReferenceExecutor(program).run([torch.from_numpy(np.array(x)), torch.from_numpy(np.array(w))])
    assert _rel(got[0].numpy(), np.asarray(conv(x, jnp.flip(w, axis=2)))) < F32
    assert _rel(got[0].numpy(), np.asarray(conv(x, w))) > 1e-2, "the flip changed the result"


def test_unsupported_ops_and_bad_files_are_clear_errors(tmp_path: Path) -> None:
    def uses_sine(x):
        return jnp.sin(x) + 1

    with pytest.raises(UnsupportedOpError, match=f"stablehlo.sine: dnnc has no import rule for this op\n  at {__file__}:\\d+"):
        import_module(jax.jit(uses_sine).lower(jnp.ones(3)).compiler_ir("stablehlo"))
    with pytest.raises(UnsupportedOpError, match="stablehlo.convolution: batch_group_count other than 1"):
        import_module(
            jax.jit(lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", batch_group_count=2))
            .lower(jnp.ones((2, 4, 4, 4)), jnp.ones((2, 4, 3, 3)))
            .compiler_ir("stablehlo")
        )
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {\n  %y = stablehlo.bogus %x : tensor<4xf32>\n}\n")
    with pytest.raises(DnncError, match=f"{bad}: cannot parse StableHLO"):
        import_stablehlo(bad)
    dynamic = tmp_path / "dynamic.mlir"
    dynamic.write_text("func.func @main(%x: tensor<?xf32>) -> tensor<?xf32> {\n  return %x : tensor<?xf32>\n}\n")
    with pytest.raises(UnsupportedOpError, match="argument 0 of @main is tensor<\\?xf32>; dnnc takes static shapes"):
        import_stablehlo(dynamic)
