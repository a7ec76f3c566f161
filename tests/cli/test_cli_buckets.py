"""``dnnc compile --dynamic/--buckets`` and the bucketed artifact through ``run``,
``bench --batch`` and ``inspect``, on the CPU."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.test_cli import invoke, model_file  # noqa: F401 - model_file is a fixture


@pytest.fixture
def bucketed(model_file: Path, tmp_path: Path) -> Path:  # noqa: F811
    out = tmp_path / "tiny.dnnc"
    result = invoke(
        "compile", f"{model_file}:tiny", "-o", str(out), "--device", "cpu", "--dynamic", "batch=1..6", "--buckets", "2,4"
    )
    assert result.exit_code == 0, result.output
    for expected in (
        "compiled tiny for 3 buckets",
        "buckets: batch=6, batch=4, batch=2 (ranges batch=1..6; signature above: batch=6)",
        "matches PyTorch eager on fresh random inputs at batch=",
        "matches PyTorch eager on fresh random inputs at batch=5, padded to batch=6",
    ):
        assert expected in result.output, result.output
    return out


def test_run_takes_any_size_in_the_range(bucketed: Path) -> None:
    result = invoke("run", str(bucketed), "--input=3x3x6x6xf32=random")
    assert result.exit_code == 0, result.output
    assert "bucket batch=4" in result.output and "result[0]: 3x5xf32" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input=7x3x6x6xf32=0.5"], "batch 7 is outside the compiled range batch=1..6"),
        (["--input=3x3x5x6xf32=0.5"], "input 0: expected shape [4, 3, 6, 6], got [4, 3, 5, 6]"),
    ],
)
def test_run_out_of_range_is_one_clear_line(bucketed: Path, args: list[str], message: str) -> None:
    result = invoke("run", str(bucketed), *args)
    assert result.exit_code == 1 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_bench_times_the_sizes_asked_for(bucketed: Path) -> None:
    result = invoke("bench", str(bucketed), "--batch", "1,3,6", "--iterations", "2", "--warmup", "0", "--json")
    assert result.exit_code == 0, result.output
    runs = json.loads(result.output)
    assert [(r["sizes"], r["batch"]) for r in runs] == [("batch=1", 1), ("batch=3", 3), ("batch=6", 6)]
    result = invoke("bench", str(bucketed), "--batch", "9", "--iterations", "1")
    assert result.exit_code == 1 and "batch 9 is outside the compiled range batch=1..6" in result.output


def test_bench_of_a_single_shape_artifact_refuses_batch(model_file: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "one.dnnc"
    assert invoke("compile", f"{model_file}:tiny", "-o", str(out), "--device", "cpu", "--no-check").exit_code == 0
    result = invoke("bench", str(out), "--batch", "2")
    assert result.exit_code == 1 and "compiled for one shape; compile with --dynamic" in result.output


def test_inspect_lists_the_buckets(bucketed: Path) -> None:
    result = invoke("inspect", str(bucketed))
    assert result.exit_code == 0, result.output
    assert "buckets: 3 over batch=1..6" in result.output
    for label in ("batch=6: inputs [6, 3, 6, 6] float32", "batch=4: inputs [4, 3, 6, 6] float32", "batch=2: inputs [2, 3, 6, 6]"):
        assert label in result.output, result.output
    facts = json.loads(invoke("inspect", str(bucketed), "--json").output)
    assert [e["label"] for e in facts["buckets"]["entries"]] == ["batch=6", "batch=4", "batch=2"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--dynamic", "batch=1-6"], "expected NAME=LOW..HIGH"),
        (["--dynamic", "width=1..6"], "dynamic dimension 'width' is not one dnnc knows"),
        (["--buckets", "1,2"], "--buckets needs --dynamic"),
        (["--dynamic", "batch=1..6", "--buckets", "1,9"], "bucket batch=9 is outside the range batch=1..6"),
    ],
)
def test_compile_range_errors(model_file: Path, tmp_path: Path, args: list[str], message: str) -> None:  # noqa: F811
    result = invoke("compile", f"{model_file}:tiny", "-o", str(tmp_path / "x.dnnc"), "--device", "cpu", *args)
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output


def test_explain_shows_each_buckets_recorded_decisions(bucketed: Path) -> None:
    result = invoke("explain", str(bucketed))
    assert result.exit_code == 0, result.output
    for label in ("bucket batch=6:", "bucket batch=4:", "bucket batch=2:"):
        assert label in result.output
    assert "no decisions recorded" in result.output  # a CPU compile makes none
