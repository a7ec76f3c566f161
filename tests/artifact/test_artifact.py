"""Artifacts on the CPU: save -> load -> run equals the compiled module (in this
process and in a fresh one), metadata kept verbatim, and every bad input or bad
artifact stopped with an error that names what is wrong."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

import dnnc
from dnnc.artifact import SCHEMA_VERSION, ArtifactWarning, read_manifest
from dnnc.errors import ArtifactError, InputError

REPO = Path(__file__).resolve().parents[2]


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.relu(self.bn(self.conv(x))).mean((2, 3))
        return self.fc(y) * scale, y.softmax(-1)


def _net() -> nn.Module:
    torch.manual_seed(0)
    model = Net().eval()
    model.bn.running_mean.uniform_(-0.5, 0.5)
    model.bn.running_var.uniform_(0.5, 2.0)
    return model


def _inputs(rng: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(2, 3, 7, 7, generator=rng), torch.rand(4, generator=rng) + 0.5


@pytest.fixture
def compiled(rng: torch.Generator) -> dnnc.CompiledModule:
    module = dnnc.compile(_net(), _inputs(rng), device="cpu")
    module.program.metadata["decisions"] = [{"group": 0, "backend": "cudnn", "why": "test"}]
    return module


@pytest.fixture
def artifact(compiled: dnnc.CompiledModule, tmp_path: Path) -> Path:
    return compiled.save(tmp_path / "net.dnnc")


def test_round_trip_equals_the_compiled_module(compiled, artifact: Path, rng: torch.Generator) -> None:
    loaded = dnnc.load(artifact)
    x, s = _inputs(rng)
    expected = compiled(x, s)
    got = loaded(x, s)
    assert isinstance(got, tuple) and len(got) == 2  # the model's output structure
    for g, e in zip(got, expected):
        assert torch.equal(g, e)
    assert loaded.program.metadata == {"decisions": [{"group": 0, "backend": "cudnn", "why": "test"}]}
    assert loaded.target == "cpu" and loaded.memory_peak_bytes is None


def test_dlpack_inputs(artifact: Path, rng: torch.Generator) -> None:
    loaded = dnnc.load(artifact)
    x, s = _inputs(rng)
    got = loaded(x.numpy(), s.numpy())  # NumPy arrays speak DLPack
    for g, e in zip(got, loaded(x, s)):
        assert torch.equal(g, e)


def test_round_trip_in_a_fresh_process(compiled, artifact: Path, tmp_path: Path, rng: torch.Generator) -> None:
    x, s = _inputs(rng)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "s.npy", s.numpy())
    script = (
        "import sys, numpy as np, torch, dnnc\n"
        "m = dnnc.load(sys.argv[1])\n"
        "a, b = m(torch.from_numpy(np.load(sys.argv[2])), torch.from_numpy(np.load(sys.argv[3])))\n"
        "np.save(sys.argv[4], a.numpy()); np.save(sys.argv[5], b.numpy())\n"
    )
    outs = [tmp_path / "a.npy", tmp_path / "b.npy"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [sys.executable, "-c", script, str(artifact), str(tmp_path / "x.npy"), str(tmp_path / "s.npy"), *map(str, outs)]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    for path, e in zip(outs, compiled(x, s)):
        assert torch.equal(torch.from_numpy(np.load(path)), e)


@pytest.mark.parametrize(
    "make,message",
    [
        (lambda x, s: (x,), "expected 2 input(s)"),
        (lambda x, s: (x[:, :, :6], s), "input 0: expected shape [2, 3, 7, 7], got [2, 3, 6, 7]"),
        (lambda x, s: (x, s.double()), "input 1: expected dtype torch.float32, got torch.float64"),
        (lambda x, s: (x.to("meta"), s), "input 0: expected a tensor on cpu, got one on meta"),
        (lambda x, s: (x, [1.0] * 4), "input 1: expected a tensor of [4] float32, got list"),
    ],
)
def test_bad_inputs_are_named(artifact: Path, rng: torch.Generator, make: Callable, message: str) -> None:
    loaded = dnnc.load(artifact)
    with pytest.raises(InputError) as e:
        loaded(*make(*_inputs(rng)))
    assert message in str(e.value)


def _rewrite(path: Path, edit_manifest: Callable[[dict], None] | None = None, members: dict | None = None) -> None:
    """Rewrite the artifact with the manifest edited and members replaced (bytes) or dropped (None)."""
    with zipfile.ZipFile(path) as z:
        contents = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(contents["manifest.json"])
    if edit_manifest:
        edit_manifest(manifest)
    contents["manifest.json"] = json.dumps(manifest).encode()
    for name, data in (members or {}).items():
        if data is None:
            contents.pop(name)
        else:
            contents[name] = data
    with zipfile.ZipFile(path, "w") as z:
        for name, data in contents.items():
            z.writestr(name, data)


def _set(field: str, value: object) -> Callable[[dict], None]:
    return lambda m: m.__setitem__(field, value)


@pytest.mark.parametrize(
    "damage,message",
    [
        (lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]), "is not a readable zip archive (truncated"),
        (lambda p: p.write_bytes(b"not a zip at all"), "is not a readable zip archive"),
        (lambda p: _rewrite(p, members={"manifest.json": b"{not json"}), "manifest.json is not valid JSON"),
        (lambda p: _rewrite(p, _set("schema", SCHEMA_VERSION + 1)), f"manifest field 'schema' is {SCHEMA_VERSION + 1}"),
        (lambda p: _rewrite(p, _set("schema", "one")), "manifest field 'schema' must be an integer"),
        (lambda p: _rewrite(p, _set("format", "zip")), "manifest field 'format' must be 'dnnc-artifact'"),
        (lambda p: _rewrite(p, lambda m: m.pop("target")), "manifest has no field 'target'"),
        (lambda p: _rewrite(p, _set("target", "tpu_v5")), "manifest field 'target' must be 'cpu' or 'sm_<capability>'"),
        (lambda p: _rewrite(p, _set("dnnc", "7.3.0")), "was written by dnnc 7.3.0"),
        (lambda p: _rewrite(p, members={"params.safetensors": None}), "has no member 'params.safetensors'"),
        (lambda p: _rewrite(p, lambda m: m["members"].pop("metadata.json")), "'members' does not list 'metadata.json'"),
        (lambda p: _rewrite(p, members={"program.mlir": b"func.func @forward() {}"}), "member 'program.mlir' is corrupt"),
        (lambda p: _rewrite(p, lambda m: m["inputs"][0].__setitem__("dtype", "complex32")), "manifest field 'inputs[0]'"),
        (lambda p: _rewrite(p, lambda m: m["inputs"][0].__setitem__("shape", [9])), "manifest field 'inputs' does not match"),
    ],
    ids=[
        "truncated",
        "not-zip",
        "manifest-json",
        "schema-version",
        "schema-type",
        "format",
        "missing-field",
        "target",
        "dnnc-minor-version",
        "missing-member",
        "unlisted-member",
        "corrupt-member",
        "spec-dtype",
        "spec-mismatch",
    ],
)
def test_bad_artifacts_are_refused_by_name(artifact: Path, damage: Callable[[Path], None], message: str) -> None:
    damage(artifact)
    with pytest.raises(ArtifactError) as e:
        dnnc.load(artifact)
    assert message in str(e.value) and str(artifact) in str(e.value)


def test_corrupt_member_content_with_matching_hash_is_named(artifact: Path) -> None:
    import hashlib

    bad = b"func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = tcp.exp %x : tensor<3xf32>\n}\n"
    _rewrite(artifact, lambda m: m["members"].__setitem__("program.mlir", hashlib.sha256(bad).hexdigest()), {"program.mlir": bad})
    with pytest.raises(ArtifactError, match=r"program\.mlir"):
        dnnc.load(artifact)


def test_a_program_that_parses_but_does_not_verify_is_refused_once_checked(
    artifact: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The load verifies the program once (with its parameters), not once more while parsing."""
    import hashlib

    from dnnc.ir import program as program_module

    verified: list[object] = []
    verify_ir = program_module.verify_ir
    monkeypatch.setattr(
        program_module, "verify_ir", lambda module, source="": verified.append(module) or verify_ir(module, source)
    )
    monkeypatch.setattr("dnnc.ir.text.verify_ir", lambda module, source="": verified.append(module) or verify_ir(module, source))
    dnnc.load(artifact)
    assert len(verified) == 1
    bad = b"builtin.module {\n  func.func @forward(%x: tensor<2xf32>) -> tensor<3xf32> {\n    func.return %x : tensor<2xf32>\n  }\n}\n"
    _rewrite(artifact, lambda m: m["members"].__setitem__("program.mlir", hashlib.sha256(bad).hexdigest()), {"program.mlir": bad})
    with pytest.raises(ArtifactError, match=r"program\.mlir: IR does not verify"):
        dnnc.load(artifact)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match="does not exist"):
        dnnc.load(tmp_path / "nope.dnnc")


