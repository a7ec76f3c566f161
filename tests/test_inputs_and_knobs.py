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
    ],
)
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        parse_input(spec)


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


@pytest.mark.parametrize(
    "env,message",
    [
        ({"DNNC_DEVICE": "tpu"}, "DNNC_DEVICE='tpu': expected one of auto, cpu, cuda"),
        ({"DNNC_VERIFY_EACH_PASS": "maybe"}, "expected 1/0"),
        ({"DNNC_COMPILE_WORKERS": "many"}, "DNNC_COMPILE_WORKERS='many': expected a whole number"),
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
