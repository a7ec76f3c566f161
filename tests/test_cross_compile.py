"""Building for a GPU that is not here (``dnnc.compile(..., target="sm_90")``, ``dnnc
compile --target``), on the CPU: the artifact names the target, every Triton kernel
is stored compiled for it and is taken back with ``triton.compile`` made impossible,
cuDNN graphs carry the shipped specs' plans, the artifact computes the reference's
result here, and what cannot be built elsewhere is a clear error.

The builds compile Triton kernels, so they run in a process without TRITON_INTERPRET
(``cross_check``, ``dnnc compile``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

import dnnc
from dnnc.backends.triton import compiler
from dnnc.errors import DnncError
from tests.kernels.test_custom_kernels import TwoOutputs
from tests.numerics import assert_matches

pytestmark = pytest.mark.skipif(torch.cuda.is_available(), reason="builds for a GPU that is not here: a CPU machine's test")

ROOT = Path(__file__).resolve().parents[1]


def _compiling_env(cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env |= {"DNNC_CACHE_DIR": str(cache), "TRITON_CACHE_DIR": str(cache / "triton-own")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("cross")
    run = subprocess.run(
        [sys.executable, "-m", "tests.cross_check", str(out)],
        cwd=ROOT,
        env=_compiling_env(out / "cache"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return out, json.loads(run.stdout.strip().splitlines()[-1])


def test_an_artifact_for_sm_90_stores_its_kernels_compiled(built: tuple[Path, dict[str, Any]]) -> None:
    """BERT's layer at batch 1 and 128 tokens, a shape the shipped sm_90 library has a
    record for at every cuDNN group."""
    out, found = built
    steps = found["steps"]
    assert (found["device"], found["target"]) == ("cpu", "sm_90")
    assert steps.get("cudnn") and steps.get("triton") and "torch" not in steps, steps
    archive = zipfile.ZipFile(out / "layer.dnnc")
    assert json.loads(archive.read("manifest.json"))["target"] == "sm_90"
    records = json.loads(archive.read("kernels/sm_90/triton.json"))
    assert len(records) == steps["triton"]
    assert all(r["object"]["target"] == "sm_90" for r in records)
    program = archive.read("program.mlir").decode()
    assert program.count("cudnn.graph(") == steps["cudnn"] == program.count(" plan = "), "each graph carries a spec's plan"


def test_the_stored_kernels_are_taken_without_compiling(built: tuple[Path, dict[str, Any]]) -> None:
    """What a load on the target does for each kernel (``compiler.adopt``)."""
    adopted = built[1]["adopted"]
    assert adopted and all(adopted)


def test_the_artifact_computes_the_models_result_here(built: tuple[Path, dict[str, Any]]) -> None:
    out, _ = built
    loaded = dnnc.load(out / "layer.dnnc")
    assert_matches(loaded(torch.load(out / "x.pt")), torch.load(out / "expected.pt"), torch.float16)


def test_a_dynamic_batch_builds_every_bucket_for_the_target(built: tuple[Path, dict[str, Any]]) -> None:
    out, found = built
    names = zipfile.ZipFile(out / "bucketed.dnnc").namelist()
    buckets = [n for n in names if n.startswith("buckets/") and n.endswith("/kernels/sm_90/triton.json")]
    assert found["buckets"] >= 2 and len(buckets) == found["buckets"] - 1 and "kernels/sm_90/triton.json" in names


def test_the_kernel_key_leaves_out_torch_and_cudnn(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel compiled with a CPU build of torch and no cuDNN is the one a GPU
    machine's Triton and dnnc would compile: the same key."""
    from dnnc import version
    from dnnc.backends.triton.kernels import KernelSource

    source = KernelSource("pointwise", "k", "def k(): pass\n", {"x": "*fp16"}, (1, 1, 1), {"num_warps": 4})
    before = compiler._key(source, compiler.cuda_target(90), True)
    elsewhere = {**version.library_versions(), "torch": "2.11.0+cu130", "cudnn": "91900", "cudnn_frontend": "1.32.0"}
    monkeypatch.setattr(version, "library_versions", lambda: elsewhere)
    assert compiler._key(source, compiler.cuda_target(90), True) == before
    assert compiler._key(source, compiler.cuda_target(80), True) != before


@pytest.mark.parametrize(
    ("target", "device", "expected"),
    [
        ("sm_9", None, "expected a CUDA architecture sm_<major><minor>"),
        ("gfx90a", None, "expected a CUDA architecture"),
        ("sm_90", "cuda", "leave device out"),
    ],
)
def test_a_target_it_cannot_build_for_is_a_clear_error(target: str, device: str | None, expected: str) -> None:
    with pytest.raises(DnncError, match=expected):
        dnnc.compile(TwoOutputs(), (torch.randn(8, 32),), target=target, device=device)


def test_user_kernels_are_refused_with_the_reason(rng: torch.Generator) -> None:
    with pytest.raises(DnncError, match="scale_and_sum_cpu_test.*compiles only on their GPU"):
        dnnc.compile(TwoOutputs(), (torch.randn(8, 32, generator=rng),), target="sm_90")


def test_the_cli_writes_an_artifact_for_the_target(tmp_path: Path) -> None:
    def dnnc_cli(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-m", "dnnc", *args]
        return subprocess.run(command, cwd=tmp_path, env=_compiling_env(tmp_path / "cache"), capture_output=True, text=True)

    done = dnnc_cli("compile", "dnnc.models:conv_block", "--target", "sm_90")
    assert done.returncode == 0, done.stderr[-3000:]
    said = done.stdout + done.stderr
    assert "built here without it" in said and "check: matches" in said, said
    assert json.loads(zipfile.ZipFile(tmp_path / "conv_block.dnnc").read("manifest.json"))["target"] == "sm_90"
    shown = dnnc_cli("inspect", "conv_block.dnnc")
    assert "1 stored compiled for sm_90" in shown.stdout + shown.stderr
    wrong = dnnc_cli("compile", "dnnc.models:conv_block", "--target", "sm90")
    assert wrong.returncode != 0 and "expected a CUDA architecture" in wrong.stdout + wrong.stderr
    assert "Traceback" not in wrong.stdout + wrong.stderr


def test_a_stablehlo_file_is_built_for_the_target(tmp_path: Path) -> None:
    jax = pytest.importorskip("jax")

    def conv(x, w):  # NHWC, HWIO, as JAX writes convolutions
        return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))

    x, w = jax.numpy.ones((2, 9, 9, 8), "float16"), jax.numpy.ones((3, 3, 8, 16), "float16")
    (tmp_path / "conv.mlir").write_text(jax.jit(conv).lower(x, w).as_text())
    command = [sys.executable, "-m", "dnnc", "compile", "conv.mlir", "--target", "sm_90", "-o", "conv.dnnc"]
    done = subprocess.run(command, cwd=tmp_path, env=_compiling_env(tmp_path / "cache"), capture_output=True, text=True)
    said = done.stdout + done.stderr
    assert done.returncode == 0 and "matches the reference backend" in said, said[-3000:]
    archive = zipfile.ZipFile(tmp_path / "conv.dnnc")
    assert json.loads(archive.read("manifest.json"))["target"] == "sm_90"
    assert "kernels/sm_90/triton.json" in archive.namelist()
