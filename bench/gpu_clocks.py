"""The GPU's SM clock, power and clock-event reasons while something runs, sampled by
``nvidia-smi`` in a process beside this one.

Under sustained load an H200 holds its power limit by lowering the SM clock: ResNet-50 at
batch 128 ran 250 back-to-back calls (the suite's timing) at a mean 1798 MHz, with the
software power cap among the reasons, against 1980 MHz for a burst of 35 calls
(``bench/sustained_probe.py``, 2026-11-30). A time measured so is the GPU's time at the
clock its power allows; the suite records the clock beside each time.
"""

from __future__ import annotations

import csv
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FIELDS = "timestamp,clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"
SW_POWER_CAP = 0x4
"""The bit of ``clocks_event_reasons.active`` for the software power cap."""


class Sampler:
    """``nvidia-smi`` sampling this process's first visible GPU every ``period_ms`` into a
    CSV file, from construction to ``stop``; nothing where ``nvidia-smi`` is missing."""

    def __init__(self, period_ms: int = 20) -> None:
        self.started = time.time()
        self.path = Path(tempfile.mkstemp(suffix=".csv")[1])
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0] or "0"
        command = ["nvidia-smi", f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits", f"-lms={period_ms}", f"-i={visible}"]
        self.process = None
        if shutil.which("nvidia-smi"):
            with self.path.open("w") as sink:
                self.process = subprocess.Popen(command, stdout=sink, stderr=subprocess.DEVNULL)

    def stop(self) -> list[dict[str, Any]]:
        """The samples taken, oldest first (time in seconds since the epoch)."""
        if self.process is None:
            return []
        self.process.terminate()
        self.process.wait()
        rows = [row for row in (_row(r) for r in csv.reader(self.path.open())) if row is not None]
        self.path.unlink(missing_ok=True)
        return rows


def _row(fields: list[str]) -> dict[str, Any] | None:
    try:
        stamp, _, fraction = fields[0].strip().partition(".")
        seconds = time.mktime(time.strptime(stamp, "%Y/%m/%d %H:%M:%S")) + float(f"0.{fraction or 0}")
        return {
            "t": seconds,
            "sm_mhz": float(fields[1]),
            "power_w": float(fields[2]),
            "temp_c": float(fields[3]),
            "reasons": fields[4].strip(),
        }
    except (ValueError, IndexError):
        return None


def summary(samples: list[dict[str, Any]], start: float | None = None, end: float | None = None) -> dict[str, Any]:
    """Clock and power over the samples between ``start`` and ``end`` (all where not given)."""
    inside = [s for s in samples if (start is None or s["t"] >= start) and (end is None or s["t"] <= end)]
    if not inside:
        return {"samples": 0}
    clocks = [s["sm_mhz"] for s in inside]
    power = [s["power_w"] for s in inside]
    reasons = sorted({s["reasons"] for s in inside})
    return {
        "samples": len(inside),
        "sm_mhz_mean": round(statistics.mean(clocks), 1),
        "sm_mhz_min": min(clocks),
        "power_w_mean": round(statistics.mean(power), 1),
        "power_w_max": max(power),
        "temp_c_max": max(s["temp_c"] for s in inside),
        "power_capped": any(int(r, 16) & SW_POWER_CAP for r in reasons if r.startswith("0x")),
        "reasons": reasons,
    }
