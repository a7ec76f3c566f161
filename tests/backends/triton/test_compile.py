"""Every kernel kind compiles to an sm_90 cubin on this machine (no GPU needed), with
Programmatic Dependent Launch too,
compiled kernels come back from the content-keyed cache while failures do not, kernels
compiled side by side in worker processes load from that cache, and
the layout changes around channels-last convolutions read and write coalesced."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dnnc.backends.triton.ops import KINDS

ROOT = Path(__file__).resolve().parents[3]


def test_every_kind_compiles_for_sm90(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["DNNC_CACHE_DIR"] = str(tmp_path)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "triton-own")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    run = subprocess.run(
        [sys.executable, "-m", "tests.backends.triton.compile_check", "90"], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-4000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    if "skip" in result:
        pytest.skip(result["skip"])
    assert set(result["kinds"]) == set(KINDS)
    assert all(magic == "7f454c46" for magic in result["kinds"].values()), "a cubin is an ELF file"
    assert result["pdl"] == dict.fromkeys(KINDS, True), (
        "launched with PDL, every kind waits in its PTX and says so to its launcher"
    )
    assert result["fp_fusion"] == dict.fromkeys(KINDS, True), "multiply-adds fuse whatever Triton's default"
    assert result["reloaded"], "every kernel loads from the cache without compiling"
    assert result["adopted"], "every kernel an artifact stores loads without compiling, cache or no cache"
    assert result["adopt_refused_other_key"], "a stored kernel under another content key is compiled again"
    assert result["object_files"] == [".cubin", ".json"], "an artifact stores the binary and Triton's launch metadata"
    assert result["failures"] == 2, "a failed compile is not cached"
    assert any((tmp_path / "triton").rglob("*")), "compiled kernels are stored under the dnnc cache"
    assert result["precompile_sources"] >= 2 and result["precompiled"] == result["precompile_sources"], result
    assert result["precompiled_load"], "kernels compiled by the worker processes load from the cache"
    # Layout changes around channels-last convolutions: one kernel each, with 16-byte
    # accesses on both sides (the input's contiguous axis differs from the output's in
    # the two transposes and the mean).
    kernels = result["channels_last"]
    assert [k["kind"] for k in kernels] == ["transpose", "pool", "reduce", "transpose"]
    for k in kernels:
        assert "ld.global.v4.b32" in k["loads"], k
        if k["kind"] != "reduce":  # the mean stores one value per row
            assert "st.global.v4.b32" in k["stores"], k
