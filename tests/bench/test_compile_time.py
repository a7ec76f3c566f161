"""bench/compile_time.py on the CPU: a cold compile profiled, the warm ones (compiled
again, and found in the compile cache) in new processes over the cold one's cache, all
written to JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_cold_and_warm_compile_times_are_written(tmp_path: Path) -> None:
    command = [sys.executable, str(ROOT / "bench" / "compile_time.py"), "--workloads", "conv-block-b1"]
    done = subprocess.run(
        [*command, "--dtype", "float32", "--device", "cpu", "--profile", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "DNNC_COMPILE_CACHE": "1"},  # (the tests' default is off)
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (written,) = tmp_path.glob("compile-time-*-cpu.json")
    record = json.loads(written.read_text())
    (row,) = record["results"]
    assert row["model"] == "conv-block-b1" and row["cold_s"] > 0 and row["rewarm_s"] > 0 and row["warm_s"] > 0
    assert row["warm_s"] < row["rewarm_s"], "the warm compile found the whole compile cached and exported nothing"
    assert [s["name"] for s in row["stages"]][:3] == ["export", "imported", "canonical"]
    assert row["steps"] == {"reference": sum(row["steps"].values())} and not row["torch_ops"]
    assert any(f["function"].startswith("dnnc/api.py") and f["calls"] == 1 for f in row["profile"])
    assert row["load_only_s"] > 0 and any("dnnc/loading.py" in f["function"] for f in row["load_profile"])
    assert record["settings"]["device"] == "cpu" and "torch" in record["versions"]


def test_an_unknown_workload_is_named() -> None:
    command = [sys.executable, str(ROOT / "bench" / "compile_time.py"), "--workloads", "no-such-model", "--device", "cpu"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 2 and "unknown workloads no-such-model" in done.stderr and "Traceback" not in done.stderr
