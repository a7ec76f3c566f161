"""Command-line input specs (iree-run-module style) and the settings module."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from dnnc import knobs
from dnnc.errors import InputError
from dnnc.inputs import parse_input, save_npy


def test_splat_list_and_random() -> None:
    assert torch.equal(parse_input("2x3xf32=0.5"), torch.full((2, 3), 0.5))
    assert torch.equal(parse_input("2x2xi64=1,2,3,4"), torch.tensor([[1, 2], [3, 4]]))
    assert parse_input("f16=2").shape == () and parse_input("f16=2").dtype == torch.float16
    r = parse_input("4x5xbf16=random", seed=3)
    assert r.dtype == torch.bfloat16 and r.shape == (4, 5) and r.float().abs().sum() > 0
    assert torch.equal(r, parse_input("4x5xbf16=random", seed=3))
    assert parse_input("3xi1=random").dtype == torch.bool


def test_npy_files(tmp_path: Path) -> None:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    np.save(tmp_path / "a.npy", a)
    assert torch.equal(parse_input(f"@{tmp_path / 'a.npy'}"), torch.from_numpy(a))
    assert torch.equal(parse_input(f"2x3xf32=@{tmp_path / 'a.npy'}"), torch.from_numpy(a))
    with pytest.raises(InputError, match=r"file holds \[2, 3\] torch.float32, expected \[3, 2\]"):
        parse_input(f"3x2xf32=@{tmp_path / 'a.npy'}")
    save_npy(torch.ones(2, dtype=torch.bfloat16), str(tmp_path / "b.npy"))
    assert np.load(tmp_path / "b.npy").dtype == np.float32


@pytest.mark.parametrize(
    "spec,message",
    [
        ("1x3x224", "expected TYPE=VALUE"),
        ("1x3xq=1", "unknown element type 'q'"),
        ("1x3xf64=1", "unknown element type 'f64'"),
        ("3xf32=1,2", "2 values given for 3 elements"),
        ("3xf32=abc", "'abc' is not a number"),
        ("@/nonexistent/x.npy", "does not exist"),
        ("x3xf32=1", "expected DIMSxTYPE"),
        # a value must fit the element type exactly: nothing is rounded, wrapped or clamped
        ("4xi32=1.5", "1.5 is not an integer, and int32 holds integers only"),
        ("4xi32=1,2,3,1e12", r"1e12 does not fit int32 \(\[-2147483648, 2147483647\]\)"),
        ("2xi64=9223372036854775808", "does not fit int64"),
        ("4xi32=inf", "inf is not an integer"),
        ("4xi32=nan", "nan is not an integer"),
        ("4xi64=-1e30", "does not fit int64"),
        ("2xi1=2", "'2' is not a bool"),
        ("2xf16=1e12", r"1e12 does not fit float16 \(largest finite value 65504\)"),
        ("2xbf16=1e39", "does not fit bfloat16"),
        ("2xf32=1e400", "does not fit float32"),
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_input(spec)


def test_values_that_fit_are_exact() -> None:
    big = 2**53 + 1  # not a float64: read as an integer, not through a float
    assert parse_input(f"2xi64={big},-{big}").tolist() == [big, -big]
    assert parse_input("2xi32=1e3,-7").tolist() == [1000, -7]
    assert parse_input("3xi1=1,false,true").tolist() == [True, False, True]
    assert parse_input("2xf32=inf,-inf").isinf().all()
    assert parse_input("f16=nan").isnan()
    assert parse_input("f16=65504").item() == 65504


def test_corrupt_npy(tmp_path: Path) -> None:
    (tmp_path / "bad.npy").write_bytes(b"not numpy")
    with pytest.raises(InputError, match="is not a readable .npy file"):
        parse_input(f"@{tmp_path / 'bad.npy'}")


def test_knobs_from_environment() -> None:
    k = knobs.from_env(
        {"DNNC_DEVICE": "cpu", "DNNC_VERIFY_EACH_PASS": "off", "DNNC_DUMP_DIR": "/tmp/d", "DNNC_REFERENCE_PRECISION": "float64"}
    )
    assert (
        k.device == "cpu" and k.verify_each_pass is False and k.dump_dir == Path("/tmp/d") and k.reference_precision == "float64"
    )
    assert knobs.from_env({}) == knobs.Knobs()
    assert knobs.from_env({"DNNC_COMPILE_WORKERS": "3"}).compile_workers == 3
    assert knobs.from_env({"DNNC_TUNE_FLOOR_US": "2.5"}).tune_floor_us == 2.5
    assert knobs.from_env({"DNNC_RUNTIME_COMPILED_PLANS": "8"}).runtime_compiled_plans == 8


@pytest.mark.parametrize(
    "env,message",
    [
        ({"DNNC_DEVICE": "tpu"}, "DNNC_DEVICE='tpu': expected one of auto, cpu, cuda"),
        ({"DNNC_VERIFY_EACH_PASS": "maybe"}, "expected 1/0"),
        ({"DNNC_COMPILE_WORKERS": "many"}, "DNNC_COMPILE_WORKERS='many': expected a whole number"),
        ({"DNNC_TUNE_FLOOR_US": "-1"}, "expected 0 \\(time every config\\) or more microseconds"),
        ({"DNNC_TUNE_FLOOR_US": "nan"}, "expected 0"),
        ({"DNNC_TUNE_FLOOR_US": "fast"}, "expected a number of microseconds"),
        ({"DNNC_RUNTIME_COMPILED_PLANS": "0"}, "expected 1 or more plans"),
        ({"DNNC_RUNTIME_COMPILED_PLANS": "all"}, "expected a whole number"),
    ],
)
def test_knobs_reject_bad_values(env: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        knobs.from_env(env)


def test_knobs_override_is_scoped() -> None:
    before = knobs.get()
    with knobs.override(reference_precision="float64") as k:
        assert k.reference_precision == "float64" and knobs.get() is k
    assert knobs.get() == before
    with pytest.raises(ValueError, match="expected one of float32, float64"), knobs.override(reference_precision="float16"):
        pass


def test_inputs_are_checked_against_the_signature_before_they_are_built(tmp_path: Path) -> None:
    """A spec for ~10^16 elements is refused by its shape, never allocated."""
    from click.testing import CliRunner

    from dnnc.cli import main

    ir = tmp_path / "neg.mlir"
    ir.write_text(
        "func.func @forward(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {\n"
        "  %y = tcp.neg %x : tensor<2x3xf32>\n  func.return %y : tensor<2x3xf32>\n}\n"
    )
    for spec, message in [
        ("99999999x99999999xf32=0", "input 0: expected shape [2, 3], got [99999999, 99999999]"),
        ("2x3xi64=random", "input 0: expected dtype torch.float32, got torch.int64"),
    ]:
        result = CliRunner().invoke(main, ["run", str(ir), f"--input={spec}"])
        assert result.exit_code != 0 and message in result.output and "Traceback" not in result.output, result.output
    big = tmp_path / "big.npy"
    np.save(big, np.zeros((4, 3), np.float32))
    result = CliRunner().invoke(main, ["run", str(ir), f"--input=@{big}"])
    assert result.exit_code != 0 and "expected shape [2, 3], got [4, 3]" in result.output
    ok = CliRunner().invoke(main, ["run", str(ir), "--input=2x3xf32=1"])
    assert ok.exit_code == 0 and "-1" in ok.output
