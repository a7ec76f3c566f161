"""An artifact is data: loading and running a ``.dnnc`` never executes Python the
file carries (a Triton kernel record's text) or names (a user kernel's reference),
whatever the file says and even with its hashes made to match."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch
from torch import nn

import dnnc


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.fc(x), -1)


def payload(mark: Path) -> str:
    """Python that leaves ``mark`` behind if anything executes it."""
    return f"import pathlib\npathlib.Path({str(mark)!r}).write_text('ran')\n"


def rewrite_member(path: Path, member: str, data: bytes) -> None:
    """Replace one member and record its new SHA-256 in the manifest, as a crafted file would."""
    with zipfile.ZipFile(path) as z:
        contents = {n: z.read(n) for n in z.namelist()}
    contents[member] = data
    manifest = json.loads(contents["manifest.json"])
    manifest["members"][member] = hashlib.sha256(data).hexdigest()
    contents["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as z:
        for name, body in contents.items():
            z.writestr(name, body)


def _gpu_artifact(tmp_path: Path, net: nn.Module, x: torch.Tensor) -> Path:
    """A GPU-form program (Triton groups) saved as built for sm_90, on this CPU machine."""
    from dnnc.compiled import CompiledModule
    from dnnc.pipeline import CompileReport, lower_for_gpu

    reference = dnnc.compile(net, (x,), device="cpu")
    program = reference.program
    lower_for_gpu(program, backends=["triton"])
    module = CompiledModule(program, CompileReport(), "cpu", reference._in_spec, reference._out_spec, target="sm_90")
    return module.save(tmp_path / "gpu.dnnc")


def test_a_kernel_record_carrying_code_loads_and_runs_without_running_it(tmp_path: Path) -> None:
    net, x = _Net().eval(), torch.randn(4, 8)
    path = _gpu_artifact(tmp_path, net, x)
    mark = tmp_path / "payload-ran"
    record = {
        "ordinal": 0,
        "kind": "softmax",
        "name": "k0",
        "text": payload(mark) + "import triton\n",
        "signature": {"x": "*fp32", "y": "*fp32"},
        "grid": [1, 1, 1],
        "options": {"num_warps": 4},
        "config": {"BLOCK_M": 4, "BLOCK_R": 16, "num_warps": 4},
    }
    rewrite_member(path, "kernels/sm_90/triton.json", json.dumps([record]).encode())
    loaded = dnnc.load(path, device="cpu")
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), net(x), rtol=1e-5, atol=1e-6)
    assert not mark.exists()


# A user kernel's reference ------------------------------------------------------------

_IR = """builtin.module {{
  extern.kernel @k {{bindings = [{{name = "a", dtype = "i64", shape = ["n"], access = "read"}}, {{name = "out", dtype = "i64", shape = ["n"], access = "write"}}], push_constants = [{{name = "p", type = "i32", value = "{constant}"}}], block = array<i64: 64, 1, 1>, grid = ["1", "1", "1"], objects = {{sm_90 = "k.cubin"}}, reference = "{reference}"}}
  func.func @forward(%x: tensor<2xi64>) -> tensor<2xi64> {{
    %d = extern.dispatch @k(%x) {{constants = []}} : (tensor<2xi64>) -> tensor<2xi64>
    func.return %d : tensor<2xi64>
  }}
}}
"""


def _run_cli(args: list[str]):
    from click.testing import CliRunner

    from dnnc.cli import main

    return CliRunner().invoke(main, args)


@pytest.mark.parametrize("named", ["file", "relative-file", "module"])
def test_a_reference_an_ir_file_names_is_not_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str) -> None:
    from dnnc.kernels import reference as references

    monkeypatch.setattr(references, "_known", {})
    mark = tmp_path / "payload-ran"
    (tmp_path / "evil.py").write_text(payload(mark) + "def f(a, *rest):\n    return a\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    reference = {"file": f"{tmp_path / 'evil.py'}:f", "relative-file": "evil.py:f", "module": "evil:f"}[named]
    ir = tmp_path / "k.mlir"
    ir.write_text(_IR.format(reference=reference, constant="1"))
    result = _run_cli(["run", str(ir), "--input=2xi64=3"])
    assert result.exit_code != 0 and "Traceback" not in result.output, result.output
    assert "does not import code that an IR file or artifact names" in result.output
    assert not mark.exists()
    trusted = _run_cli(["run", str(ir), "--input=2xi64=3", "--trust-code"])
    assert trusted.exit_code == 0, trusted.output
    assert mark.exists()  # the user said they trust it


def test_a_reference_naming_a_library_function_is_not_called(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``os:kill`` is importable in every process: being importable is not being declared."""
    import os

    calls: list[tuple] = []
    monkeypatch.setattr(os, "kill", lambda *a: calls.append(a))
    ir = tmp_path / "k.mlir"
    ir.write_text(_IR.format(reference="os:kill", constant="9"))
    result = _run_cli(["run", str(ir), "--input=2xi64=1"])
    assert result.exit_code != 0 and "no function this process declared" in result.output
    assert not calls


def test_an_artifact_names_a_file_reference_by_its_file_name_only(tmp_path: Path) -> None:
    """No path of the compiling machine goes into an artifact."""
    from dnnc.artifact.kernels import portable_kernels
    from dnnc.ir.params import ParamStore
    from dnnc.ir.program import Program
    from dnnc.ir.text import parse_ir

    deep = tmp_path / "home" / "someone" / "secret-project"
    program = Program(parse_ir(_IR.format(reference=f"{deep / 'kernels.py'}:f", constant="1")), ParamStore())
    stored = portable_kernels(program)
    assert "kernels.py:f" in stored.text() and str(deep) not in stored.text()
    assert str(deep) in program.text()  # the compiled program keeps its own


def test_an_artifact_with_user_kernels_runs_on_the_cpu_after_importing_their_declarations(tmp_path: Path) -> None:
    """The worked example, compiled for the CPU and run in a fresh CLI call: its
    references are the example's own functions once the user imports the example
    (``--import``), and are refused without it."""
    example = Path(__file__).resolve().parents[2] / "examples" / "custom_dispatch" / "model.py"
    artifact = tmp_path / "mixed.dnnc"
    compiled = _run_cli(["compile", f"{example}:mixed_invocation", "--device", "cpu", "-o", str(artifact)])
    assert compiled.exit_code == 0, compiled.output
    assert str(example.parent) not in zipfile.ZipFile(artifact).read("program.mlir").decode()
    run = [sys.executable, "-m", "dnnc", "run", str(artifact), "--input=1024xf32=random", "--input=1024xf32=random"]
    refused = subprocess.run(run, capture_output=True, text=True, cwd=tmp_path)  # a fresh process
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "--import" in said and "Traceback" not in said, said
    ran = subprocess.run([*run, "--import", str(example)], capture_output=True, text=True, cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
