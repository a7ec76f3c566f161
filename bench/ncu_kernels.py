"""One call of a compiled workload for Nsight Compute to read the hardware counters of
every kernel it runs; and the CSV ncu writes, as a table per kernel.

Compiled first without ncu (its tuning times kernels, which ncu would slow), then run
under ncu (the device's Firecracker machines read counters; leave the clocks alone):

    python bench/ncu_kernels.py save --workload resnet50-b32 --artifact /tmp/r.dnnc
    ncu --clock-control none --profile-from-start off --target-processes application-only \\
        --section SpeedOfLight --section Occupancy --section LaunchStats --csv \\
        --log-file kernels.csv python bench/ncu_kernels.py run --workload resnet50-b32 --artifact /tmp/r.dnnc
    python bench/ncu_kernels.py table kernels.csv --out bench/results/ncu-....json

``run`` loads the artifact, calls it twice (the second call captures its CUDA graph) and
profiles the third call only (``cudaProfilerStart``/``Stop``): ncu replays each kernel
node of the graph alone, so the counters are each kernel's own, without the overlap PDL
gives in the replay. ``table`` keeps, per kernel, its duration,
the SM and memory throughput against their peaks, DRAM throughput, achieved occupancy
and registers, in the order the kernels ran.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

METRICS = {
    "Duration": "duration_us",
    "Compute (SM) Throughput": "sm_pct",
    "Memory Throughput": "memory_pct",
    "DRAM Throughput": "dram_pct",
    "L1/TEX Cache Throughput": "l1_pct",
    "L2 Cache Throughput": "l2_pct",
    "Achieved Occupancy": "occupancy_pct",
    "Registers Per Thread": "registers",
    "Waves Per SM": "waves",
    "SM Frequency": "sm_mhz",
    # the sections of ``--set full`` (``NCU_SET=full``), where ncu ran them
    "Warp Cycles Per Issued Instruction": "cycles_per_issue",
    "Issue Slots Busy": "issue_busy_pct",
    "L2 Hit Rate": "l2_hit_pct",
    "L1/TEX Hit Rate": "l1_hit_pct",
    "Mem Busy": "mem_busy_pct",
    "Max Bandwidth": "max_bandwidth_pct",
}
DURATION_UNITS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3, "s": 1e6, "second": 1e6}
"""Microseconds per unit ncu may write a duration in (2025.3 writes ``ns``)."""


def _workload(workload: str) -> tuple[Any, list[Any]]:
    from bench.gpu_timing import fp16_inputs
    from bench.suite.workloads import WORKLOADS

    model, inputs = WORKLOADS[workload].build()
    return model.eval().cuda().half(), fp16_inputs(inputs)


def save(workload: str, artifact: Path) -> None:
    """The workload compiled (an empty cache of its own) and saved as an artifact."""
    import dnnc
    from dnnc import knobs

    model, xs = _workload(workload)
    cache = tempfile.mkdtemp(prefix="dnnc-cache-")
    try:
        with knobs.override(cache_dir=Path(cache)):
            dnnc.compile(model, xs, device="cuda").save(artifact)
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def run(workload: str, artifact: Path) -> None:
    """The artifact loaded and called three times, the third inside the profiler's range."""
    import torch

    import dnnc

    _, xs = _workload(workload)
    loaded = dnnc.load(artifact)
    loaded(*xs)
    loaded(*xs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    loaded(*xs)
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()


def _number(text: str) -> float | None:
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return None


def table(csv_path: Path) -> list[dict[str, Any]]:
    """Per kernel (ncu's ID order), the metrics of ``METRICS`` that its CSV holds;
    durations in microseconds whatever unit ncu chose."""
    lines = csv_path.read_text().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    kernels: dict[int, dict[str, Any]] = {}
    for row in csv.DictReader(lines[start:]):
        name = METRICS.get(row.get("Metric Name", ""))
        try:
            ident = int(row["ID"])
        except (KeyError, ValueError):
            continue
        kernel = kernels.setdefault(
            ident, {"id": ident, "kernel": row.get("Kernel Name", "")[:120], "grid": row.get("Grid Size")}
        )
        if name is None or (name.endswith("_pct") and row.get("Metric Unit") not in ("%", None)):
            continue  # with the full set, "Memory Throughput" is also a rate in bytes/s
        value = _number(row.get("Metric Value", ""))
        if value is not None and name == "duration_us":
            unit = row.get("Metric Unit", "")
            value *= DURATION_UNITS.get(unit, 1.0)
        if value is not None and name == "sm_mhz":
            value /= 1e6 if row.get("Metric Unit", "") == "hz" else 1.0
        kernel[name] = value
    return [kernels[i] for i in sorted(kernels)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("save", "compile the workload and save it"), ("run", "load it and run one profiled call")):
        one = sub.add_parser(name, help=text)
        one.add_argument("--workload", default="resnet50-b32")
        one.add_argument("--artifact", type=Path, required=True)
    rows = sub.add_parser("table", help="ncu's CSV as a table per kernel")
    rows.add_argument("csv", type=Path)
    rows.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.command in ("save", "run"):
        (save if args.command == "save" else run)(args.workload, args.artifact)
        return
    found = table(args.csv)
    for k in found:
        print(
            f"{k.get('duration_us') or 0:8.1f} us  SM {k.get('sm_pct') or 0:5.1f}%  mem {k.get('memory_pct') or 0:5.1f}%  "
            f"DRAM {k.get('dram_pct') or 0:5.1f}%  occ {k.get('occupancy_pct') or 0:5.1f}%  {k['kernel'][:70]}"
        )
    if args.out is not None:
        args.out.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
