"""Bad input of every kind is a dnnc error naming what is wrong and what was
expected, never a traceback from torch or Python: through the API (a
``DnncError``) and through the CLI (exit status 1, one message, no ``Traceback``)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch

import dnnc
from dnnc.errors import ArtifactError, ExportError, SettingsError


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: dnnc.compile(42), ExportError, "compiles a torch.nn.Module or a torch.export.ExportedProgram, got int"),
        (lambda: dnnc.compile(lambda x: x, (torch.ones(2),)), ExportError, "got function .*wrap a function in an nn.Module"),
        (lambda: dnnc.compile(torch.nn.Linear(2, 2), ("abc",)), ExportError, "example input 0 is a str"),
        (
            lambda: dnnc.compile(torch.nn.Linear(2, 2), (np.ones(2),)),
            ExportError,
            "example input 0 is a ndarray.*torch.from_numpy",
        ),
        (
            lambda: dnnc.compile(torch.nn.Linear(2, 2), (torch.ones(3, 3),)),
            ExportError,
            r"with example inputs \(\[3, 3\] float32\): RuntimeError: a and b must have same reduction dim",
        ),
        (lambda: dnnc.load(None), ArtifactError, "takes the path of a .dnnc artifact, got NoneType"),
        (lambda: dnnc.load(Path("missing.dnnc")), ArtifactError, "does not exist"),
    ],
    ids=["int-model", "function-model", "str-input", "numpy-input", "wrong-shape", "load-none", "load-missing"],
)
def test_api_errors_name_the_problem(call: Callable[[], object], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def test_load_refuses_an_unknown_device(tmp_path: Path) -> None:
    compiled = dnnc.compile(torch.nn.Linear(2, 2), (torch.ones(1, 2),), device="cpu")
    path = compiled.save(tmp_path / "m.dnnc")
    with pytest.raises(ArtifactError, match="unknown device 'tpu'"):
        dnnc.load(path, device="tpu")


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"DNNC_AUTOTUNE": "maybe"}, "DNNC_AUTOTUNE='maybe': expected 1/0"),
        ({"DNNC_COMPILE_WORKERS": "-1"}, "DNNC_COMPILE_WORKERS='-1': expected 0"),
        ({"DNNC_COMPILE_WORKERS": "many"}, "expected a whole number"),
        ({"DNNC_PARTITION": "fastest"}, "DNNC_PARTITION='fastest': expected one of"),
        ({"DNNC_DEVICE": "tpu"}, "DNNC_DEVICE='tpu': expected one of"),
    ],
)
def test_bad_settings_are_one_line_in_the_cli(env: dict[str, str], message: str) -> None:
    import os

    result = subprocess.run(
        [sys.executable, "-m", "dnnc", "ops"], capture_output=True, text=True, env={**os.environ, **env}, timeout=120
    )
    said = result.stdout + result.stderr
    assert result.returncode != 0 and message in said and "Traceback" not in said, said


def test_bad_settings_are_settings_errors() -> None:
    from dnnc import knobs

    with pytest.raises(SettingsError, match="DNNC_CACHE='sometimes'"):
        knobs.from_env({"DNNC_CACHE": "sometimes"})
    with pytest.raises(SettingsError, match="partition='fastest'"), knobs.override(partition="fastest"):
        pass


def test_an_unknown_partition_policy_in_a_pipeline_is_a_pass_error(tmp_path: Path) -> None:
    ir = tmp_path / "id.mlir"
    ir.write_text("func.func @forward(%x: tensor<2xf32>) -> tensor<2xf32> {\n  func.return %x : tensor<2xf32>\n}\n")
    result = subprocess.run(
        [sys.executable, "-m", "dnnc", "opt", str(ir), "-p", "partition{policy=bogus}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = result.stdout + result.stderr
    assert result.returncode != 0 and "partition policy 'bogus': expected one of" in said and "Traceback" not in said, said


class _WritesInput(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x.add_(1)
        return x * 2


class _CountsCalls(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.add_(1)
        return x + 1


@pytest.mark.parametrize(
    ("model", "message"),
    [
        (_WritesInput(), r"writes its input 'x' in place \(at .*x.add_\(1\).*\): compute a new tensor instead"),
        (_CountsCalls(), "writes its buffer 'calls' while running"),
        (torch.nn.BatchNorm1d(4), "writes its buffer 'running_mean' .*BatchNorm in training mode does"),
    ],
    ids=["input", "buffer", "batchnorm"],
)
def test_a_side_effect_is_named_for_what_it_writes(model: torch.nn.Module, message: str) -> None:
    from dnnc.errors import UnsupportedOpError

    with pytest.raises(UnsupportedOpError, match=message):
        dnnc.compile(model, (torch.ones(2, 4),), device="cpu")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "a-file" / "m.dnnc", "a-file is a file, not a directory"),
        (lambda d: d / "a-file" / "deeper" / "m.mlir", "a-file is a file, not a directory"),
        (lambda d: d, "is a directory"),
        (lambda d: d / "locked" / "m.dnnc", "directory .*locked is not writable"),
        (lambda d: d / "locked" / "new" / "m.mlir", "directory .*locked is not writable"),
    ],
    ids=["under-a-file", "deep-under-a-file", "a-directory", "unwritable", "unwritable-missing"],
)
def test_output_paths_are_checked_before_compiling(tmp_path: Path, make: Callable[[Path], Path], message: str) -> None:
    import os

    from click.testing import CliRunner

    from dnnc.cli import main

    (tmp_path / "a-file").write_text("x")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        if os.access(locked, os.W_OK) and "locked" in str(make(tmp_path)):
            pytest.skip("running as a user every directory is writable for (root)")
        result = CliRunner().invoke(main, ["compile", "no/such/model.py:factory", "-o", str(make(tmp_path))])
        # the path is refused before the model is even looked for
        assert result.exit_code != 0 and "Traceback" not in result.output, result.output
        assert __import__("re").search(message, result.output), result.output
    finally:
        locked.chmod(0o700)


def test_a_missing_output_directory_is_created(tmp_path: Path) -> None:
    compiled = dnnc.compile(torch.nn.Linear(2, 2), (torch.ones(1, 2),), device="cpu")
    assert compiled.save(tmp_path / "new" / "dirs" / "m.dnnc").is_file()
    compiled.save(tmp_path / "other" / "m.mlir")
    assert (tmp_path / "other" / "m.safetensors").is_file()
