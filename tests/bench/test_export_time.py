"""bench/export_time.py on the CPU: the export of a workload timed in a fresh process
(first and repeated, profiled on request) and written to JSON; an unknown workload is named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = str(ROOT / "bench" / "export_time.py")


def test_export_is_timed_in_a_fresh_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, SCRIPT, "--workloads", "conv-block-b1", "--profile", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (written,) = tmp_path.glob("export-time-*-cpu.json")
    (row,) = json.loads(written.read_text())["results"]
    assert row["status"] == "ok" and row["device"] == "cpu" and not row["workers"]
    assert row["export_s"] > 0 and row["again_s"] > 0 and row["nodes"] > 0 and row["decomposed"] is False
    top = row["top_own"]
    assert 0 < len(top) <= 25 and all(set(f) == {"function", "calls", "own_s", "cumulative_s"} for f in top)
    assert [f["own_s"] for f in top] == sorted((f["own_s"] for f in top), reverse=True)


def test_an_unknown_workload_is_named() -> None:
    done = subprocess.run([sys.executable, SCRIPT, "--workloads", "no-such-model"], capture_output=True, text=True)
    assert done.returncode == 2 and "unknown workload 'no-such-model'" in done.stderr and "Traceback" not in done.stderr
