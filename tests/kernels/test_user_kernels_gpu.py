"""User kernels on a GPU: the example inside compiled models (CUDA graph replay
included), artifacts carrying the objects, variant selection among objects for
several architectures, the fallback to the reference, and run-time checks."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

import dnnc
from dnnc.errors import KernelBuildError, KernelDeclarationError
from dnnc.kernels.compilers import build
from dnnc.kernels.custom import loaded_kernel
from dnnc.kernels.objects import kernel_objects
from dnnc.kernels.runtime import KernelVariantWarning
from tests.kernels.kernels import EXAMPLE, KERNELS_CU, SCALE_AND_SUM_CU, load_example, scale_and_sum_decl, simple_mul_decl

pytestmark = pytest.mark.gpu
F32 = {"rtol": 1e-6, "atol": 1e-6}  # one multiply per element: exact up to rounding


def _here() -> int:
    major, minor = torch.cuda.get_device_capability()
    return major * 10 + minor


def test_eager_call_runs_the_cubin_for_this_gpu(rng: torch.Generator) -> None:
    example = load_example()
    a, b = (torch.randn(1000, generator=rng).cuda() for _ in range(2))
    torch.testing.assert_close(example.simple_mul(a, b), a * b, **F32)
    loaded = loaded_kernel(example.simple_mul.decl, a.device)
    assert loaded.variant == f"sm_{_here()} cubin"


@pytest.mark.parametrize("cuda_graph", [True, False], ids=["cuda-graph", "launches"])
def test_example_inside_a_compiled_model(rng: torch.Generator, cuda_graph: bool, tmp_path: Path) -> None:
    example = load_example()
    model = example.MixedInvocation()
    a, b = (torch.randn(4099, generator=rng).cuda() for _ in range(2))
    compiled = dnnc.compile(model, (a, b), device="cuda", cuda_graph=cuda_graph)
    summary = compiled.summary()
    assert summary["steps"]["extern"] == 1
    assert summary["user_kernels"] == {"simple_mul_inplace": f"sm_{_here()} cubin"}
    for _ in range(2):  # the second call replays the captured graph
        a, b = (torch.randn(4099, generator=rng).cuda() for _ in range(2))
        before = b.clone()
        torch.testing.assert_close(compiled(a, b), (torch.tanh(a) * (b + 1)) * 2 + a, **F32)
        assert torch.equal(b, before), "a readwrite binding updates the program's copy, never the caller's input"
    path = compiled.save(tmp_path / "mixed.dnnc")
    loaded = dnnc.load(path)
    assert loaded.summary()["user_kernels"] == summary["user_kernels"]
    torch.testing.assert_close(loaded(a, b), compiled(a, b), **F32)


def test_multiple_outputs_and_caller_constants(rng: torch.Generator, tmp_path: Path) -> None:
    source = tmp_path / "scale_and_sum.cu"
    source.write_text(SCALE_AND_SUM_CU)
    decl = scale_and_sum_decl(source)
    loaded = loaded_kernel(decl, torch.device("cuda", torch.cuda.current_device()))
    x = torch.randn(37, 100, generator=rng).cuda()
    out, sums = torch.empty_like(x), torch.empty(37, device="cuda")
    loaded.run([x], [out, sums], [0.5])
    torch.testing.assert_close(out, x * 0.5, **F32)
    torch.testing.assert_close(sums, x.sum(1), rtol=1e-5, atol=1e-4)  # 100 additions in another order


def _objects(tmp_path: Path, *wanted: tuple[str, str]) -> dict[str, str]:
    """Prebuilt objects for the example's simple_mul, one file per (target, kind)."""
    files = {}
    for target, kind in wanted:
        data, _ = build(KERNELS_CU, target, kind)
        path = tmp_path / f"kernels_{target}.{kind}"
        path.write_bytes(data)
        files[target] = str(path)
    return files


def _run(decl, rng: torch.Generator) -> tuple[object, list[warnings.WarningMessage]]:
    a, b = (torch.randn(513, generator=rng).cuda() for _ in range(2))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = loaded_kernel(decl, a.device, kernel_objects(decl))
    out = torch.empty_like(a)
    loaded.run([a, b], [out], [])
    torch.testing.assert_close(out, a * b, **F32)
    return loaded, [w for w in caught if issubclass(w.category, KernelVariantWarning)]


def test_the_highest_fitting_cubin_wins(rng: torch.Generator, tmp_path: Path) -> None:
    here = _here()
    targets = [("sm_80", "cubin"), ("sm_90", "cubin"), ("sm_100", "cubin"), ("sm_80", "ptx")]
    objects = _objects(tmp_path, *targets[:3])
    objects_ptx = _objects(tmp_path, targets[3])
    pairs = [*objects.items(), ("sm_80", objects_ptx["sm_80"])]
    loaded, warned = _run(simple_mul_decl(source=None, archs=(), objects=tuple(pairs)), rng)
    assert loaded.variant == f"sm_{here} cubin" and not warned


