"""The dnnc command: compile / run / opt / ops, and their errors (one clear line,
exit code 1, no traceback)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from dnnc.cli import main

MODEL = """
import torch
from torch import nn


def tiny(batch=2):
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(4)
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), bn, nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    return model.eval(), (torch.randn(batch, 3, 6, 6),)


def cumulative():
    class M(nn.Module):
        def forward(self, x):
            return torch.special.digamma(x)
    return M(), (torch.randn(3),)


def broken():
    raise RuntimeError("factory exploded")


def not_a_pair():
    return 42
"""


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    path = tmp_path / "models.py"
    path.write_text(MODEL)
    return path


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(main, list(args), input=stdin)


@pytest.fixture
def compiled(model_file: Path, tmp_path: Path) -> Path:
    out = tmp_path / "build" / "tiny.mlir"
    result = invoke("compile", f"{model_file}:tiny", "-o", str(out))
    assert result.exit_code == 0, result.output
    return out


def test_compile_writes_ir_and_params_and_checks(model_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "tiny.mlir"
    result = invoke("compile", f"{model_file}:tiny", "-o", str(out), "--dump-dir", str(tmp_path / "stages"))
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.with_suffix(".safetensors").is_file()
    assert "tcp.batch_norm" not in out.read_text() and "tcp.conv2d" in out.read_text()
    for expected in (
        "compiled tiny in",
        "signature: 2x3x6x6xf32 -> 2x5xf32",
        "tcp.conv2d",
        "matches PyTorch eager",
        "CPU reference",
    ):
        assert expected in result.output
    assert {p.name for p in (tmp_path / "stages").iterdir()} == {"imported.mlir", "canonical.mlir"}
    assert "tcp.batch_norm" in (tmp_path / "stages" / "imported.mlir").read_text()


def test_compile_passes_factory_arguments(model_file: Path, tmp_path: Path) -> None:
    result = invoke("compile", f"{model_file}:tiny", "--arg", "batch=3", "-o", str(tmp_path / "t.mlir"), "--no-check")
    assert result.exit_code == 0, result.output
    assert "signature: 3x3x6x6xf32 -> 3x5xf32" in result.output


def test_compile_module_path(tmp_path: Path) -> None:
    args = ["--arg", "dim=32", "--arg", "heads=2", "--arg", "image_size=32", "--arg", "patch=8"]
    result = invoke("compile", "dnnc.models.vit:vit_block", *args, "-o", str(tmp_path / "vit.mlir"))
    assert result.exit_code == 0, result.output
    assert "tcp.layer_norm" in result.output and "matches PyTorch eager" in result.output


def test_run_with_splat_and_npy_inputs(compiled: Path, model_file: Path, tmp_path: Path, rng: torch.Generator) -> None:
    result = invoke("run", str(compiled), "--input=2x3x6x6xf32=0.5")
    assert result.exit_code == 0, result.output
    assert "result[0]: 2x5xf32" in result.output
    x = torch.randn(2, 3, 6, 6, generator=rng)
    np.save(tmp_path / "x.npy", x.numpy())
    result = invoke("run", str(compiled), f"--input=@{tmp_path / 'x.npy'}", f"--output={tmp_path / 'y.npy'}")
    assert result.exit_code == 0, result.output
    namespace: dict = {}
    exec(MODEL, namespace)
    model, _ = namespace["tiny"]()
    with torch.no_grad():
        expected = model(x)
    torch.testing.assert_close(torch.from_numpy(np.load(tmp_path / "y.npy")), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    "inputs,message",
    [
        (["--input=2x3x6x7xf32=0.5"], "input 0: expected shape [2, 3, 6, 6], got [2, 3, 6, 7]"),
        (["--input=2x3x6x6xf16=0.5"], "input 0: expected dtype torch.float32, got torch.float16"),
        ([], "expected 1 input(s) ([2, 3, 6, 6] float32), got 0"),
        (["--input=2x3x6x6xf32=0.5", "--input=2xf32=1"], "expected 1 input(s)"),
        (["--input=2x3x6x6xf32=zero"], "'zero' is not a number"),
        (["--input=2x3x6x6xf32=0.5", "--output=a.npy", "--output=b.npy"], "2 --output files given for 1 outputs"),
    ],
)
def test_run_input_errors(compiled: Path, inputs: list[str], message: str) -> None:
    result = invoke("run", str(compiled), *inputs)
    assert result.exit_code == 1 and message in result.output
    assert "Traceback" not in result.output


def test_run_bad_files(compiled: Path, tmp_path: Path) -> None:
    missing = invoke("run", str(tmp_path / "nope.mlir"))
    assert missing.exit_code == 1 and "IR file" in missing.output and "does not exist" in missing.output
    params = compiled.with_suffix(".safetensors")
    params.write_bytes(params.read_bytes()[:100])
    corrupt = invoke("run", str(compiled), "--input=2x3x6x6xf32=0.5")
    assert corrupt.exit_code == 1 and "is not a readable safetensors file" in corrupt.output
    params.unlink()
    gone = invoke("run", str(compiled), "--input=2x3x6x6xf32=0.5")
    assert gone.exit_code == 1 and "parameter file" in gone.output and "does not exist" in gone.output
    broken = tmp_path / "broken.mlir"
    broken.write_text(
        "func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  %y = tcp.exp %x : tensor<3xf32>\n  func.return %y : tensor<2xf32>\n}\n"
    )
    bad_ir = invoke("run", str(broken))
    assert bad_ir.exit_code == 1 and str(broken) in bad_ir.output


def test_run_detects_parameters_that_do_not_match_the_ir(compiled: Path) -> None:
    from safetensors.torch import load_file, save_file

    params_path = compiled.with_suffix(".safetensors")
    params = load_file(str(params_path))
    name = next(iter(params))
    params[name] = params[name].half()
    save_file(params, str(params_path))
    result = invoke("run", str(compiled), "--input=2x3x6x6xf32=0.5")
    assert result.exit_code == 1 and f"parameter @{name} is stored as" in result.output and "float16" in result.output


@pytest.mark.parametrize(
    "spec,message",
    [
        ("no_colon", "expected path/to/file.py:factory"),
        ("missing.py:f", "model file missing.py does not exist"),
        ("{file}:nope", "has no function 'nope'"),
        ("{file}:broken", "factory exploded"),
        ("{file}:not_a_pair", "must return (model, example_inputs), got int"),
        ("no.such.module:f", "cannot import module 'no.such.module'"),
    ],
)
def test_compile_model_errors(model_file: Path, spec: str, message: str) -> None:
    result = invoke("compile", spec.format(file=model_file))
    assert result.exit_code != 0
    assert message in result.output, result.output


def test_compile_unsupported_op_names_it(model_file: Path, tmp_path: Path) -> None:
    result = invoke("compile", f"{model_file}:cumulative", "-o", str(tmp_path / "c.mlir"))
    assert result.exit_code == 1
    assert "dnnc cannot import this model: 1 ATen op is not supported" in result.output
    assert re.search(r"aten\.digamma\.default +x1 +no import rule", result.output)
    assert f"{model_file}:" in result.output and "torch.special.digamma(x)" in result.output


def test_compile_unknown_factory_argument(model_file: Path) -> None:
    result = invoke("compile", f"{model_file}:tiny", "--arg", "width=3")
    assert result.exit_code == 1 and "factory tiny takes no argument 'width' (it takes: batch)" in result.output


def test_opt_runs_passes_on_files_and_stdin(compiled: Path, tmp_path: Path) -> None:
    stage = tmp_path / "imported.mlir"
    invoke(
        "compile",
        f"{compiled.parent.parent / 'models.py'}:tiny",
        "--dump-dir",
        str(tmp_path),
        "-o",
        str(tmp_path / "x.mlir"),
        "--no-check",
    )
    text = stage.read_text()
    result = invoke("opt", "-p", "fold-batchnorm,dce", stdin=text)
    assert result.exit_code == 0, result.output
    assert "tcp.batch_norm" in text and "tcp.batch_norm" not in result.output and "tcp.rsqrt" in result.output
    out = tmp_path / "out.mlir"
    result = invoke(
        "opt",
        str(stage),
        "-p",
        "fold-batchnorm,simplify-shapes,fold-params,dce",
        "--params",
        str(compiled.with_suffix(".safetensors")),
        "-o",
        str(out),
        "--params-out",
        str(tmp_path / "out.safetensors"),
    )
    # the imported stage names the model's original parameters, which the compiled store no longer has
    assert result.exit_code == 1 and "fold-params needs parameter values" in result.output
    result = invoke(
        "opt",
        str(stage),
        "-p",
        "fold-batchnorm,simplify-shapes,fold-params,dce",
        "--random-params",
        "-o",
        str(out),
        "--params-out",
        str(tmp_path / "out.safetensors"),
    )
    assert result.exit_code == 0, result.output
    assert "tcp.rsqrt" not in out.read_text() and (tmp_path / "out.safetensors").is_file()
    assert invoke("run", str(out), "--params", str(tmp_path / "out.safetensors"), "--input=2x3x6x6xf32=random").exit_code == 0


def test_opt_without_passes_round_trips(compiled: Path) -> None:
    result = invoke("opt", str(compiled))
    assert result.exit_code == 0 and result.output == compiled.read_text()


@pytest.mark.parametrize(
    "args,message",
    [(["-p", "nope"], "unknown pass 'nope'"), (["-p", "dce{x=1}"], "bad options for pass 'dce'")],
)
def test_opt_errors(compiled: Path, args: list[str], message: str) -> None:
    result = invoke("opt", str(compiled), *args)
    assert result.exit_code == 1 and message in result.output


def test_opt_reports_parse_errors_with_location() -> None:
    result = invoke("opt", stdin="func.func @f(%x: tensor<2xf32>) {\n  %y = tcp.frobnicate %x\n}\n")
    assert result.exit_code == 1 and "<stdin>" in result.output and "2:" in result.output


def test_ops_lists_both_tables() -> None:
    result = invoke("ops")
    assert "tcp.conv2d" in result.output and "aten.convolution.default" in result.output


def test_module_entry_point() -> None:
    result = subprocess.run([sys.executable, "-m", "dnnc", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "compile" in result.stdout and "opt" in result.stdout


def test_a_failed_check_on_a_gpu_program_names_the_wrong_steps(capsys) -> None:
    """``--check``'s failure on a GPU program prints (to stderr) the steps that, judged alone, are
    over their tolerance (``CompiledModule.check_steps``); a CPU program has none to judge."""
    from dnnc.cli import compile as cli_compile
    from dnnc.runtime.step_check import StepCheck

    def check(index: int, error: float) -> StepCheck:
        return StepCheck(index, "triton", "conv2d: conv2d, add", 0, (2, 4), torch.float16, error, 8e-3)

    class GpuProgram:
        device, placed = "cuda", torch.device("cpu")

        def __init__(self, checks: list[StepCheck]) -> None:
            self.checks, self.seen = checks, None

        def check_steps(self, *args):
            self.seen = args
            return self.checks

    x = torch.randn(2, 3)
    wrong = GpuProgram([check(0, 1e-3), check(1, 0.3), check(2, 2e-3)])
    cli_compile.report_wrong_steps(wrong, (x,))
    out = capsys.readouterr().err
    assert "step 1 (triton conv2d: conv2d, add)" in out and "WRONG" in out and "step 0" not in out
    assert wrong.seen is not None and torch.equal(wrong.seen[0], x)
    cli_compile.report_wrong_steps(GpuProgram([check(0, 1e-3)]), (x,))
    assert "within its tolerance" in capsys.readouterr().err
    cpu = GpuProgram([check(0, 1.0)])
    cpu.device = "cpu"
    cli_compile.report_wrong_steps(cpu, (x,))
    assert capsys.readouterr().err == "" and cpu.seen is None