def test_another_patch_version_loads_with_a_warning(artifact: Path, rng: torch.Generator) -> None:
    major, minor, patch = dnnc.__version__.split(".")
    _rewrite(artifact, _set("dnnc", f"{major}.{minor}.{int(patch) + 1}"))
    with pytest.warns(ArtifactWarning, match=f"written by dnnc {major}.{minor}.{int(patch) + 1}"):
        loaded = dnnc.load(artifact)
    assert loaded(*_inputs(rng))[0].shape == (2, 4)


def test_cpu_artifact_is_refused_on_cuda(artifact: Path) -> None:
    with pytest.raises(ArtifactError, match="compiled for the CPU reference backend .* cannot run on cuda"):
        dnnc.load(artifact, device="cuda")


def test_gpu_artifact_runs_on_the_reference_backend_without_a_gpu(tmp_path: Path, rng: torch.Generator) -> None:
    """The GPU form of the IR (Triton groups) saved as built for sm_90, loaded on the CPU."""
    from dnnc.compiled import CompiledModule
    from dnnc.pipeline import CompileReport, lower_for_gpu

    x, s = _inputs(rng)
    reference = dnnc.compile(_net(), (x, s), device="cpu")
    program = reference.program
    lower_for_gpu(program, backends=["triton"])
    gpu_form = CompiledModule(program, CompileReport(), "cpu", reference._in_spec, reference._out_spec, target="sm_90")
    path = gpu_form.save(tmp_path / "gpu.dnnc")
    assert read_manifest(path).target == "sm_90"
    with zipfile.ZipFile(path) as z:
        assert "kernels/sm_90/triton.json" in z.namelist()
    loaded = dnnc.load(path, device="cpu")
    assert "tcp.isolated_group" in loaded.program.text()
    for g, e in zip(loaded(x, s), _net()(x, s)):
        torch.testing.assert_close(g, e.detach(), rtol=1e-5, atol=1e-5)