def test_ptx_is_jit_compiled_with_a_warning_when_no_cubin_fits(rng: torch.Generator, tmp_path: Path) -> None:
    objects = _objects(tmp_path, ("sm_80", "ptx"))
    loaded, warned = _run(simple_mul_decl(source=None, archs=(), objects=tuple(objects.items())), rng)
    assert loaded.variant == f"sm_80 ptx, JIT-compiled for sm_{_here()}"
    assert len(warned) == 1 and "JIT" in str(warned[0].message)


def test_the_reference_runs_when_no_object_fits(rng: torch.Generator, tmp_path: Path) -> None:
    objects = _objects(tmp_path, ("sm_100", "cubin"))  # another major: a cubin never runs across majors
    loaded, warned = _run(simple_mul_decl(source=None, archs=(), objects=tuple(objects.items())), rng)
    assert loaded.variant == "reference"
    assert len(warned) == 1 and "sm_100 cubin" in str(warned[0].message)
    with pytest.raises(KernelBuildError, match="no object runs on sm_.*and it has no reference"):
        decl = simple_mul_decl(
            name="simple_mul_noref", entry="simple_mul", source=None, archs=(), objects=tuple(objects.items()), reference=None
        )
        loaded_kernel(decl, torch.device("cuda"), kernel_objects(decl))


def test_a_call_that_does_not_fit_is_refused_before_launch(rng: torch.Generator) -> None:
    decl = simple_mul_decl()
    loaded = loaded_kernel(decl, torch.device("cuda", torch.cuda.current_device()))
    a = torch.randn(64, generator=rng).cuda()
    with pytest.raises(KernelDeclarationError, match="binding 'rhs' is declared f32\\[n\\]: n is 64"):
        loaded.run([a, torch.randn(65).cuda()], [torch.empty_like(a)], [])
    with pytest.raises(KernelDeclarationError, match="binding 'rhs' is declared f32\\[n\\], got a tensor of \\[64\\] float16"):
        loaded.run([a, a.half()], [torch.empty_like(a)], [])
    with pytest.raises(KernelDeclarationError, match="binding 'lhs' must be contiguous"):
        wide = torch.randn(128, generator=rng).cuda()
        loaded.run([wide[::2], a], [torch.empty_like(a)], [])
    with pytest.raises(KernelDeclarationError, match="output 'out' must be \\[64\\] f32"):
        loaded.run([a, a], [torch.empty(63, device="cuda")], [])


class _WithKernel(torch.nn.Module):
    def __init__(self, kernel: dnnc.CustomKernel):
        super().__init__()
        self.kernel = kernel

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return self.kernel(torch.relu(a), b) + 1.0


def test_a_compiled_model_falls_back_to_the_reference_when_no_object_fits(rng: torch.Generator, tmp_path: Path) -> None:
    objects = _objects(tmp_path, ("sm_100", "cubin"))
    kernel = dnnc.CustomKernel(
        "simple_mul_sm100_only",
        entry="simple_mul",
        objects=objects,
        bindings=[
            dnnc.Binding("lhs", "f32", ["n"]),
            dnnc.Binding("rhs", "f32", ["n"]),
            dnnc.Binding("out", "f32", ["n"], "write"),
        ],
        push_constants=[dnnc.PushConstant("dim", "i32", "n")],
        block=[64],
        grid=["ceildiv(n, 64)"],
        reference=__import__("tests.kernels.references", fromlist=["mul"]).mul,
    )
    model = _WithKernel(kernel)
    a, b = (torch.randn(300, generator=rng).cuda() for _ in range(2))
    with pytest.warns(KernelVariantWarning, match="no object runs on sm_.*sm_100 cubin.*running its reference"):
        compiled = dnnc.compile(model, (a, b), device="cuda")
    assert compiled.summary()["user_kernels"] == {"simple_mul_sm100_only": "reference"}
    for _ in range(2):
        torch.testing.assert_close(compiled(a, b), torch.relu(a) * b + 1.0, **F32)


def test_the_cli_compiles_and_runs_the_example(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from dnnc.artifact.store import read_artifact
    from dnnc.cli import main
    from dnnc.ir import extern

    artifact = tmp_path / "mixed.dnnc"
    model = f"{EXAMPLE / 'model.py'}:mixed_invocation"
    result = CliRunner().invoke(main, ["compile", model, "--device", "cuda", "-o", str(artifact)])
    assert result.exit_code == 0, result.output
    assert f"user kernel simple_mul_inplace: sm_{_here()} cubin" in result.output
    assert "matches PyTorch eager" in result.output
    contents = read_artifact(artifact)
    (kernel,) = [op for op in contents.program.module.ops if isinstance(op, extern.KernelOp)]
    decl = kernel.declaration()
    assert decl.source is None and {t for t, _ in decl.objects} == {"sm_80", "sm_90"}  # built once, carried as members
    assert all(name in contents.files for _, name in decl.objects)
    result = CliRunner().invoke(main, ["run", str(artifact), "--input=1024xf32=random", "--input=1024xf32=random"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["inspect", str(artifact)])
    assert (
        f"user kernel simple_mul_inplace: objects sm_80 cubin, sm_80 ptx, sm_90 cubin, sm_90 ptx; ran as sm_{_here()} cubin"
        in result.output
    )