def test_other_gpu_arch_warns_and_rebuilds(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from dnnc.artifact.target import runtime_device
    from dnnc.runtime import device

    monkeypatch.setattr(device, "resolve_device", lambda requested: "cuda")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (8, 0))
    with pytest.warns(ArtifactWarning, match="built for sm_90, this GPU is sm_80: Triton kernels are compiled for sm_80"):
        assert runtime_device("sm_90", "auto", tmp_path / "m.dnnc") == "cuda"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same arch: no warning
        assert runtime_device("sm_90", "auto", tmp_path / "m.dnnc") == "cuda"


def test_save_as_mlir_keeps_writing_ir(compiled: dnnc.CompiledModule, tmp_path: Path) -> None:
    path = compiled.save(tmp_path / "net.mlir")
    assert "func.func @forward" in path.read_text() and path.with_suffix(".safetensors").is_file()


def test_a_manifest_whose_output_structure_does_not_match_the_program_is_refused_at_load(tmp_path: Path) -> None:
    """Caught by ``dnnc.load``, naming the field, not on the first call."""

    class TwoOutputs(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            return x + 1, {"a": x * 2}

    path = dnnc.compile(TwoOutputs(), (torch.randn(3),), device="cpu").save(tmp_path / "two.dnnc")
    with zipfile.ZipFile(path) as z:
        contents = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(contents["manifest.json"])
    spec = json.loads(manifest["structure"]["out_spec"])
    leaf = {"type": None, "context": None, "children_spec": []}
    spec[1]["children_spec"].append(leaf)  # a third output the program does not return
    manifest["structure"]["out_spec"] = json.dumps(spec)
    contents["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, body in contents.items():
            z.writestr(name, body)
    with pytest.raises(ArtifactError, match=r"structure\.out_spec' describes 3 output\(s\) but program.mlir returns 2"):
        dnnc.load(path, device="cpu")
